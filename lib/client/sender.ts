/** ServiceBusSender over `POST {send}/messages[/batch]` and `DELETE {send}/messages/scheduled/{n}`. */
import type { OperationOptionsBase } from './admin-types.js';
import { isMessageBatch, MAX_BATCH_COUNT, MAX_MESSAGE_SIZE_BYTES, MessageBatch, type ServiceBusMessageBatch } from './batch.js';
import { newIdentifier, throwIfConnectionClosed, withSendPath, type ClientContext } from './context.js';
import { errorFromResponse, ServiceBusError } from './errors.js';
import { Long, sequenceText, toWire, wireSize, type AmqpAnnotatedMessage, type ServiceBusMessage } from './message.js';

/** Options of `createMessageBatch`: how large the batch may grow. */
export interface CreateMessageBatchOptions extends OperationOptionsBase {
  /** The most bytes the batch may hold (256 KB, the broker's limit, when not given; no more is allowed). */
  maxSizeInBytes?: number;
}

/** Options of `createSender`. */
export interface ServiceBusSenderOptions {
  /**
   * Sets the name to identify the sender. This can be used to correlate logs and exceptions.
   * If not specified or empty, a random unique one will be used.
   */
  identifier?: string;
}

/**
 * Sends messages to one queue or topic, schedules messages for later and cancels scheduled ones,
 * as @azure/service-bus's `ServiceBusSender`. Create it with `ServiceBusClient.createSender`; each
 * call is one HTTPS request (a batch of up to 100 messages in one).
 */
export interface ServiceBusSender {
  /**
   * A name used to identify the sender. This can be used to correlate logs and exceptions.
   * If not specified or empty, a random unique one will be generated.
   */
  identifier: string;
  /**
   * Sends one message, an array of messages, or a batch made with `createMessageBatch`. An array or a
   * batch is stored all or nothing, up to 256 KB in all (Service Bus Standard's limit); a single message
   * may be up to 256 KB. Messages to an entity that requires sessions need a `sessionId`.
   *
   * @param messages - A message, an array of messages, or a `ServiceBusMessageBatch`.
   * @param options - Options bag to pass an abort signal.
   * @throws `ServiceBusError` with code `MessageSizeExceeded` when a message, or an array together,
   * is larger than 256 KB.
   * @throws Error when the sender or its client is closed.
   * @throws `ServiceBusError` with code `MessagingEntityNotFound`, `MessagingEntityDisabled`,
   * `UnauthorizedAccess` (no Send rights), `QuotaExceeded` (the entity is full), or `ServiceBusy`,
   * `ServiceTimeout`, `ServiceCommunicationProblem` after the client's retries.
   */
  sendMessages(
    messages: ServiceBusMessage | ServiceBusMessage[] | ServiceBusMessageBatch | AmqpAnnotatedMessage | AmqpAnnotatedMessage[],
    options?: OperationOptionsBase,
  ): Promise<void>;
  /**
   * Creates an empty batch to fill with `tryAddMessage` until it is full, then send with
   * `sendMessages`. Makes no call to the broker.
   *
   * @param options - `maxSizeInBytes`: the most the batch may hold (256 KB at most, the default).
   * @returns An empty batch.
   * @throws Error when `maxSizeInBytes` is larger than 256 KB, or the sender is closed.
   */
  createMessageBatch(options?: CreateMessageBatchOptions): Promise<ServiceBusMessageBatch>;
  /** Whether the sender, or the client that created it, has been closed. */
  isClosed: boolean;
  /**
   * Schedules messages to be enqueued at `scheduledEnqueueTimeUtc`: until then they are in the entity
   * but cannot be received (peek shows them). Keep the returned sequence numbers to cancel them.
   *
   * @param messages - A message or an array of messages.
   * @param scheduledEnqueueTimeUtc - When the messages become available (a time in the past enqueues them at once).
   * @param options - Options bag to pass an abort signal.
   * @returns The messages' sequence numbers, as `Long` (keep them as they are: a JavaScript number loses
   * precision above 2^53).
   * @throws Error when the sender or its client is closed.
   * @throws `ServiceBusError` with code `MessagingEntityNotFound`, `MessagingEntityDisabled`,
   * `UnauthorizedAccess` (no Send rights), `QuotaExceeded` (the entity is full), or `ServiceBusy`,
   * `ServiceTimeout`, `ServiceCommunicationProblem` after the client's retries.
   */
  scheduleMessages(
    messages: ServiceBusMessage | ServiceBusMessage[] | AmqpAnnotatedMessage | AmqpAnnotatedMessage[],
    scheduledEnqueueTimeUtc: Date,
    options?: OperationOptionsBase,
  ): Promise<Long[]>;
  /**
   * Cancels scheduled messages: they are deleted before they are enqueued. Cancelling a sequence
   * number that is no longer scheduled (already enqueued, or unknown) does nothing, as in Service Bus.
   *
   * @param sequenceNumbers - The sequence numbers `scheduleMessages` returned.
   * @param options - Options bag to pass an abort signal.
   * @throws Error when the sender or its client is closed.
   * @throws `ServiceBusError` with code `MessagingEntityNotFound`, `MessagingEntityDisabled`,
   * `UnauthorizedAccess` (no Send rights), `QuotaExceeded` (the entity is full), or `ServiceBusy`,
   * `ServiceTimeout`, `ServiceCommunicationProblem` after the client's retries.
   */
  cancelScheduledMessages(sequenceNumbers: Long | Long[], options?: OperationOptionsBase): Promise<void>;
  /** The queue or topic this sender sends to. */
  entityPath: string;
  /** Closes the sender: later calls on it throw. It holds no connection, so this only marks it closed. */
  close(): Promise<void>;
}

type Wire = Record<string, unknown>;
interface BatchResult {
  messageId?: string;
  sequenceNumber?: string;
  error?: { code?: string; message?: string; retryable?: boolean };
}

/** Body bytes per batch request: well under API Gateway's and Lambda's payload limits. */
const MAX_REQUEST_BYTES = 1024 * 1024;

export class Sender implements ServiceBusSender {
  readonly identifier: string;
  private closed = false;

  constructor(
    private readonly ctx: ClientContext,
    readonly entityPath: string,
    options: ServiceBusSenderOptions = {},
  ) {
    this.identifier = options.identifier ?? newIdentifier(entityPath);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private throwIfClosed(): void {
    throwIfConnectionClosed(this.ctx);
    if (this.closed) {
      throw new Error(
        `The sender for "${this.entityPath}" has been closed and can no longer be used. Please create a new sender using the "createSender" method on the ServiceBusClient.`,
      );
    }
  }

  async sendMessages(
    messages: ServiceBusMessage | ServiceBusMessage[] | ServiceBusMessageBatch | AmqpAnnotatedMessage | AmqpAnnotatedMessage[],
    options?: OperationOptionsBase,
  ): Promise<void> {
    this.throwIfClosed();
    let wires: Wire[];
    if (isMessageBatch(messages)) wires = messages._wires();
    else if (Array.isArray(messages)) wires = messages.map((m) => toWire(m));
    else wires = [toWire(messages as ServiceBusMessage)];
    if (Array.isArray(messages)) {
      // The SDK sends an array as one batch and refuses one that does not fit.
      const total = wires.reduce((n, w) => n + wireSize(w), 0);
      if (total > MAX_MESSAGE_SIZE_BYTES) {
        throw new ServiceBusError(
          'Messages were too big to fit in a single batch. Remove some messages and try again or create your own batch using createMessageBatch(), which gives more fine-grained control.',
          'MessageSizeExceeded',
        );
      }
    }
    await this.sendWires(wires, options);
  }

  private async sendWires(wires: Wire[], options?: OperationOptionsBase): Promise<BatchResult[]> {
    if (wires.length === 0) return [];
    for (const w of wires) {
      if (wireSize(w) > MAX_MESSAGE_SIZE_BYTES)
        throw new ServiceBusError(`The message is ${wireSize(w)} bytes; the limit is ${MAX_MESSAGE_SIZE_BYTES}`, 'MessageSizeExceeded');
    }
    if (wires.length === 1) {
      const res = await withSendPath(this.ctx, this.entityPath, (path) =>
        this.ctx.transport.request<BatchResult>({
          method: 'POST',
          path: `/${path}/messages`,
          body: wires[0],
          audience: path,
          idempotent: false,
          repeatable: this.repeatable(path, wires),
          abortSignal: options?.abortSignal,
        }),
      );
      return [res.body];
    }
    const results: BatchResult[] = [];
    for (const chunk of chunks(wires)) {
      const res = await withSendPath(this.ctx, this.entityPath, (path) =>
        this.ctx.transport.request<{ results: BatchResult[] }>({
          method: 'POST',
          path: `/${path}/messages/batch`,
          body: { messages: chunk },
          audience: path,
          idempotent: false,
          repeatable: this.repeatable(path, chunk),
          abortSignal: options?.abortSignal,
        }),
      );
      const failed = res.body.results.find((r) => r.error);
      if (failed) {
        const error = errorFromResponse(207, { error: failed.error });
        error.message = `${res.body.results.filter((r) => r.error).length} of ${chunk.length} messages were not sent: ${error.message}`;
        error.info = { ...error.info, results: res.body.results };
        throw error;
      }
      results.push(...res.body.results);
    }
    return results;
  }

  /**
   * S7: a send that may have been applied can be repeated only when duplicate detection drops
   * the repeat, so only when every message names its messageId and the entity detects
   * duplicates. Reading that takes Manage: with a narrower key the failure is reported.
   */
  private repeatable(path: string, wires: Wire[]): (() => Promise<boolean>) | undefined {
    if (!wires.every((w) => typeof w.messageId === 'string')) return undefined;
    return async () => {
      const res = await this.ctx.transport.request<{ requiresDuplicateDetection?: unknown }>({
        method: 'GET',
        path: `/${path}`,
        audience: path,
        idempotent: true,
        accept: [401, 403, 404],
      });
      return res.status === 200 && res.body?.requiresDuplicateDetection === true;
    };
  }

  async createMessageBatch(options?: CreateMessageBatchOptions): Promise<ServiceBusMessageBatch> {
    this.throwIfClosed();
    const max = options?.maxSizeInBytes ?? MAX_MESSAGE_SIZE_BYTES;
    if (max > MAX_MESSAGE_SIZE_BYTES) {
      throw new ServiceBusError(
        `Max message size (${max} bytes) is greater than maximum message size (${MAX_MESSAGE_SIZE_BYTES} bytes) on the AMQP sender link.`,
        'GeneralError',
      );
    }
    return new MessageBatch(max);
  }

  async scheduleMessages(
    messages: ServiceBusMessage | ServiceBusMessage[] | AmqpAnnotatedMessage | AmqpAnnotatedMessage[],
    scheduledEnqueueTimeUtc: Date,
    options?: OperationOptionsBase,
  ): Promise<Long[]> {
    this.throwIfClosed();
    if (!(scheduledEnqueueTimeUtc instanceof Date) || Number.isNaN(scheduledEnqueueTimeUtc.getTime())) {
      throw new TypeError('scheduledEnqueueTimeUtc must be a Date');
    }
    const list = Array.isArray(messages) ? messages : [messages];
    const wires = list.map((m) => ({ ...toWire(m), scheduledEnqueueTime: scheduledEnqueueTimeUtc.toISOString() }));
    const results = await this.sendWires(wires, options);
    return results.map((r) => Long.fromString(r.sequenceNumber ?? '0'));
  }

  async cancelScheduledMessages(sequenceNumbers: Long | Long[], options?: OperationOptionsBase): Promise<void> {
    this.throwIfClosed();
    const list = Array.isArray(sequenceNumbers) ? sequenceNumbers : [sequenceNumbers];
    for (const n of list) {
      // A message no longer scheduled (sent, or cancelled before) is no failure, as in Service Bus.
      await withSendPath(this.ctx, this.entityPath, (path) =>
        this.ctx.transport
          .request({
            method: 'DELETE',
            path: `/${path}/messages/scheduled/${sequenceText(n)}`,
            audience: path,
            idempotent: true,
            accept: [404],
            abortSignal: options?.abortSignal,
          })
          .then((res) => {
            const code = (res.body as { error?: { code?: string } } | undefined)?.error?.code;
            if (res.status === 404 && code === 'EntityNotFound') throw errorFromResponse(404, res.body);
            return res;
          }),
      );
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

function* chunks(wires: Wire[]): Generator<Wire[]> {
  let chunk: Wire[] = [];
  let bytes = 0;
  for (const w of wires) {
    const size = wireSize(w);
    if (chunk.length && (chunk.length >= MAX_BATCH_COUNT || bytes + size > MAX_REQUEST_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(w);
    bytes += size;
  }
  if (chunk.length) yield chunk;
}
