/**
 * Sequence numbers (S2) without a counter item: the time in milliseconds in the high bits,
 * the partition and a per-process counter in the low 16 bits. That costs no write, keeps
 * numbers increasing in enqueue order within a partition (at millisecond resolution across
 * Lambda instances), and lets a lock token or a sequence number alone locate the message's
 * partition. A collision between two instances in the same millisecond is caught by the
 * conditional put and retried with the next number.
 *
 * The 47 bits left for the time keep every number inside the signed 64-bit range that
 * Service Bus clients expect until the year 6429 (S2); 12 counter bits still allow 4,096
 * numbers per millisecond per instance.
 */
const PARTITION_BITS = 4n;
const COUNTER_BITS = 12n;
const LOW_BITS = PARTITION_BITS + COUNTER_BITS;
const TIME_BITS = 63n - LOW_BITS;
const COUNTER_MAX = (1 << Number(COUNTER_BITS)) - 1;
export const MAX_PARTITIONS = 1 << Number(PARTITION_BITS);
/** The last millisecond (epoch ms) a sequence number can carry: no clock may pass it. */
export const MAX_SEQUENCE_TIME_MS = Number((1n << TIME_BITS) - 1n);

export class SequenceGenerator {
  private lastMs = 0;
  private counter = 0;

  next(nowMs: number, partition: number): bigint {
    let ms = Math.floor(nowMs);
    if (ms <= this.lastMs) {
      ms = this.lastMs;
      this.counter++;
      if (this.counter > COUNTER_MAX) {
        ms = this.lastMs + 1;
        this.counter = 0;
      }
    } else {
      // A random start makes two instances unlikely to pick the same number in one ms.
      this.counter = Math.floor(Math.random() * (COUNTER_MAX >> 1));
    }
    if (ms > MAX_SEQUENCE_TIME_MS) throw new RangeError(`the clock is past what a sequence number can hold (${new Date(MAX_SEQUENCE_TIME_MS).toISOString()})`);
    this.lastMs = ms;
    return (BigInt(ms) << LOW_BITS) | (BigInt(partition) << COUNTER_BITS) | BigInt(this.counter);
  }
}

export const partitionOfSeq = (seq: bigint) => Number((seq >> COUNTER_BITS) & ((1n << PARTITION_BITS) - 1n));
export const timeOfSeq = (seq: bigint) => Number(seq >> LOW_BITS);

/**
 * A positioned message's sequence number (store/positions.ts): its position where a time-based
 * number has its time, and its partition where that has its partition, so `partitionOfSeq`
 * reads both kinds and a number alone says which kind it is. A position stays far below the
 * milliseconds of any time-based number (`isPositionedSeq`), so the two kinds never meet,
 * and numbers of one partition grow with its positions (S2).
 */
export const positionedSeq = (position: number, partition: number): bigint => (BigInt(position) << LOW_BITS) | (BigInt(partition) << COUNTER_BITS);

/**
 * The number of a scheduled message of a positioned partition (S2): numbered from the
 * partition's position counter at send, but stored in today's layout until due
 * (broker/positioned-send.ts `numberedAtSend`), so above `positionedSeq(position)`, the last
 * position drawn when it was numbered, and below the next position's: `low` (1 to
 * `SCHEDULED_LOW_MAX`) in the counter bits orders the scheduled messages numbered after one
 * position (store/positions.ts `numberScheduled`). Its counter bits are not zero, so
 * `isPositionedSeq` is false and a lookup by number (cancel S6, peek R8, deferred receive, a
 * lock token) goes to today's layout.
 */
export const scheduledSeq = (position: number, partition: number, low = 1): bigint => {
  if (!(low >= 1 && low <= SCHEDULED_LOW_MAX)) throw new RangeError(`low ${low}`);
  return positionedSeq(position, partition) | BigInt(low);
};

/** How many scheduled messages can be numbered after one position (the counter bits). */
export const SCHEDULED_LOW_MAX = COUNTER_MAX;

/** Positions stay below this; time-based numbers carry a time past it (2004), so they are apart. */
const FIRST_TIME_MS = 2n ** 40n;

/** Whether `seq` numbers a positioned message (`positionedSeq`) rather than one of the `ready` layout. */
export const isPositionedSeq = (seq: bigint) => seq >> LOW_BITS < FIRST_TIME_MS && (seq & BigInt(COUNTER_MAX)) === 0n;

/** The position a positioned sequence number holds. */
export const positionOfSeq = (seq: bigint) => Number(seq >> LOW_BITS);
