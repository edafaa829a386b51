/**
 * Retry policy with the SDK's names and defaults (@azure/core-amqp RetryOptions, RetryMode),
 * and `delay`. A backoff (`delay`) holds a Node process like any timer, as the SDK's does: a
 * call still waiting to be retried is the program's own work, and letting Node exit under it
 * would end the program mid-await. Only watchdogs (`unrefTimeout`: a request's timeout, whose
 * fetch holds the process anyway) are unref'd.
 */
import { AbortError } from './errors.js';

/** How the wait between retries grows (@azure/core-amqp's `RetryMode`). */
export enum RetryMode {
  /** Each retry waits twice as long as the one before (from `retryDelayInMs`, up to `maxRetryDelayInMs`), with jitter. */
  Exponential = 0,
  /** Each retry waits `retryDelayInMs`. */
  Fixed = 1,
}

/**
 * How a client retries a call that failed with a retryable error (`ServiceBusy` after a 429 or 503,
 * `ServiceTimeout`, `ServiceCommunicationProblem`): the names of @azure/core-amqp's `RetryOptions`.
 * A call is retried only when repeating it cannot apply it twice; the error of a call that may have
 * been applied says so in `info.mayHaveBeenApplied`.
 */
export interface RetryOptions {
  /** How many times a failed call is retried. Default: 3. */
  maxRetries?: number;
  /**
   * The wait before a retry, in ms; with `Exponential`, the first wait, doubled for each further
   * retry. Default: 1,000 (the SDK's is 30,000: an HTTP call is retried sooner than an AMQP link).
   * A `Retry-After` from the broker is honoured when it is longer.
   */
  retryDelayInMs?: number;
  /**
   * How long one attempt may take before it counts as timed out (and is retried), in ms. A receive's
   * own wait (`maxWaitTimeInMs`) comes on top. Default: 60,000.
   */
  timeoutInMs?: number;
  /** Whether the wait between retries grows (`Exponential`, the default) or stays the same (`Fixed`). */
  mode?: RetryMode;
  /** The longest wait between retries, in ms, with `Exponential`. Default: 90,000. */
  maxRetryDelayInMs?: number;
}

export type ResolvedRetryOptions = Required<RetryOptions>;

export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  return {
    maxRetries: options.maxRetries ?? 3,
    retryDelayInMs: options.retryDelayInMs ?? 1000,
    timeoutInMs: options.timeoutInMs ?? 60_000,
    mode: options.mode ?? RetryMode.Exponential,
    maxRetryDelayInMs: options.maxRetryDelayInMs ?? 90_000,
  };
}

/** `setTimeout` that never holds a Node process open. */
export function unrefTimeout(fn: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(fn, ms);
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/**
 * The wait before retry number `attempt` (1-based): exponential doubles from
 * retryDelayInMs, with ±20% jitter so that many clients throttled together do not come
 * back together; never more than maxRetryDelayInMs.
 */
export function backoffMs(options: ResolvedRetryOptions, attempt: number, random = Math.random): number {
  const base = options.mode === RetryMode.Fixed ? options.retryDelayInMs : options.retryDelayInMs * 2 ** (attempt - 1);
  const jittered = base * (0.8 + 0.4 * random());
  return Math.max(0, Math.min(options.maxRetryDelayInMs, Math.round(jittered)));
}

/**
 * Resolves after `delayInMs` milliseconds (with `value`), as @azure/core-amqp's `delay`; rejects with
 * an `AbortError` if `abortSignal` aborts first. The timer holds a Node process open, as the SDK's does.
 *
 * @param delayInMs - How long to wait, in milliseconds.
 * @param abortSignal - Stops the wait early, rejecting.
 * @param abortErrorMsg - The message of the `AbortError` an abort rejects with.
 * @param value - What the promise resolves with.
 * @returns A promise of `value` once the time has passed.
 * @throws `AbortError` (rejects) when `abortSignal` aborts before the time is up.
 */
export function delay<T>(delayInMs: number, abortSignal?: AbortSignalLike, abortErrorMsg?: string, value?: T): Promise<T | void> {
  return new Promise<T | void>((resolve, reject) => {
    if (abortSignal?.aborted) {
      reject(new AbortError(abortErrorMsg));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortError(abortErrorMsg));
    };
    const timer = setTimeout(() => {
      abortSignal?.removeEventListener('abort', onAbort);
      resolve(value);
    }, delayInMs);
    abortSignal?.addEventListener('abort', onAbort);
  });
}

/**
 * The `AbortSignalLike` of @azure/abort-controller, which the SDK's options accept: a standard `AbortSignal`
 * (`AbortController().signal`, `AbortSignal.timeout(ms)`) fits it.
 */
export interface AbortSignalLike {
  /**
   * Indicates if the signal has already been aborted.
   */
  readonly aborted: boolean;
  /**
   * Adds a listener for the "abort" event (the only event).
   *
   * @param type - Always `"abort"`.
   * @param listener - Called once when the signal aborts.
   * @param options - As `EventTarget.addEventListener`'s options.
   */
  addEventListener(type: 'abort', listener: (this: AbortSignalLike, ev: any) => any, options?: any): void; // eslint-disable-line @typescript-eslint/no-explicit-any
  /**
   * Removes a listener added with `addEventListener`.
   *
   * @param type - Always `"abort"`.
   * @param listener - The listener to remove.
   * @param options - As `EventTarget.removeEventListener`'s options.
   */
  removeEventListener(type: 'abort', listener: (this: AbortSignalLike, ev: any) => any, options?: any): void; // eslint-disable-line @typescript-eslint/no-explicit-any
}
