/**
 * ServiceBusReceiver over the receive paths of API.md: receive (long poll), peek, settle,
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
import { startLockRenewal, subscribe, type MessageHandlers, type SubscribeOptions } from './subscribe.js';

export interface ServiceBusReceiverOptions {
  receiveMode?: 'peekLock' | 'receiveAndDelete';
  subQueueType?: 'deadLetter' | 'transferDeadLetter';
  maxAutoLockRenewalDurationInMs?: number;
  skipParsingBodyAsJson?: boolean;
  skipConvertingDate?: boolean;
  identifier?: string;
}

export interface ReceiveMessagesOptions extends OperationOptionsBase {
  maxWaitTimeInMs?: number;
}

export interface PeekMessagesOptions extends OperationOptionsBase {
  fromSequenceNumber?: Long;
}

export interface GetMessageIteratorOptions extends OperationOptionsBase {}

export interface DeadLetterOptions {
  deadLetterReason: string;
  deadLetterErrorDescription: string;
}

export interface DeleteMessagesOptions extends OperationOptionsBase {
  maxMessageCount: number;
  beforeEnqueueTime?: Date;
}

export interface PurgeMessagesOptions extends OperationOptionsBase {
  beforeEnqueueTime?: Date;
}

type Properties = { [key: string]: number | boolean | string | Date | null };

export interface ServiceBusReceiver {
  identifier: string;
  subscribe(handlers: MessageHandlers, options?: SubscribeOptions): { close(): Promise<void> };
  getMessageIterator(options?: GetMessageIteratorOptions): AsyncIterableIterator<ServiceBusReceivedMessage>;
  receiveMessages(maxMessageCount: number, options?: ReceiveMessagesOptions): Promise<ServiceBusReceivedMessage[]>;
  receiveDeferredMessages(sequenceNumbers: Long | Long[], options?: OperationOptionsBase): Promise<ServiceBusReceivedMessage[]>;
  peekMessages(maxMessageCount: number, options?: PeekMessagesOptions): Promise<ServiceBusReceivedMessage[]>;
  entityPath: string;
  receiveMode: 'peekLock' | 'receiveAndDelete';
  isClosed: boolean;
  close(): Promise<void>;
  completeMessage(message: ServiceBusReceivedMessage): Promise<void>;
  abandonMessage(message: ServiceBusReceivedMessage, propertiesToModify?: Properties): Promise<void>;
  deferMessage(message: ServiceBusReceivedMessage, propertiesToModify?: Properties): Promise<void>;
  deadLetterMessage(message: ServiceBusReceivedMessage, options?: DeadLetterOptions & Properties): Promise<void>;
  renewMessageLock(message: ServiceBusReceivedMessage): Promise<Date>;
  deleteMessages(options: DeleteMessagesOptions): Promise<number>;
  purgeMessages(options?: PurgeMessagesOptions): Promise<number>;
}

const InvalidOperationInReceiveAndDeleteMode = "The operation is not supported in 'receiveAndDelete' receive mode.";
const InvalidOperationForPeekedMessage =
  "This operation is not supported for peeked messages. Only messages received using 'receiveMessages()', 'subscribe()' and 'getMessageIterator()' methods on the receiver in 'peekLock' receive mode can be settled.";
const MessageAlreadySettled = 'The message has either been deleted or already settled';

/** Messages settled through any receiver: settling one again fails as in the SDK. */
const settled = new WeakSet<object>();

/** Broker limits (API.md): a receive waits at most 20 s and returns at most 100; a peek returns at most 100. */
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
  _renewWhileHandling(message: ServiceBusReceivedMessage, maxMs: number, onError: (error: Error) => void): () => void {
    return startLockRenewal(this, message, maxMs, onError);
  }

  /** Whether a failed receive ends a subscription (no retry can succeed): never here; a lost session lock for a session receiver. */
  _endsSubscription(_error: unknown): boolean {
    return false;
  }

  /**
   * One receive call. When the receiver was closed while the poll was open, what it brought
   * is abandoned at once and nothing is returned.
   */
  async _poll(maxMessages: number, waitMs: number, abortSignal?: AbortSignalLike): Promise<ServiceBusReceivedMessage[]> {
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
      const got = await this._poll(maxMessageCount - out.length, out.length ? 0 : remaining, options?.abortSignal);
      out.push(...got);
      // Once something arrived, take what is ready without waiting again.
      if (out.length >= maxMessageCount || (out.length && got.length === 0) || (out.length && got.length < MAX_PER_CALL)) return out;
      if (!out.length && (Date.now() >= deadline || this.closed)) return out;
    }
  }

  async *getMessageIterator(options?: GetMessageIteratorOptions): AsyncIterableIterator<ServiceBusReceivedMessage> {
    while (!this.closed) {
      if (options?.abortSignal?.aborted) throw new AbortError();
      const [message] = await this._poll(1, MAX_POLL_WAIT_MS, options?.abortSignal);
      if (message) yield message;
    }
  }

  subscribe(handlers: MessageHandlers, options?: SubscribeOptions): { close(): Promise<void> } {
    this.throwIfClosed();
    const subscription = subscribe(this, handlers, options);
    this.subscriptions.add(subscription);
    return {
      close: async () => {
        this.subscriptions.delete(subscription);
        await subscription.close();
      },
    };
  }

  async receiveDeferredMessages(sequenceNumbers: Long | Long[], options?: OperationOptionsBase): Promise<ServiceBusReceivedMessage[]> {
    this.throwIfClosed();
    const list = (Array.isArray(sequenceNumbers) ? sequenceNumbers : [sequenceNumbers]).map(sequenceText);
    const out: ServiceBusReceivedMessage[] = [];
    const route = this.receiveRoute('deferred');
    for (let i = 0; i < list.length; i += MAX_PER_CALL) {
      const res = await this.ctx.transport.request<{ messages: Record<string, unknown>[] }>({
        method: 'POST',
        path: route.path,
        body: { ...route.body, sequenceNumbers: list.slice(i, i + MAX_PER_CALL) },
        audience: this.audience,
        idempotent: false,
        abortSignal: options?.abortSignal,
      });
      out.push(...res.body.messages.map(fromWire));
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
      if (page.length < want) break;
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
