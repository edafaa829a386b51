/**
 * ServiceBusReceiver over the receive paths of docs/http-api.md: receive (long poll), peek, settle,
 * renew, deferred. A message can be settled only by a receiver in peekLock mode, once, and
 * only if it was received (not peeked), with the SDK's error messages.
 */
import type { OperationOptionsBase } from './admin-types.js';
import { newIdentifier, throwIfConnectionClosed, type ClientContext } from './context.js';
import { AbortError, errorFromResponse } from './errors.js';
import {
  encodeProperties,
  fromWire,
  Long,
  sequenceText,
  storedBodyKind,
  TYPES_PROPERTY,
  type PropertyValue,
  type ServiceBusReceivedMessage,
} from './message.js';
import type { AbortSignalLike } from './retry.js';
import { startLockRenewal, subscribe, type MessageHandlers, type SubscribeOptions, type SubscriptionSource } from './subscribe.js';

/** Options of `createReceiver`. */
export interface ServiceBusReceiverOptions {
  /**
   * How received messages are settled: `peekLock` (the default) locks each message for the
   * entity's `lockDuration` until the receiver completes, abandons, defers or dead-letters it (an
   * unsettled message comes back when its lock expires, and goes to the dead-letter subqueue after
   * `maxDeliveryCount` deliveries); `receiveAndDelete` deletes each message as it is received.
   */
  receiveMode?: 'peekLock' | 'receiveAndDelete';
  /**
   * Represents the sub queue that is applicable for any queue or subscription.
   * Valid values are "deadLetter" and "transferDeadLetter". To learn more about dead letter queues,
   * see https://docs.microsoft.com/azure/service-bus-messaging/service-bus-dead-letter-queues
   */
  subQueueType?: 'deadLetter' | 'transferDeadLetter';
  /**
   * The maximum duration, in milliseconds, that the lock on the message will be renewed automatically by the client.
   * This auto renewal stops once the message is settled.
   *
   * - **Default**: `300 * 1000` milliseconds (5 minutes).
   * - **To disable autolock renewal**, set this to `0`.
   *
   * **Example:**
   *
   *    If the message lock expires in 2 minutes and your message processing time is 8 minutes...
   *
   *    Set maxAutoLockRenewalDurationInMs to 10 minutes, and the message lock will be automatically renewed for 4 times
   *    (equivalent to having the message locked for 4 times its lock duration by leveraging the lock renewals).
   */
  maxAutoLockRenewalDurationInMs?: number;
  /**
   * Option to disable the client from running JSON.parse() on the message body when receiving the message.
   * Not applicable if the message was sent with AMQP body type value or sequence. Use this option when you
   * prefer to work directly with the bytes present in the message body than have the client attempt to parse it.
   */
  skipParsingBodyAsJson?: boolean;
  /**
   * Whether to skip converting Date type on properties of message annotations
   * or application properties into numbers when receiving the message. By
   * default, properties of Date type is converted into UNIX epoch number for
   * compatibility.
   */
  skipConvertingDate?: boolean;
  /**
   * Sets the name to identify the receiver. This can be used to correlate logs and exceptions.
   * If not specified or empty, a random unique one will be used.
   */
  identifier?: string;
}

/**
 * Options when receiving a batch of messages from Service Bus.
 */
export interface ReceiveMessagesOptions extends OperationOptionsBase {
  /** How long to wait for the first message, in ms. Default: 60,000. */
  maxWaitTimeInMs?: number;
}

/**
 * Describes the options passed to the `peekMessages` method on a receiver.
 */
export interface PeekMessagesOptions extends OperationOptionsBase {
  /**
   * The sequence number to start peeking messages from (inclusive).
   */
  fromSequenceNumber?: Long;
}

/**
 * Options when getting an iterable iterator from Service Bus.
 */
export interface GetMessageIteratorOptions extends OperationOptionsBase {}

/**
 * Describes the reason and error description for dead lettering a message using the `deadLetter()`
 * method on the message received from Service Bus.
 */
export interface DeadLetterOptions {
  /**
   * The reason for deadlettering the message.
   */
  deadLetterReason: string;
  /**
   * The error description for deadlettering the message.
   */
  deadLetterErrorDescription: string;
}

/** Options of `deleteMessages`: how many messages at most, and how old. */
export interface DeleteMessagesOptions extends OperationOptionsBase {
  /** How many messages to delete at most in this call. */
  maxMessageCount: number;
  /** Only messages enqueued before this time; all of them when not given. */
  beforeEnqueueTime?: Date;
}

/** Options of `purgeMessages`: which messages, by age. */
export interface PurgeMessagesOptions extends OperationOptionsBase {
  /** Only messages enqueued before this time; all of them when not given. */
  beforeEnqueueTime?: Date;
}

type Properties = { [key: string]: number | boolean | string | Date | null };

/**
 * Receives, peeks and settles the messages of one queue or subscription (or of its dead-letter
 * subqueue), as @azure/service-bus's `ServiceBusReceiver`. Create it with
 * `ServiceBusClient.createReceiver`.
 *
 * Where Sluice differs: each receive is an HTTPS request, and the broker waits at most 20 s in one
 * (a longer `maxWaitTimeInMs` is several requests); `subscribe` waits between empty receives on
 * availability hints over a WebSocket rather than holding a request open (`SubscribeOptions.waiter`).
 */
export interface ServiceBusReceiver {
  /**
   * A name used to identify the receiver. This can be used to correlate logs and exceptions.
   * If not specified or empty, a random unique one will be generated.
   */
  identifier: string;
  /**
   * Streams messages to `handlers.processMessage`, up to `maxConcurrentCalls` at a time, until the
   * returned subscription is closed. In `peekLock` mode each message is completed when its handler
   * returns and abandoned when it throws (unless `autoCompleteMessages` is false), and its lock is
   * renewed while the handler runs. Errors (receiving, settling, renewing, or thrown by the handler) go
   * to `handlers.processError`; receiving goes on after them. Sluice waits between empty receives on
   * availability hints (see `SubscribeOptions.waiter`), so a subscriber waiting on an empty queue costs
   * almost nothing.
   *
   * @param handlers - `processMessage` for each message, `processError` for each error.
   * @param options - Settlement, concurrency, lock renewal, how to wait, and an abort signal.
   * @returns The subscription: `close()` stops receiving, lets running handlers finish and abandons
   * what was received but not yet handed out.
   * @throws Error when the receiver or its client is closed.
   */
  subscribe(handlers: MessageHandlers, options?: SubscribeOptions): { close(): Promise<void> };
  /**
   * Returns an async iterator over the entity's messages: `for await (const message of
   * receiver.getMessageIterator())` receives one message at a time, waiting as long as it takes. In
   * `peekLock` mode settle each message in the loop.
   *
   * @param options - An abort signal, which ends the iteration.
   * @returns An iterator that never ends by itself.
   * @throws Error when the receiver or its client is closed.
   * @throws `ServiceBusError` with code `MessagingEntityNotFound`, `MessagingEntityDisabled`,
   * `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`, `ServiceTimeout`,
   * `ServiceCommunicationProblem` after the client's retries.
   */
  getMessageIterator(options?: GetMessageIteratorOptions): AsyncIterableIterator<ServiceBusReceivedMessage>;
  /**
   * Receives up to `maxMessageCount` messages, waiting up to `maxWaitTimeInMs` for the first one; once
   * one has arrived it returns what is available at once. In `peekLock` mode the messages are locked to
   * this receiver until settled or until their lock expires.
   *
   * @param maxMessageCount - The most messages to return (a positive whole number; the broker hands out
   * up to 100 per request).
   * @param options - `maxWaitTimeInMs` (60,000 by default; at most 20,000 per request to the broker,
   * so a longer wait is several requests) and an abort signal.
   * @returns The messages, or an empty array when none arrived in time.
   * @throws TypeError when `maxMessageCount` is not a positive whole number.
   * @throws Error when the receiver or its client is closed.
   * @throws `ServiceBusError` with code `MessagingEntityNotFound`, `MessagingEntityDisabled`,
   * `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`, `ServiceTimeout`,
   * `ServiceCommunicationProblem` after the client's retries.
   */
  receiveMessages(maxMessageCount: number, options?: ReceiveMessagesOptions): Promise<ServiceBusReceivedMessage[]>;
  /**
   * Receives deferred messages by their sequence numbers (from `deferMessage`'s message). In
   * `peekLock` mode they are locked as any received message.
   *
   * @param sequenceNumbers - One sequence number or several, as `Long`.
   * @param options - Options bag to pass an abort signal.
   * @returns The deferred messages.
   * @throws `ServiceBusError` with code `MessageNotFound` when a number matches no deferred message of
   * the entity, as in Service Bus.
   * @throws Error when the receiver or its client is closed.
   * @throws `ServiceBusError` with code `MessagingEntityNotFound`, `MessagingEntityDisabled`,
   * `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`, `ServiceTimeout`,
   * `ServiceCommunicationProblem` after the client's retries.
   */
  receiveDeferredMessages(sequenceNumbers: Long | Long[], options?: OperationOptionsBase): Promise<ServiceBusReceivedMessage[]>;
  /**
   * Peek the next batch of active messages (including deferred but not deadlettered messages) on the
   * queue or subscription without modifying them.
   * - The first call to `peekMessages()` fetches the first active message. Each subsequent call fetches the
   * subsequent message.
   * - Unlike a "received" message, "peeked" message is a read-only version of the message.
   * It cannot be `Completed/Abandoned/Deferred/Deadlettered`.
   * @param maxMessageCount - The maximum number of messages to peek.
   * @param options - Options that allow to specify the maximum number of messages to peek,
   * the sequenceNumber to start peeking from or an abortSignal to abort the operation.
   * @returns The messages in sequence-number order (fewer than asked for, or none, at the end of the entity).
   */
  peekMessages(maxMessageCount: number, options?: PeekMessagesOptions): Promise<ServiceBusReceivedMessage[]>;
  /** The queue or subscription this receiver reads (`topic/Subscriptions/sub`, with `/$DeadLetterQueue` for the dead-letter subqueue). */
  entityPath: string;
  /** The receive mode the receiver was created with. */
  receiveMode: 'peekLock' | 'receiveAndDelete';
  /** Whether the receiver, or the client that created it, has been closed. */
  isClosed: boolean;
  /**
   * Closes the receiver: its subscriptions stop, a receive still waiting returns, and what arrives
   * after that is abandoned rather than left locked. Later calls on it throw.
   */
  close(): Promise<void>;
  /**
   * Completes the message: the broker deletes it, and no receiver gets it again. Completions a
   * receiver issues at the same time (handlers running side by side) travel in one request.
   *
   * @param message - A message this receiver received in `peekLock` mode (from `receiveMessages`,
   * `subscribe` or `getMessageIterator`).
   * @throws `ServiceBusError` with code `MessageLockLost` when the message's lock expired (or was taken
   * by another receive after it expired) before the broker got the request, or `SessionLockLost` when the
   * session's lock expired, for a message of a session.
   * @throws Error when the receiver is closed, receives in `receiveAndDelete` mode, or the message was
   * peeked (it has no lock) or already settled through this client.
   * @throws `ServiceBusError` with code `ServiceBusy`, `ServiceTimeout` or `ServiceCommunicationProblem`
   * (`retryable: true`) when the broker stayed busy or unreachable through the client's retries
   * (`retryOptions`): the message may or may not have been settled.
   */
  completeMessage(message: ServiceBusReceivedMessage): Promise<void>;
  /**
   * Abandons the message: the broker releases its lock, so the message can be received again at once
   * (its `deliveryCount` has counted this delivery; past the entity's `maxDeliveryCount` the broker
   * moves it to the dead-letter subqueue).
   *
   * @param message - A message this receiver received in `peekLock` mode (from `receiveMessages`,
   * `subscribe` or `getMessageIterator`).
   * @param propertiesToModify - Application properties to set on the message as it is released.
   * @throws `ServiceBusError` with code `MessageLockLost` when the message's lock expired (or was taken
   * by another receive after it expired) before the broker got the request, or `SessionLockLost` when the
   * session's lock expired, for a message of a session.
   * @throws Error when the receiver is closed, receives in `receiveAndDelete` mode, or the message was
   * peeked (it has no lock) or already settled through this client.
   * @throws `ServiceBusError` with code `ServiceBusy`, `ServiceTimeout` or `ServiceCommunicationProblem`
   * (`retryable: true`) when the broker stayed busy or unreachable through the client's retries
   * (`retryOptions`): the message may or may not have been settled.
   */
  abandonMessage(message: ServiceBusReceivedMessage, propertiesToModify?: Properties): Promise<void>;
  /**
   * Defers the message: it stays in the entity but is delivered only when asked for by its
   * `sequenceNumber` (`receiveDeferredMessages`); keep that number.
   *
   * @param message - A message this receiver received in `peekLock` mode (from `receiveMessages`,
   * `subscribe` or `getMessageIterator`).
   * @param propertiesToModify - Application properties to set on the message as it is deferred.
   * @throws `ServiceBusError` with code `MessageLockLost` when the message's lock expired (or was taken
   * by another receive after it expired) before the broker got the request, or `SessionLockLost` when the
   * session's lock expired, for a message of a session.
   * @throws Error when the receiver is closed, receives in `receiveAndDelete` mode, or the message was
   * peeked (it has no lock) or already settled through this client.
   * @throws `ServiceBusError` with code `ServiceBusy`, `ServiceTimeout` or `ServiceCommunicationProblem`
   * (`retryable: true`) when the broker stayed busy or unreachable through the client's retries
   * (`retryOptions`): the message may or may not have been settled.
   */
  deferMessage(message: ServiceBusReceivedMessage, propertiesToModify?: Properties): Promise<void>;
  /**
   * Moves the message to the entity's dead-letter subqueue, with a reason and a description that
   * the operator sees there (`createReceiver(name, { subQueueType: 'deadLetter' })` reads it).
   *
   * @param message - A message this receiver received in `peekLock` mode (from `receiveMessages`,
   * `subscribe` or `getMessageIterator`).
   * @param options - `deadLetterReason` and `deadLetterErrorDescription`, and application properties to
   * set on the message as it moves.
   * @throws `ServiceBusError` with code `MessageLockLost` when the message's lock expired (or was taken
   * by another receive after it expired) before the broker got the request, or `SessionLockLost` when the
   * session's lock expired, for a message of a session.
   * @throws Error when the receiver is closed, receives in `receiveAndDelete` mode, or the message was
   * peeked (it has no lock) or already settled through this client.
   * @throws `ServiceBusError` with code `ServiceBusy`, `ServiceTimeout` or `ServiceCommunicationProblem`
   * (`retryable: true`) when the broker stayed busy or unreachable through the client's retries
   * (`retryOptions`): the message may or may not have been settled.
   */
  deadLetterMessage(message: ServiceBusReceivedMessage, options?: DeadLetterOptions & Properties): Promise<void>;
  /**
   * Renews the lock on the message for the entity's `lockDuration` from now, so a long handler
   * keeps it; `subscribe` does this by itself up to `maxAutoLockRenewalDurationInMs`.
   *
   * @param message - A message this receiver received in `peekLock` mode (from `receiveMessages`,
   * `subscribe` or `getMessageIterator`).
   * @returns When the renewed lock expires (also set on the message as `lockedUntilUtc`).
   * @throws `ServiceBusError` with code `MessageLockLost` when the message's lock expired (or was taken
   * by another receive after it expired) before the broker got the request, or `SessionLockLost` when the
   * session's lock expired, for a message of a session.
   * @throws Error when the receiver is closed, receives in `receiveAndDelete` mode, or the message was
   * peeked (it has no lock) or already settled through this client.
   * @throws `ServiceBusError` with code `ServiceBusy`, `ServiceTimeout` or `ServiceCommunicationProblem`
   * (`retryable: true`) when the broker stayed busy or unreachable through the client's retries
   * (`retryOptions`): the message may or may not have been settled.
   */
  renewMessageLock(message: ServiceBusReceivedMessage): Promise<Date>;
  /**
   * Deletes up to `maxMessageCount` messages without receiving them, as Service Bus's batch delete.
   * A locked message stays with the receiver that holds it.
   *
   * @param options - `maxMessageCount` (1 to 4,000; above, the broker refuses it with `GeneralError`),
   * `beforeEnqueueTime` (only messages enqueued before it) and an abort signal.
   * @returns How many messages were deleted.
   * @throws TypeError when `maxMessageCount` is not a positive whole number.
   * @throws Error when the receiver is closed, and on a session receiver (use a receiver on the entity).
   * @throws `ServiceBusError` as any call: `UnauthorizedAccess` without Listen rights,
   * `MessagingEntityNotFound`, `ServiceBusy` after the client's retries.
   */
  deleteMessages(options: DeleteMessagesOptions): Promise<number>;
  /**
   * Deletes every message that no receiver holds (optionally only those enqueued before
   * `beforeEnqueueTime`), in rounds of `deleteMessages`, until none is left.
   *
   * @param options - `beforeEnqueueTime` and an abort signal.
   * @returns How many messages were deleted.
   * @throws Error when the receiver is closed, and on a session receiver (use a receiver on the entity).
   * @throws `ServiceBusError` as `deleteMessages` does.
   */
  purgeMessages(options?: PurgeMessagesOptions): Promise<number>;
}

const InvalidOperationInReceiveAndDeleteMode = "The operation is not supported in 'receiveAndDelete' receive mode.";
const InvalidOperationForPeekedMessage =
  "This operation is not supported for peeked messages. Only messages received using 'receiveMessages()', 'subscribe()' and 'getMessageIterator()' methods on the receiver in 'peekLock' receive mode can be settled.";
const MessageAlreadySettled = 'The message has either been deleted or already settled';

/** Messages settled through any receiver: settling one again fails as in the SDK. */
const settled = new WeakSet<object>();

/** Broker limits (docs/http-api.md): a receive waits at most 20 s and returns at most 100; a peek returns at most 100. */
const MAX_POLL_WAIT_MS = 20_000;
const MAX_PER_CALL = 100;
const DEFAULT_MAX_WAIT_MS = 60_000;

/**
 * The HTTP path of a queue or subscription (`/queues/q`), the audience its tokens are for
 * (`queues/q`) and the name the SDK shows for it (`t/Subscriptions/s`).
 */
export function receivePaths(entity: { queue: string } | { topic: string; subscription: string }): { path: string; audience: string; display: string } {
  const seg = (s: string) => encodeURIComponent(s);
  const audience = 'queue' in entity ? `queues/${seg(entity.queue)}` : `topics/${seg(entity.topic)}/subscriptions/${seg(entity.subscription)}`;
  const display = 'queue' in entity ? entity.queue : `${entity.topic}/Subscriptions/${entity.subscription}`;
  return { path: `/${audience}`, audience, display };
}

export class Receiver implements ServiceBusReceiver {
  readonly identifier: string;
  readonly entityPath: string;
  readonly receiveMode: 'peekLock' | 'receiveAndDelete';
  /** `/queues/q` or `/topics/t/subscriptions/s`, plus the subqueue. */
  readonly path: string;
  /** The entity the token is for. */
  readonly audience: string;
  readonly maxAutoLockRenewalDurationInMs: number;
  private closed = false;
  private lastPeeked: Long | undefined;
  /** Open polls: close() waits for them so that what they bring is abandoned, not left locked. */
  private readonly openPolls = new Set<Promise<unknown>>();
  private readonly subscriptions = new Set<{ close(): Promise<void> }>();
  /** Completions issued together (concurrent handlers) go in one request (R9): fewer calls, same result per message. */
  private readonly completions = new CompletionBatcher(this);

  constructor(
    readonly ctx: ClientContext,
    entity: { queue: string } | { topic: string; subscription: string },
    options: ServiceBusReceiverOptions = {},
  ) {
    const { path, audience, display } = receivePaths(entity);
    const sub =
      options.subQueueType === 'deadLetter' ? '$deadletterqueue' : options.subQueueType === 'transferDeadLetter' ? '$transferdeadletterqueue' : undefined;
    this.audience = audience;
    this.path = `${path}${sub ? `/${sub}` : ''}`;
    this.entityPath = sub ? `${display}/${sub === '$deadletterqueue' ? '$DeadLetterQueue' : '$Transfer/$DeadLetterQueue'}` : display;
    this.receiveMode = options.receiveMode ?? 'peekLock';
    if (this.receiveMode !== 'peekLock' && this.receiveMode !== 'receiveAndDelete') {
      throw new TypeError("Invalid receiveMode provided: must be 'peekLock' or 'receiveAndDelete'");
    }
    this.identifier = options.identifier ?? newIdentifier(display);
    const renewal = options.maxAutoLockRenewalDurationInMs ?? 300_000;
    if (typeof renewal !== 'number' || Number.isNaN(renewal) || renewal < 0)
      throw new TypeError('maxAutoLockRenewalDurationInMs must be a non-negative number');
    this.maxAutoLockRenewalDurationInMs = renewal;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  throwIfClosed(): void {
    throwIfConnectionClosed(this.ctx);
    if (this.closed) {
      throw new Error(
        `The receiver for "${this.entityPath}" has been closed and can no longer be used. Please create a new receiver using the "createReceiver" method on the ServiceBusClient.`,
      );
    }
  }

  /**
   * Where receives (and receives of deferred messages) go and what else their body carries:
   * the entity's own routes here; a session receiver's go to its session (SessionReceiver).
   */
  protected receiveRoute(action: 'receive' | 'deferred'): { path: string; body: Record<string, unknown> } {
    return { path: `${this.path}/messages/${action}`, body: {} };
  }

  /** Which peeked messages a peek hands out: all of them here, a session's own in a session receiver. */
  protected readonly peekFilter: ((message: ServiceBusReceivedMessage) => boolean) | undefined = undefined;

  /**
   * Keeps `message`'s lock while a subscribe handler runs, up to `maxMs`; returns the stop.
   * A session receiver renews the session lock instead, which covers its messages.
   */
  protected keepLockWhileHandling(message: ServiceBusReceivedMessage, maxMs: number, onError: (error: Error) => void): () => void {
    return startLockRenewal(this, message, maxMs, onError, this.ctx.clock);
  }

  /** Whether a failed receive ends a subscription (no retry can succeed): never here; a lost session lock for a session receiver. */
  protected endsSubscription(_error: unknown): boolean {
    return false;
  }

  /**
   * One receive call. When the receiver was closed while the poll was open, what it brought
   * is abandoned at once and nothing is returned.
   */
  protected async poll(maxMessages: number, waitMs: number, abortSignal?: AbortSignalLike): Promise<ServiceBusReceivedMessage[]> {
    const route = this.receiveRoute('receive');
    const request = this.ctx.transport.request<{ messages: Record<string, unknown>[] }>({
      method: 'POST',
      path: route.path,
      body: {
        ...route.body,
        mode: this.receiveMode,
        maxMessages: Math.min(MAX_PER_CALL, Math.max(1, maxMessages)),
        maxWaitTime: `PT${Math.min(MAX_POLL_WAIT_MS, Math.max(0, Math.round(waitMs))) / 1000}S`,
      },
      audience: this.audience,
      idempotent: false,
      waitMs,
      abortSignal,
    });
    this.openPolls.add(request);
    let messages: ServiceBusReceivedMessage[];
    try {
      messages = (await request).body.messages.map(fromWire);
    } finally {
      this.openPolls.delete(request);
    }
    if (this.closed && this.receiveMode === 'peekLock' && messages.length) {
      await Promise.allSettled(messages.map((m) => this.settle(m, 'abandon', {})));
      return [];
    }
    return messages;
  }

  async receiveMessages(maxMessageCount: number, options?: ReceiveMessagesOptions): Promise<ServiceBusReceivedMessage[]> {
    this.throwIfClosed();
    if (!Number.isInteger(maxMessageCount) || maxMessageCount < 1) throw new TypeError('maxMessageCount must be a positive whole number');
    const maxWait = options?.maxWaitTimeInMs ?? DEFAULT_MAX_WAIT_MS;
    const deadline = Date.now() + maxWait;
    const out: ServiceBusReceivedMessage[] = [];
    for (;;) {
      if (options?.abortSignal?.aborted) throw new AbortError();
      const remaining = Math.max(0, deadline - Date.now());
      const got = await this.poll(maxMessageCount - out.length, out.length ? 0 : remaining, options?.abortSignal);
      out.push(...got);
      // Once something arrived, take what is ready without waiting again.
      if (out.length >= maxMessageCount || (out.length && got.length === 0) || (out.length && got.length < MAX_PER_CALL)) return out;
      if (!out.length && (Date.now() >= deadline || this.closed)) return out;
    }
  }

  async *getMessageIterator(options?: GetMessageIteratorOptions): AsyncIterableIterator<ServiceBusReceivedMessage> {
    while (!this.closed) {
      if (options?.abortSignal?.aborted) throw new AbortError();
      const [message] = await this.poll(1, MAX_POLL_WAIT_MS, options?.abortSignal);
      if (message) yield message;
    }
  }

  subscribe(handlers: MessageHandlers, options?: SubscribeOptions): { close(): Promise<void> } {
    this.throwIfClosed();
    const subscription = subscribe(this.subscriptionSource(), handlers, options);
    this.subscriptions.add(subscription);
    return {
      close: async () => {
        this.subscriptions.delete(subscription);
        await subscription.close();
      },
    };
  }

  /** What `subscribe` reads of this receiver: its public settlement and the three calls above. */
  private subscriptionSource(): SubscriptionSource {
    return {
      entityPath: this.entityPath,
      fullyQualifiedNamespace: this.ctx.fullyQualifiedNamespace,
      identifier: this.identifier,
      receiveMode: this.receiveMode,
      path: this.path,
      transport: this.ctx.transport,
      maxAutoLockRenewalDurationInMs: this.maxAutoLockRenewalDurationInMs,
      completeMessage: (message) => this.completeMessage(message),
      abandonMessage: (message) => this.abandonMessage(message),
      poll: (maxMessages, waitMs, abortSignal) => this.poll(maxMessages, waitMs, abortSignal),
      keepLockWhileHandling: (message, maxMs, onError) => this.keepLockWhileHandling(message, maxMs, onError),
      endsSubscription: (error) => this.endsSubscription(error),
    };
  }

  async receiveDeferredMessages(sequenceNumbers: Long | Long[], options?: OperationOptionsBase): Promise<ServiceBusReceivedMessage[]> {
    this.throwIfClosed();
    const list = (Array.isArray(sequenceNumbers) ? sequenceNumbers : [sequenceNumbers]).map(sequenceText);
    const out: ServiceBusReceivedMessage[] = [];
    const route = this.receiveRoute('deferred');
    let pending = list;
    while (pending.length > 0) {
      const asked = pending.slice(0, MAX_PER_CALL);
      const res = await this.ctx.transport.request<{ messages: Record<string, unknown>[] }>({
        method: 'POST',
        path: route.path,
        body: { ...route.body, sequenceNumbers: asked },
        audience: this.audience,
        idempotent: false,
        abortSignal: options?.abortSignal,
      });
      const got = res.body.messages.map(fromWire);
      out.push(...got);
      // R10: an answer carries what fits, so the rest of what was asked is asked again; an
      // answer with none of them says the rest is locked by another receiver.
      const answered = new Set(got.map((m) => String(m.sequenceNumber)));
      const rest = got.length > 0 ? asked.filter((n) => !answered.has(n)) : [];
      pending = [...rest, ...pending.slice(asked.length)];
    }
    if (this.receiveMode === 'receiveAndDelete') await Promise.all(out.map((m) => this.settle(m, 'complete', {})));
    return out;
  }

  async peekMessages(maxMessageCount: number, options?: PeekMessagesOptions): Promise<ServiceBusReceivedMessage[]> {
    this.throwIfClosed();
    if (!Number.isInteger(maxMessageCount) || maxMessageCount < 1) return [];
    let from = options?.fromSequenceNumber !== undefined ? Long.fromValue(options.fromSequenceNumber) : this.lastPeeked ? this.lastPeeked.add(1) : Long.ZERO;
    const out: ServiceBusReceivedMessage[] = [];
    while (out.length < maxMessageCount) {
      const want = this.peekFilter ? MAX_PER_CALL : Math.min(MAX_PER_CALL, maxMessageCount - out.length);
      const res = await this.ctx.transport.request<{ messages: Record<string, unknown>[] }>({
        method: 'GET',
        path: `${this.path}/messages`,
        query: { fromSequenceNumber: from.toString(), maxMessages: want },
        audience: this.audience,
        idempotent: true,
        abortSignal: options?.abortSignal,
      });
      const page = res.body.messages.map(fromWire);
      let last = page.at(-1)?.sequenceNumber;
      for (const message of page) {
        if (this.peekFilter && !this.peekFilter(message)) continue;
        out.push(message);
        // What was not handed out is peeked again next time.
        if (out.length === maxMessageCount) {
          last = message.sequenceNumber;
          break;
        }
      }
      if (last) {
        this.lastPeeked = last;
        from = last.add(1);
      }
      // R10: a page may be short because the answer was full; only an empty one says the entity has no more.
      if (page.length === 0) break;
    }
    return out;
  }

  private checkSettleable(message: ServiceBusReceivedMessage): void {
    this.throwIfClosed();
    if (this.receiveMode === 'receiveAndDelete') throw new Error(InvalidOperationInReceiveAndDeleteMode);
    if (!message?.lockToken) throw new Error(InvalidOperationForPeekedMessage);
    if (settled.has(message)) throw new Error(MessageAlreadySettled);
  }

  /** Settles without the closed check (close() abandons what an open poll brought). */
  private async settle(
    message: ServiceBusReceivedMessage,
    action: 'complete' | 'abandon' | 'deadletter' | 'defer',
    body: Record<string, unknown>,
  ): Promise<void> {
    await this.ctx.transport.request({
      method: 'POST',
      path: `${this.path}/messages/${sequenceText(message.sequenceNumber!)}/${action}`,
      body: { lockToken: message.lockToken, ...body },
      audience: this.audience,
      idempotent: false,
    });
    settled.add(message);
  }

  async completeMessage(message: ServiceBusReceivedMessage): Promise<void> {
    this.checkSettleable(message);
    await this.completions.add(message);
    settled.add(message);
  }

  async abandonMessage(message: ServiceBusReceivedMessage, propertiesToModify?: Properties): Promise<void> {
    this.checkSettleable(message);
    await this.settle(message, 'abandon', modified(message, propertiesToModify));
  }

  async deferMessage(message: ServiceBusReceivedMessage, propertiesToModify?: Properties): Promise<void> {
    this.checkSettleable(message);
    await this.settle(message, 'defer', modified(message, propertiesToModify));
  }

  async deadLetterMessage(message: ServiceBusReceivedMessage, options?: DeadLetterOptions & Properties): Promise<void> {
    this.checkSettleable(message);
    const { deadLetterReason, deadLetterErrorDescription, ...rest } = (options ?? {}) as Partial<DeadLetterOptions> & Properties;
    const body: Record<string, unknown> = modified(message, Object.keys(rest).length ? rest : undefined);
    if (deadLetterReason !== undefined) body.deadLetterReason = String(deadLetterReason);
    if (deadLetterErrorDescription !== undefined) body.deadLetterErrorDescription = String(deadLetterErrorDescription);
    await this.settle(message, 'deadletter', body);
  }

  async renewMessageLock(message: ServiceBusReceivedMessage): Promise<Date> {
    this.throwIfClosed();
    if (this.receiveMode === 'receiveAndDelete') throw new Error(InvalidOperationInReceiveAndDeleteMode);
    if (!message?.lockToken) throw new Error(InvalidOperationForPeekedMessage);
    const res = await this.ctx.transport.request<{ lockedUntil: string }>({
      method: 'POST',
      path: `${this.path}/messages/${sequenceText(message.sequenceNumber!)}/renew-lock`,
      body: { lockToken: message.lockToken },
      audience: this.audience,
      idempotent: true,
    });
    const until = new Date(res.body.lockedUntil);
    message.lockedUntilUtc = until;
    return until;
  }

  async deleteMessages(options: DeleteMessagesOptions): Promise<number> {
    this.throwIfClosed();
    if (!options || !Number.isInteger(options.maxMessageCount) || options.maxMessageCount < 1)
      throw new TypeError('maxMessageCount must be a positive whole number');
    return this.deleteUpTo(options.maxMessageCount, options.beforeEnqueueTime, options.abortSignal);
  }

  async purgeMessages(options?: PurgeMessagesOptions): Promise<number> {
    this.throwIfClosed();
    // Without a time the broker's own clock decides what "now" is.
    const before = options?.beforeEnqueueTime;
    let total = 0;
    for (;;) {
      const n = await this.deleteUpTo(4000, before, options?.abortSignal);
      total += n;
      if (n < 4000) return total;
    }
  }

  private async deleteUpTo(maxMessageCount: number, before: Date | undefined, abortSignal?: AbortSignalLike): Promise<number> {
    const res = await this.ctx.transport.request<{ deleted: number }>({
      method: 'POST',
      path: `${this.path}/messages/delete`,
      body: { maxMessageCount, ...(before ? { beforeEnqueueTime: before.toISOString() } : {}) },
      audience: this.audience,
      idempotent: false,
      abortSignal,
    });
    return res.body.deleted;
  }

  async close(): Promise<void> {
    // Subscriptions first: their running handlers may still settle what they hold.
    await Promise.allSettled([...this.subscriptions].map((s) => s.close()));
    this.closed = true;
    await Promise.allSettled([...this.openPolls]);
  }
}

/** propertiesToModify on the wire, keeping the `$sluice-types` list of Date properties right. */
function modified(message: ServiceBusReceivedMessage, props: Properties | undefined): Record<string, unknown> {
  if (!props || Object.keys(props).length === 0) return {};
  const { properties, dates } = encodeProperties(props as { [key: string]: PropertyValue });
  const raw = message._rawAmqpMessage as { bodyType?: string } | undefined;
  const existing = Object.entries(message.applicationProperties ?? {})
    .filter(([k, v]) => v instanceof Date && !(k in props))
    .map(([k]) => k);
  const allDates = [...existing, ...dates];
  const bodyType = storedBodyKind(message) ?? (raw?.bodyType === 'data' ? 'bytes' : message.body instanceof Date ? 'date' : undefined);
  if (allDates.length || bodyType)
    properties[TYPES_PROPERTY] = JSON.stringify({ ...(bodyType ? { body: bodyType } : {}), ...(allDates.length ? { dates: allDates } : {}) });
  return { propertiesToModify: properties };
}

/**
 * Gathers the completions issued in the same turn of the event loop into one
 * `POST {R}/messages/complete` (up to 100 lock tokens, a result per token), so that eight
 * handlers finishing together cost one request instead of eight.
 */
class CompletionBatcher {
  private pending: { message: ServiceBusReceivedMessage; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private scheduled = false;

  constructor(private readonly receiver: Receiver) {}

  add(message: ServiceBusReceivedMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ message, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setTimeout(() => void this.flush(), 0);
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const all = this.pending;
    this.pending = [];
    for (let i = 0; i < all.length; i += MAX_PER_CALL) {
      const group = all.slice(i, i + MAX_PER_CALL);
      try {
        const res = await this.receiver.ctx.transport.request<{ results: { lockToken: string; ok?: boolean; error?: unknown }[] }>({
          method: 'POST',
          path: `${this.receiver.path}/messages/complete`,
          body: { lockTokens: group.map((p) => p.message.lockToken) },
          audience: this.receiver.audience,
          idempotent: false,
        });
        group.forEach((p, index) => {
          const result = res.body.results[index];
          if (result && !result.error) p.resolve();
          else p.reject(errorFromResponse(410, { error: result?.error }));
        });
      } catch (error) {
        for (const p of group) p.reject(error);
      }
    }
  }
}
