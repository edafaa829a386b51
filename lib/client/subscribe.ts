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
import type { ClientClock } from './clock.js';
import { AbortError, type ServiceBusError } from './errors.js';
import type { ServiceBusReceivedMessage } from './message.js';
import { backoffMs, resolveRetryOptions, unrefTimeout, type AbortSignalLike } from './retry.js';
import type { HttpTransport } from './transport.js';
import { defaultWaiter, type Waiter } from './waiting.js';

/**
 * Arguments to the `processError` callback.
 */
export interface ProcessErrorArgs {
  /**
   * The error.
   */
  error: Error | ServiceBusError;
  /**
   * The operation where the error originated.
   *
   * 'abandon': Errors that occur when if `abandon` is triggered automatically.
   * 'complete': Errors that occur when autoComplete completes a message.
   * 'processMessageCallback': Errors thrown from the user's `processMessage` callback passed to `subscribe`.
   * 'receive': Errors thrown when receiving messages.
   * 'renewLock': Errors thrown when automatic lock renewal fails.
   */
  errorSource: 'abandon' | 'complete' | 'processMessageCallback' | 'receive' | 'renewLock';
  /**
   * The entity path for the current receiver.
   */
  entityPath: string;
  /**
   * The fully qualified namespace for the Service Bus.
   */
  fullyQualifiedNamespace: string;
  /**
   * The identifier of the client that raised this event.
   */
  identifier: string;
}

/**
 * The general message handler interface (used for streamMessages).
 */
export interface MessageHandlers {
  /**
   * Handler that processes messages from service bus.
   *
   * @param message - A message received from Service Bus.
   */
  processMessage(message: ServiceBusReceivedMessage): Promise<void>;
  /**
   * Handler that processes errors that occur during receiving.
   *
   * This handler will be called for any error that occurs in the receiver when
   *   - receiving the message, or
   *   - executing your `processMessage` callback, or
   *   - receiver is completing the message on your behalf after successfully running your `processMessage` callback and `autoCompleteMessages` is enabled
   *   - receiver is abandoning the message on your behalf if running your `processMessage` callback fails and `autoCompleteMessages` is enabled
   *   - receiver is renewing the lock on your behalf due to auto lock renewal feature being enabled
   *
   * Note that when receiving messages in a stream using `subscribe()`, the receiver will automatically retry receiving messages on all errors unless
   * `close()` is called on the subscription. It is completely up to users to decide what errors are considered non-recoverable and to handle them
   * accordingly in this callback.
   * For a list of errors occurs within Service Bus, please refer to https://docs.microsoft.com/javascript/api/\@azure/service-bus/servicebuserror?view=azure-node-latest
   * @param args - The error and additional context to indicate where
   * the error originated.
   */
  processError(args: ProcessErrorArgs): Promise<void>;
}

/**
 * Options used when subscribing to a Service Bus queue or subscription.
 */
export interface SubscribeOptions extends OperationOptionsBase {
  /**
   * Indicates whether the message should be settled automatically based on the result from the
   * user provided `processMessage` callback.
   *
   * - If an error is thrown from the `processMessage` callback the message will be abandoned
   *   using `receiver.abandonMessage()`. Doing so will make the message available again from the
   *   queue/subscription and the delivery count will be incremented.
   * - If NO error is thrown from `processMessage` the message will be completed
   *   using `receiver.completeMessage()`. Doing so removes the message from the queue/subscription.
   *
   * This option is ignored if messages are received in the `receiveAndDelete` receive mode or if
   * the message is already settled in the user provided message callback.
   *
   * - **Default**: `true`.
   */
  autoCompleteMessages?: boolean;
  /**
   * The maximum number of concurrent calls that the library
   * can make to the user's message handler. Once this limit has been reached, more messages will
   * not be received until atleast one of the calls to the user's message handler has completed.
   * - **Default**: `1`.
   */
  maxConcurrentCalls?: number;
  /**
   * Sluice's own: how long, in ms, each message's lock is renewed while its handler runs, for this
   * subscription (the receiver's `maxAutoLockRenewalDurationInMs` when not given; 0 turns renewal off).
   */
  maxAutoLockRenewalDurationInMs?: number;
  /**
   * Sluice's own: how the subscription waits after an empty receive. By default it waits on
   * availability hints over a WebSocket, with a poll every five minutes in case a hint was lost
   * (`hintsWaiter`), so a waiting subscriber runs no broker function; `longPollWaiter()` long-polls the
   * broker instead, as @azure/service-bus's open AMQP link would wait.
   */
  waiter?: Waiter;
}

/**
 * What `subscribe` needs of a receiver, and no more, as the SDK's `getMessageIterator` takes a
 * `Pick<ServiceBusReceiver, "receiveMessages">`: the public settlement calls, where the
 * receiver is, one receive call, and the two answers a session receiver gives its own way
 * (its session lock covers a handler's message; a lost session lock ends the subscription).
 * A receiver hands `subscribe` this view of itself, so its own internals stay its own.
 */
export interface SubscriptionSource {
  readonly entityPath: string;
  readonly fullyQualifiedNamespace: string;
  readonly identifier: string;
  readonly receiveMode: 'peekLock' | 'receiveAndDelete';
  /** The HTTP path of the entity (and subqueue) received from: what the waiter waits on. */
  readonly path: string;
  /** The connection's transport, for the default waiter's availability hints. */
  readonly transport: HttpTransport;
  readonly maxAutoLockRenewalDurationInMs: number;
  completeMessage(message: ServiceBusReceivedMessage): Promise<void>;
  abandonMessage(message: ServiceBusReceivedMessage): Promise<void>;
  /** One receive call; empty once the receiver has closed (it abandons what the call brought). */
  poll(maxMessages: number, waitMs: number, abortSignal?: AbortSignalLike): Promise<ServiceBusReceivedMessage[]>;
  /** Keeps `message` locked while its handler runs, up to `maxMs`; returns the stop. */
  keepLockWhileHandling(message: ServiceBusReceivedMessage, maxMs: number, onError: (error: Error) => void): () => void;
  /** Whether a failed receive ends the subscription (no retry can succeed). */
  endsSubscription(error: unknown): boolean;
}

/** What renewing one message's lock reads of a receiver. */
export interface LockRenewer {
  readonly receiveMode: 'peekLock' | 'receiveAndDelete';
  renewMessageLock(message: ServiceBusReceivedMessage): Promise<Date>;
}

/**
 * Renews a message's lock shortly before it lapses until stopped or `maxMs` have passed, on
 * `clock` (the lock's end is the broker's time: ServiceBusClientOptions.clock).
 */
export function startLockRenewal(
  receiver: LockRenewer,
  message: ServiceBusReceivedMessage,
  maxMs: number,
  onError: (error: Error) => void,
  clock: ClientClock,
): () => void {
  if (maxMs <= 0 || receiver.receiveMode !== 'peekLock' || !message.lockToken) return () => {};
  const stopAt = clock.now() + maxMs;
  let cancel: (() => void) | undefined;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    const remaining = (message.lockedUntilUtc?.getTime() ?? clock.now()) - clock.now();
    // Renew with a margin of a third of what is left (at most 10 s): early enough for a
    // slow request, late enough not to renew a 5-second lock continuously.
    const wait = Math.max(0, remaining - Math.min(10_000, remaining / 3));
    if (clock.now() + wait > stopAt) return;
    cancel = clock.after(wait, async () => {
      if (stopped) return;
      try {
        await receiver.renewMessageLock(message);
        schedule();
      } catch (error) {
        if (!stopped) onError(error as Error);
      }
    });
  };
  schedule();
  return () => {
    stopped = true;
    cancel?.();
  };
}

export function subscribe(receiver: SubscriptionSource, handlers: MessageHandlers, options: SubscribeOptions = {}): { close(): Promise<void> } {
  if (typeof handlers?.processMessage !== 'function' || typeof handlers?.processError !== 'function') {
    throw new TypeError('Invalid "MessageHandlers" provided: processMessage and processError must be functions');
  }
  const autoComplete = options.autoCompleteMessages ?? true;
  const maxConcurrent = Math.max(1, Math.floor(options.maxConcurrentCalls ?? 1));
  const renewalMs = options.maxAutoLockRenewalDurationInMs ?? receiver.maxAutoLockRenewalDurationInMs;
  const waiter = options.waiter ?? defaultWaiter(receiver.transport);
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
        fullyQualifiedNamespace: receiver.fullyQualifiedNamespace,
        identifier: receiver.identifier,
      });
    } catch {
      // A failing processError must not stop the subscriber.
    }
  };

  const handle = async (message: ServiceBusReceivedMessage) => {
    const stopRenewal = receiver.keepLockWhileHandling(message, renewalMs, (error) => void report(error, 'renewLock'));
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
        messages = await receiver.poll(maxConcurrent - running.size, waiter.pollWaitMs, options.abortSignal);
        failures = 0;
      } catch (error) {
        if (stop.signal.aborted || error instanceof AbortError) break;
        failures++;
        await report(error, 'receive');
        if (receiver.endsSubscription(error)) break;
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
