/** ServiceBusMessageBatch: messages gathered under a size limit, sent in one call. */
import { toWire, wireSize, type AmqpAnnotatedMessage, type ServiceBusMessage } from './message.js';

/** The broker's limit for one message and for a batch's total (S5: 256 KB, as Service Bus Standard). */
export const MAX_MESSAGE_SIZE_BYTES = 256 * 1024;
/** Messages per batch request (docs/http-api.md). */
export const MAX_BATCH_COUNT = 100;

export interface TryAddOptions {
  tracingOptions?: unknown;
  parentSpan?: unknown;
}

export interface ServiceBusMessageBatch {
  readonly sizeInBytes: number;
  readonly count: number;
  readonly maxSizeInBytes: number;
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
