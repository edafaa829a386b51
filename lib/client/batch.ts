/** ServiceBusMessageBatch: messages gathered under a size limit, sent in one call. */
import { toWire, wireSize, type AmqpAnnotatedMessage, type ServiceBusMessage } from './message.js';

/** The broker's limit for one message and for a batch's total (S5: 256 KB, as Service Bus Standard). */
export const MAX_MESSAGE_SIZE_BYTES = 256 * 1024;
/** Messages per batch request (docs/http-api.md). */
export const MAX_BATCH_COUNT = 100;

/** Options of `tryAddMessage`: tracing, which Sluice accepts and ignores. */
export interface TryAddOptions {
  /** Accepted for compatibility with @azure/service-bus; Sluice does not trace. */
  tracingOptions?: unknown;
  /** Accepted for compatibility with @azure/service-bus; Sluice does not trace. */
  parentSpan?: unknown;
}

/**
 * A batch of messages, made with `ServiceBusSender.createMessageBatch` and sent whole with
 * `sendMessages`.
 *
 */
export interface ServiceBusMessageBatch {
  /**
   * Size of the batch in bytes, as the broker counts the messages' bodies and properties.
   * @readonly
   */
  readonly sizeInBytes: number;
  /**
   * Number of messages added to the batch.
   * @readonly
   */
  readonly count: number;
  /**
   * The maximum size of the batch, in bytes. The `tryAddMessage` function on the batch will return `false`
   * if the message being added causes the size of the batch to exceed this limit. Use the `createMessageBatch()` method on
   * the `Sender` to set the maxSizeInBytes.
   * @readonly
   */
  readonly maxSizeInBytes: number;
  /**
   * Adds a message to the batch if permitted by the batch's size limit.
   * **NOTE**: Always remember to check the return value of this method, before calling it again
   * for the next event.
   *
   * @param message - The message to add to the batch.
   * @param options - Accepted for the SDK's signature; tracing options are ignored.
   * @returns A boolean value indicating if the message has been added to the batch or not.
   */
  tryAddMessage(message: ServiceBusMessage | AmqpAnnotatedMessage, options?: TryAddOptions): boolean;
}

export class MessageBatch implements ServiceBusMessageBatch {
  private readonly wires: Record<string, unknown>[] = [];
  private size = 0;

  constructor(readonly maxSizeInBytes: number) {}

  get sizeInBytes(): number {
    return this.size;
  }

  get count(): number {
    return this.wires.length;
  }

  tryAddMessage(message: ServiceBusMessage | AmqpAnnotatedMessage, _options?: TryAddOptions): boolean {
    const wire = toWire(message);
    const size = wireSize(wire);
    if (this.size + size > this.maxSizeInBytes) return false;
    this.wires.push(wire);
    this.size += size;
    return true;
  }

  /** The messages in their wire form, for the sender. */
  _wires(): Record<string, unknown>[] {
    return this.wires;
  }
}

export function isMessageBatch(value: unknown): value is MessageBatch {
  return value instanceof MessageBatch;
}
