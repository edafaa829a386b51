/**
 * `receiver.subscribe(handlers, options)`: the SDK's streaming receive. Up to
 * maxConcurrentCalls handlers run at once; each message's lock is renewed while its handler
 * runs (maxAutoLockRenewalDurationInMs, default 5 minutes, 0 off, no ceiling); with
 * autoCompleteMessages a message is completed when its handler returns and abandoned when
 * it throws. Failures go to processError with the SDK's errorSource, never for an empty poll
 * or for closing; repeated receive failures back off. Waiting goes through a Waiter
 * (waiting.ts) so that the way a subscriber waits can change without touching this loop.
 * `close()` stops taking messages, abandons whatever the open poll brings, and waits for
 * running handlers.
 */
import type { OperationOptionsBase } from './admin-types.js';
import { AbortError, type ServiceBusError } from './errors.js';
import type { ServiceBusReceivedMessage } from './message.js';
import { backoffMs, resolveRetryOptions, unrefTimeout } from './retry.js';
import type { Receiver } from './receiver.js';
import { defaultWaiter, type Waiter } from './waiting.js';

export interface ProcessErrorArgs {
  error: Error | ServiceBusError;
  errorSource: 'abandon' | 'complete' | 'processMessageCallback' | 'receive' | 'renewLock';
  entityPath: string;
  fullyQualifiedNamespace: string;
  identifier: string;
}

export interface MessageHandlers {
  processMessage(message: ServiceBusReceivedMessage): Promise<void>;
  processError(args: ProcessErrorArgs): Promise<void>;
}

export interface SubscribeOptions extends OperationOptionsBase {
  autoCompleteMessages?: boolean;
  maxConcurrentCalls?: number;
  /** Sluice: overrides the receiver's maxAutoLockRenewalDurationInMs for this subscription. */
  maxAutoLockRenewalDurationInMs?: number;
  /** Sluice: how to wait for messages (default: waiting.ts defaultWaiter). */
  waiter?: Waiter;
}

/** Renews a message's lock shortly before it lapses until stopped or `maxMs` have passed. */
export function startLockRenewal(receiver: Receiver, message: ServiceBusReceivedMessage, maxMs: number, onError: (error: Error) => void): () => void {
  if (maxMs <= 0 || receiver.receiveMode !== 'peekLock' || !message.lockToken) return () => {};
  const stopAt = Date.now() + maxMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    const remaining = (message.lockedUntilUtc?.getTime() ?? Date.now()) - Date.now();
    // Renew with a margin of a third of what is left (at most 10 s): early enough for a
    // slow request, late enough not to renew a 5-second lock continuously.
    const wait = Math.max(0, remaining - Math.min(10_000, remaining / 3));
    if (Date.now() + wait > stopAt) return;
    timer = unrefTimeout(async () => {
      if (stopped) return;
      try {
        await receiver.renewMessageLock(message);
        schedule();
      } catch (error) {
        if (!stopped) onError(error as Error);
      }
    }, wait);
  };
  schedule();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

export function subscribe(receiver: Receiver, handlers: MessageHandlers, options: SubscribeOptions = {}): { close(): Promise<void> } {
  if (typeof handlers?.processMessage !== 'function' || typeof handlers?.processError !== 'function') {
    throw new TypeError('Invalid "MessageHandlers" provided: processMessage and processError must be functions');
  }
  const autoComplete = options.autoCompleteMessages ?? true;
  const maxConcurrent = Math.max(1, Math.floor(options.maxConcurrentCalls ?? 1));
  const renewalMs = options.maxAutoLockRenewalDurationInMs ?? receiver.maxAutoLockRenewalDurationInMs;
  const waiter = options.waiter ?? defaultWaiter(receiver.ctx.transport);
  const stop = new AbortController();
  // An open subscription is the program's own work, as the SDK's open AMQP link is: it keeps
  // a Node process running until close(), although the socket it waits on is unref'd.
  const keepAlive = setInterval(() => {}, 2 ** 30);
  stop.signal.addEventListener('abort', () => clearInterval(keepAlive));
  const backoff = resolveRetryOptions({ retryDelayInMs: 1000, maxRetryDelayInMs: 30_000 });
  const running = new Set<Promise<void>>();
  let slotFreed: (() => void) | undefined;

  const report = async (error: unknown, errorSource: ProcessErrorArgs['errorSource']) => {
    try {
      await handlers.processError({
        error: error as Error,
        errorSource,
        entityPath: receiver.entityPath,
        fullyQualifiedNamespace: receiver.ctx.fullyQualifiedNamespace,
        identifier: receiver.identifier,
      });
    } catch {
      // A failing processError must not stop the subscriber.
    }
  };

  const handle = async (message: ServiceBusReceivedMessage) => {
    const stopRenewal = receiver._renewWhileHandling(message, renewalMs, (error) => void report(error, 'renewLock'));
    try {
      await handlers.processMessage(message);
      stopRenewal();
      if (autoComplete && receiver.receiveMode === 'peekLock') {
        await receiver.completeMessage(message).catch((error: Error) => {
          if (!/already settled/.test(error.message)) return report(error, 'complete');
        });
      }
    } catch (error) {
      stopRenewal();
      await report(error, 'processMessageCallback');
      if (autoComplete && receiver.receiveMode === 'peekLock') {
        await receiver.abandonMessage(message).catch((e: Error) => {
          if (!/already settled/.test(e.message)) return report(e, 'abandon');
        });
      }
    }
  };

  const loop = (async () => {
    let failures = 0;
    while (!stop.signal.aborted) {
      // Poll when at least half the slots are free (or none are busy): one poll then brings
      // several messages instead of one per finished handler, at the same concurrency.
      if (running.size > 0 && maxConcurrent - running.size < Math.ceil(maxConcurrent / 2)) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
        continue;
      }
      let messages: ServiceBusReceivedMessage[];
      try {
        // Not aborted by close(): the poll comes back by itself within pollWaitMs, and the
        // receiver abandons what it brings once the subscriber is closing.
        messages = await receiver._poll(maxConcurrent - running.size, waiter.pollWaitMs, options.abortSignal);
        failures = 0;
      } catch (error) {
        if (stop.signal.aborted || error instanceof AbortError) break;
        failures++;
        await report(error, 'receive');
        if (receiver._endsSubscription(error)) break;
        await sleep(backoffMs(backoff, Math.min(failures, 6)), stop.signal);
        continue;
      }
      if (stop.signal.aborted) {
        // Closing while the poll was open: give the messages back at once.
        await Promise.allSettled(messages.map((m) => (receiver.receiveMode === 'peekLock' ? receiver.abandonMessage(m) : Promise.resolve())));
        break;
      }
      if (messages.length === 0) {
        await waiter.idle(receiver.path, stop.signal);
        continue;
      }
      for (const message of messages) {
        const task: Promise<void> = handle(message).finally(() => {
          running.delete(task);
          slotFreed?.();
          slotFreed = undefined;
        });
        running.add(task);
      }
    }
  })();

  options.abortSignal?.addEventListener('abort', () => stop.abort());

  return {
    async close() {
      stop.abort();
      slotFreed?.();
      await loop;
      while (running.size) await Promise.allSettled([...running]);
      waiter.close();
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = unrefTimeout(() => resolve(), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
