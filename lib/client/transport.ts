/**
 * Every request the client makes: sign (one cached SAS token per audience), send with a
 * per-attempt timeout, map B1 error bodies to ServiceBusError, retry with backoff. Only
 * `fetch`, Web Crypto and timers: it runs in Node 20+ and in browsers. `fetch` keeps
 * connections alive on its own (undici's pool in Node, the browser's in a page).
 *
 * Retrying is safe only when a repeat cannot do harm. A request is either idempotent (reads,
 * PUT of properties, lock renewal: repeat freely) or not (send, receive, settle, create,
 * delete). A non-idempotent request is retried only after failures that prove it was not
 * applied: the broker's own B1 answer that it was throttled (`Throttled`, retryable, 429/503),
 * or a connection that was refused. Anything else may come after the broker applied it: a
 * timeout, a reset connection, a 503 or 504 without the broker's body (API Gateway answers so
 * when an integration runs past its timeout, even after the function stored the message). It
 * is retried only when the request says a repeat is harmless (`repeatable`: a send of messages
 * with a messageId into an entity that detects duplicates); otherwise it is reported
 * (`ServiceBusy` / `ServiceTimeout` / `ServiceCommunicationProblem`, with
 * `info.mayHaveBeenApplied`) and the program decides; docs/migrating-from-azure-service-bus.md
 * explains the send case.
 */
import { baseUrlOf } from './connection-string.js';
import type { AzureNamedKeyCredential, AzureSASCredential } from './credentials.js';
import { AbortError, ServiceBusError, errorFromResponse } from './errors.js';
import { backoffMs, delay, resolveRetryOptions, unrefTimeout, type AbortSignalLike, type ResolvedRetryOptions, type RetryOptions } from './retry.js';
import { SasTokenProvider, type TokenProviderOptions } from './sas.js';

export interface TransportOptions {
  retryOptions?: RetryOptions;
  /** Another fetch (tests, proxies, a browser polyfill). Default: the global one. */
  fetch?: typeof fetch;
  token?: TokenProviderOptions;
}

export interface HttpRequest {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  /** Path under the namespace, segments already encoded: `/queues/orders/messages`. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** The entity path the token is for (`queues/orders`), or '' for the namespace. */
  audience: string;
  idempotent: boolean;
  abortSignal?: AbortSignalLike | undefined;
  /** Added to the attempt timeout: a long poll may legitimately take this long. */
  waitMs?: number;
  /** Statuses answered as a value rather than thrown (e.g. 404 for `exists`). */
  accept?: readonly number[];
  /**
   * For a non-idempotent request: whether repeating it after a failure that may have been
   * applied does no harm (asked only then). Without it, such a failure is reported.
   */
  repeatable?: () => Promise<boolean>;
}

export interface HttpResponse<T> {
  status: number;
  body: T;
}

const RETRY_AFTER_CAP_MS = 60_000;

export class HttpTransport {
  readonly baseUrl: string;
  readonly retry: ResolvedRetryOptions;
  private readonly tokens: SasTokenProvider;
  private readonly fetchFn: typeof fetch;

  constructor(endpoint: string, credential: AzureNamedKeyCredential | AzureSASCredential, options: TransportOptions = {}) {
    this.baseUrl = baseUrlOf(endpoint);
    this.retry = resolveRetryOptions(options.retryOptions);
    this.tokens = new SasTokenProvider(credential, options.token);
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** A token for `audience` (an entity's URI), from the same per-audience cache the requests use. */
  tokenFor(audience: string): Promise<string> {
    return this.tokens.getToken(audience);
  }

  /** The namespace host, as `fullyQualifiedNamespace` reports it. */
  get host(): string {
    return new URL(this.baseUrl).host;
  }

  async request<T = unknown>(req: HttpRequest): Promise<HttpResponse<T>> {
    for (let attempt = 0; ; attempt++) {
      if (req.abortSignal?.aborted) throw new AbortError();
      let error: ServiceBusError;
      let retrySafe: boolean;
      try {
        return await this.attempt<T>(req);
      } catch (caught) {
        if (!(caught instanceof AttemptFailure)) throw caught;
        error = caught.error;
        retrySafe = caught.notApplied || req.idempotent;
        if (!retrySafe && error.retryable && req.repeatable && attempt < this.retry.maxRetries) retrySafe = await req.repeatable().catch(() => false);
        if (!retrySafe && error.retryable) error.info = { ...error.info, mayHaveBeenApplied: true };
      }
      if (!error.retryable || !retrySafe || attempt >= this.retry.maxRetries) throw error;
      const wait = Math.max(backoffMs(this.retry, attempt + 1), Math.min(error.info?.retryAfterMs ?? 0, this.retry.maxRetryDelayInMs));
      await delay(wait, req.abortSignal);
    }
  }

  private async attempt<T>(req: HttpRequest): Promise<HttpResponse<T>> {
    const url = new URL(this.baseUrl + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const audience = `${this.baseUrl}/${req.audience}`;
    const token = await this.tokens.getToken(audience);

    const controller = new AbortController();
    let timedOut = false;
    const timer = unrefTimeout(
      () => {
        timedOut = true;
        controller.abort();
      },
      this.retry.timeoutInMs + (req.waitMs ?? 0),
    );
    const onAbort = () => controller.abort();
    req.abortSignal?.addEventListener('abort', onAbort);
    try {
      const headers: Record<string, string> = { authorization: token, accept: 'application/json' };
      if (req.body !== undefined) headers['content-type'] = 'application/json';
      let res: Response;
      try {
        res = await this.fetchFn(url, {
          method: req.method,
          headers,
          ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
          signal: controller.signal,
        });
      } catch (cause) {
        throw this.networkFailure(cause, timedOut, req);
      }
      let text: string;
      try {
        text = await res.text();
      } catch (cause) {
        throw this.networkFailure(cause, timedOut, req);
      }
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = { message: text.slice(0, 500) };
      }
      if (res.ok || req.accept?.includes(res.status)) return { status: res.status, body: body as T };
      const retryAfter = Number(res.headers.get('retry-after'));
      const retryAfterMs = Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, RETRY_AFTER_CAP_MS) : undefined;
      const error = errorFromResponse(res.status, body, retryAfterMs);
      throw new AttemptFailure(error, saysNotApplied(res.status, body));
    } finally {
      clearTimeout(timer);
      req.abortSignal?.removeEventListener('abort', onAbort);
    }
  }

  private networkFailure(cause: unknown, timedOut: boolean, req: HttpRequest): Error {
    if (req.abortSignal?.aborted && !timedOut) return new AbortError();
    if (timedOut) {
      const error = new ServiceBusError(`No answer within ${this.retry.timeoutInMs + (req.waitMs ?? 0)} ms (${req.method} ${req.path})`, 'ServiceTimeout');
      error.retryable = true;
      return new AttemptFailure(error, false);
    }
    const system = systemErrorOf(cause);
    // The SDK's words for a system error (core-amqp's translate, then ServiceBusError): its code,
    // then Node's message, e.g. `ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:4280`.
    const error = new ServiceBusError(
      system ? `${system.code}: ${system.message}` : `Could not reach ${this.baseUrl}: ${describe(cause)}`,
      'ServiceCommunicationProblem',
    );
    if (system) Object.assign(error, pick(system.error, ['address', 'errno', 'port', 'syscall']));
    error.retryable = true;
    const code = system?.code;
    // A refused connection never carried the request.
    return new AttemptFailure(error, code === 'ECONNREFUSED');
  }
}

/**
 * The system error under fetch's "fetch failed" (undici puts it in `cause`; for a host with
 * several addresses, an AggregateError whose `errors` say what happened to each).
 */
function systemErrorOf(failure: unknown): { code: string; message: string; error: object } | undefined {
  const cause = (failure as { cause?: unknown })?.cause ?? failure;
  const c = cause as { code?: unknown; message?: unknown; errors?: unknown } | null;
  if (typeof c !== 'object' || c === null || typeof c.code !== 'string' || !/^E[A-Z_]+$/.test(c.code)) return undefined;
  const parts = Array.isArray(c.errors) ? c.errors.map((e) => (e as Error)?.message).filter((m) => typeof m === 'string' && m) : [];
  const message = parts.length ? parts.join(', ') : typeof c.message === 'string' && c.message ? c.message : c.code;
  const first = Array.isArray(c.errors) && typeof c.errors[0] === 'object' && c.errors[0] !== null ? (c.errors[0] as object) : c;
  return { code: c.code, message, error: first };
}

/** "fetch failed" with its cause's message, when there is one (e.g. `bad port`). */
function describe(failure: unknown): string {
  const message = (failure as Error)?.message ?? String(failure);
  const cause = (failure as { cause?: { message?: unknown } })?.cause?.message;
  return typeof cause === 'string' && cause && cause !== message ? `${message} (${cause})` : message;
}

const pick = (from: object, keys: readonly string[]): Record<string, unknown> =>
  Object.fromEntries(keys.filter((k) => (from as Record<string, unknown>)[k] !== undefined).map((k) => [k, (from as Record<string, unknown>)[k]]));

/**
 * The broker's own word that it changed nothing: a B1 body saying it was throttled, retryable.
 * The same status from anything in front of it (API Gateway's 503 on an integration timeout,
 * a proxy) says nothing about whether the function ran.
 */
function saysNotApplied(status: number, body: unknown): boolean {
  if (status !== 429 && status !== 503) return false;
  const b1 = (body as { error?: { code?: unknown; retryable?: unknown } } | null | undefined)?.error;
  return (b1?.code === 'Throttled' || b1?.code === 'ServiceBusy') && b1.retryable === true;
}

/** One attempt's failure, with whether the request certainly was not applied. */
class AttemptFailure extends Error {
  constructor(
    readonly error: ServiceBusError,
    readonly notApplied: boolean,
  ) {
    super(error.message);
  }
}

/** A path segment, `$` kept literal as the API allows. */
export const segment = (name: string) => encodeURIComponent(name).replace(/%24/g, '$');
