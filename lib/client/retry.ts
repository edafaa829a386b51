/**
 * Retry policy with the SDK's names and defaults (@azure/core-amqp RetryOptions, RetryMode),
 * and `delay`. A backoff (`delay`) holds a Node process like any timer, as the SDK's does: a
 * call still waiting to be retried is the program's own work, and letting Node exit under it
 * would end the program mid-await. Only watchdogs (`unrefTimeout`: a request's timeout, whose
 * fetch holds the process anyway) are unref'd.
 */
import { AbortError } from './errors.js';

export enum RetryMode {
  Exponential = 0,
  Fixed = 1,
}

export interface RetryOptions {
  maxRetries?: number;
  retryDelayInMs?: number;
  timeoutInMs?: number;
  mode?: RetryMode;
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

/** Same signature as the SDK's `delay`: resolves after `delayInMs` (with `value`), rejects on abort. */
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

/** @azure/abort-controller's AbortSignalLike: what the SDK's options accept. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: (this: AbortSignalLike, ev: any) => any, options?: any): void; // eslint-disable-line @typescript-eslint/no-explicit-any
  removeEventListener(type: 'abort', listener: (this: AbortSignalLike, ev: any) => any, options?: any): void; // eslint-disable-line @typescript-eslint/no-explicit-any
}
