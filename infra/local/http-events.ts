/**
 * The local runtime's stand-in for API Gateway (HTTP API, payload format 2.0): pure
 * functions from a received HTTP request to the event Lambda would get, and from the
 * handler's result to the HTTP answer API Gateway would send. No I/O here, so the
 * translation is tested without a server.
 */
import { randomUUID } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { errorBody, jsonHeaders } from '../../functions/api/http.js';
import { INTEGRATION_TIMEOUT_MS, payloadBytesOver } from '../../lib/lambda-limits.js';

/** API Gateway's own limit on a request body (HTTP API: 10 MB): past it, nothing is invoked. */
export const maxRequestBodyBytes = 10 * 1024 * 1024;

/** What the server read off the wire, before any interpretation. */
export interface RawRequest {
  method: string;
  /** The request target as received (`req.url`): path and query, still percent-encoded. */
  url: string;
  /** `req.httpVersion`, e.g. `1.1`. */
  httpVersion: string;
  /** `req.rawHeaders`: name, value, name, value, ... in arrival order. */
  rawHeaders: string[];
  remoteAddress?: string | undefined;
  body: Buffer;
}

export interface EventOptions {
  requestId?: string;
  /** Epoch milliseconds of the request (real time: API Gateway knows nothing of the broker's clock). */
  now?: number;
  /** The server's own port, for `x-forwarded-port` when the Host header has none. */
  localPort?: number;
}

const textTypes = [/^text\//, /[/+]json\b/, /[/+]xml\b/, /^application\/(javascript|ecmascript|x-www-form-urlencoded|graphql|yaml|x-yaml|x-ndjson)\b/];

/** API Gateway passes text bodies as they are and base64-encodes everything else. */
export function isTextContentType(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType.trim() === '') return true;
  const type = contentType.toLowerCase().split(';', 1)[0]!.trim();
  return textTypes.some((pattern) => pattern.test(type));
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** Percent-decoding as API Gateway does for query parameters (`+` stays `+`); malformed escapes stay as sent. */
function percentDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function parseQueryString(rawQueryString: string): Record<string, string> | undefined {
  if (rawQueryString === '') return undefined;
  const params: Record<string, string> = {};
  for (const part of rawQueryString.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = percentDecode(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : percentDecode(part.slice(eq + 1));
    const previous = params[name];
    params[name] = previous === undefined ? value : `${previous},${value}`;
  }
  return Object.keys(params).length > 0 ? params : undefined;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** The last second formatted: every request of that second has the same `requestContext.time`. */
let lastTime: { second: number; text: string } | undefined;

/** `12/Mar/2020:19:03:58 +0000`, the format of `requestContext.time`. */
export function apiGatewayTime(epochMs: number): string {
  const second = Math.floor(epochMs / 1000);
  if (lastTime?.second === second) return lastTime.text;
  const d = new Date(epochMs);
  const text =
    `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
  lastTime = { second, text };
  return text;
}

/** Splits a request target into API Gateway's `rawPath` and `rawQueryString`. */
export function splitTarget(url: string): { rawPath: string; rawQueryString: string } {
  let target = url;
  // Absolute form (`GET http://host/path`), as a proxy would send it.
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (absolute) target = target.slice(absolute[0].length);
  const hash = target.indexOf('#');
  if (hash >= 0) target = target.slice(0, hash);
  const q = target.indexOf('?');
  const rawPath = (q < 0 ? target : target.slice(0, q)) || '/';
  const rawQueryString = q < 0 ? '' : target.slice(q + 1);
  return { rawPath, rawQueryString };
}

/** Header names lower-cased, repeated headers joined with `,`; `cookie` headers go to `cookies`. */
export function collectHeaders(rawHeaders: string[]): { headers: Record<string, string>; cookies: string[] } {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const value = rawHeaders[i + 1]!;
    if (name === 'cookie') {
      for (const cookie of value.split(';')) {
        const trimmed = cookie.trim();
        if (trimmed !== '') cookies.push(trimmed);
      }
      continue;
    }
    const previous = headers[name];
    headers[name] = previous === undefined ? value : `${previous},${value}`;
  }
  return { headers, cookies };
}

function normalizeIp(address: string | undefined): string {
  if (!address) return '127.0.0.1';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}

/** The API Gateway HTTP API (payload 2.0) event for one request, route `$default`. */
export function toApiGatewayEvent(request: RawRequest, options: EventOptions = {}): APIGatewayProxyEventV2 {
  const now = options.now ?? Date.now();
  const requestId = options.requestId ?? randomUUID();
  const { rawPath, rawQueryString } = splitTarget(request.url);
  const { headers, cookies } = collectHeaders(request.rawHeaders);
  const sourceIp = normalizeIp(request.remoteAddress);

  // What API Gateway adds on its way to the integration.
  const host = headers.host ?? `127.0.0.1${options.localPort ? `:${options.localPort}` : ''}`;
  headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${sourceIp}` : sourceIp;
  headers['x-forwarded-proto'] ??= 'http';
  const hostPort = /:(\d+)$/.exec(host)?.[1];
  headers['x-forwarded-port'] ??= hostPort ?? String(options.localPort ?? 80);

  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      // Host as the client addressed it, port included: locally the port is part of the
      // address a signed resource URI (SAS `sr`) names.
      domainName: host,
      domainPrefix: host.split('.', 1)[0]!.split(':', 1)[0]!,
      http: {
        method: request.method.toUpperCase(),
        path: rawPath,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: apiGatewayTime(now),
      timeEpoch: now,
    },
    isBase64Encoded: false,
  };
  if (cookies.length > 0) event.cookies = cookies;
  const query = parseQueryString(rawQueryString);
  if (query) event.queryStringParameters = query;
  if (request.body.length > 0) {
    const text = isTextContentType(headers['content-type']) ? decodeUtf8(request.body) : null;
    if (text !== null) {
      event.body = text;
    } else {
      event.body = request.body.toString('base64');
      event.isBase64Encoded = true;
    }
  }
  return event;
}

const unsupported = () => {
  throw new Error('callback-style Lambda context methods are not supported locally');
};

/** A minimal Lambda context; `getRemainingTimeInMillis` counts down from `timeoutMs`. */
export function lambdaContext(functionName: string, options: { requestId?: string; timeoutMs?: number } = {}): Context {
  const start = Date.now();
  const timeoutMs = options.timeoutMs ?? 29_000;
  const awsRequestId = options.requestId ?? randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${awsRequestId}`,
    getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - start)),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

export interface HttpAnswer {
  statusCode: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

/**
 * What API Gateway sends for a handler's result. A result without `statusCode` is
 * interpreted as API Gateway does for payload 2.0: 200 with the value as a JSON body.
 */
export function toHttpAnswer(result: unknown, requestId: string): HttpAnswer {
  const headers: OutgoingHttpHeaders = {};
  const structured =
    typeof result === 'object' && result !== null && 'statusCode' in result
      ? (result as APIGatewayProxyStructuredResultV2 & { multiValueHeaders?: Record<string, unknown[]> })
      : null;
  if (!structured) {
    headers['content-type'] = 'application/json';
    headers['apigw-requestid'] = requestId;
    const body = result === undefined ? '' : typeof result === 'string' ? result : JSON.stringify(result);
    return { statusCode: 200, headers, body: Buffer.from(body, 'utf8') };
  }

  for (const [name, value] of Object.entries(structured.headers ?? {})) {
    if (value === undefined || value === null) continue;
    headers[name.toLowerCase()] = String(value);
  }
  // Not part of payload 2.0, but some handlers (and middy middlewares) still set it.
  for (const [name, values] of Object.entries(structured.multiValueHeaders ?? {})) {
    if (!Array.isArray(values) || values.length === 0) continue;
    const key = name.toLowerCase();
    const existing = headers[key];
    const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
    headers[key] = [...list, ...values.map(String)];
  }
  if (structured.cookies && structured.cookies.length > 0) {
    const existing = headers['set-cookie'];
    const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
    headers['set-cookie'] = [...list, ...structured.cookies];
  }
  headers['apigw-requestid'] = requestId;
  const body =
    structured.body === undefined || structured.body === null
      ? Buffer.alloc(0)
      : structured.isBase64Encoded
        ? Buffer.from(structured.body, 'base64')
        : Buffer.from(structured.body, 'utf8');
  const statusCode = Number(structured.statusCode);
  return { statusCode: Number.isInteger(statusCode) && statusCode >= 100 && statusCode <= 599 ? statusCode : 500, headers, body };
}

/**
 * A payload 2.0 event for calling the API handler directly, with no HTTP in between (the bench
 * and the tests): the fields the handler reads, where toApiGatewayEvent copies a whole request.
 */
export function directApiEvent(
  method: string,
  path: string,
  options: { headers: Record<string, string>; body: string | undefined; userAgent: string },
): APIGatewayProxyEventV2 {
  const [rawPath, rawQueryString = ''] = path.split('?');
  const query = Object.fromEntries(new URLSearchParams(rawQueryString));
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: rawPath!,
    rawQueryString,
    headers: { 'content-type': 'application/json', ...options.headers },
    queryStringParameters: Object.keys(query).length ? query : undefined,
    requestContext: { requestId: randomUUID(), http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: options.userAgent } },
    body: options.body,
    isBase64Encoded: false,
  } as unknown as APIGatewayProxyEventV2;
}

/** An answer the local server sends itself: JSON text, with API Gateway's request id. */
const jsonTextAnswer = (statusCode: number, text: string, requestId: string): HttpAnswer => ({
  statusCode,
  headers: { ...jsonHeaders, 'apigw-requestid': requestId },
  body: Buffer.from(text, 'utf8'),
});

/** An answer in the error shape, as the local server sends it itself. */
export function errorAnswer(statusCode: number, code: string, message: string, requestId: string, retryable = false): HttpAnswer {
  return jsonTextAnswer(statusCode, errorBody(code, message, retryable, requestId), requestId);
}

/** A JSON answer from the local-only routes. */
export function jsonAnswer(statusCode: number, value: unknown, requestId: string): HttpAnswer {
  return jsonTextAnswer(statusCode, JSON.stringify(value), requestId);
}

/**
 * Lambda's limits as AWS applies them to an API request, for the local runtime and the tests'
 * in-process API client alike: an event (the request as JSON, its body escaped or
 * base64-encoded) past LAMBDA_PAYLOAD_BYTES is refused before the function runs, and API
 * Gateway answers 413 in its own words; a result past it is refused after the function ran,
 * and API Gateway answers 502.
 */
export function eventRefused(event: unknown, requestId: string): HttpAnswer | undefined {
  if (payloadBytesOver(event) === undefined) return undefined;
  return jsonTextAnswer(413, JSON.stringify({ message: 'Request Entity Too Large' }), requestId);
}

/**
 * API Gateway's integration timeout (INTEGRATION_TIMEOUT_MS), for the local runtime and the
 * tests' in-process API client alike: the handler's result when it comes in time, otherwise
 * API Gateway's own 503. The handler is not stopped (on AWS it runs on to its own timeout).
 */
export async function withinIntegrationTimeout<T>(
  run: Promise<T>,
  requestId: string,
  timeoutMs = INTEGRATION_TIMEOUT_MS,
): Promise<{ result: T } | { timedOut: HttpAnswer }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ timedOut: HttpAnswer }>((resolve) => {
    timer = setTimeout(() => resolve({ timedOut: jsonTextAnswer(503, JSON.stringify({ message: 'Service Unavailable' }), requestId) }), timeoutMs);
  });
  try {
    return await Promise.race([run.then((result) => ({ result })), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** See `eventRefused`: the answer when the handler's result is past Lambda's limit (`size` its bytes). */
export function resultRefused(result: unknown, requestId: string): (HttpAnswer & { size: number }) | undefined {
  const size = payloadBytesOver(result);
  if (size === undefined) return undefined;
  return { ...errorAnswer(502, 'InternalError', "the response exceeds Lambda's 6 MB payload limit", requestId), size };
}
