/**
 * S2: sequence numbers stay inside the signed 64-bit range for centuries, and what
 * generation produces, validation and the lock token read back.
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_PARTITIONS,
  MAX_SEQUENCE_TIME_MS,
  SequenceGenerator,
  isPositionedSeq,
  partitionOfSeq,
  positionOfSeq,
  positionedSeq,
  timeOfSeq,
} from '../../lib/store/sequence.js';
import { messageOfStored, storedMessage } from '../../lib/store/message-layout.js';
import { positionKey, positionedPk } from '../../lib/store/keys.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { isLockTokenShape, newLockToken, sequenceOfLockToken } from '../../lib/messages/lock-token.js';
import { parseSequenceNumber } from '../../lib/validation.js';

const INT64_MAX = (1n << 63n) - 1n;
const year = (y: number) => Date.UTC(y, 0, 1);

describe('S2: the sequence number layout', () => {
  it('S2: numbers made in 2026, 2248, 2500, 3000 and 5000 fit 2^63-1, validate, and carry their time and partition', () => {
    for (const y of [2026, 2248, 2500, 3000, 5000]) {
      const gen = new SequenceGenerator();
      for (let p = 0; p < MAX_PARTITIONS; p++) {
        const seq = gen.next(year(y), p);
        expect(seq <= INT64_MAX, `${y}`).toBe(true);
        expect(parseSequenceNumber(seq.toString())).toBe(seq);
        expect(partitionOfSeq(seq)).toBe(p);
        expect(timeOfSeq(seq)).toBe(year(y));
        const token = newLockToken(seq);
        expect(isLockTokenShape(token)).toBe(true);
        expect(sequenceOfLockToken(token)).toBe(seq);
      }
    }
  });

  it('S2: the layout holds until at least the year 5000, and refuses a time past what it can hold', () => {
    expect(MAX_SEQUENCE_TIME_MS).toBeGreaterThanOrEqual(year(5000));
    const gen = new SequenceGenerator();
    const last = gen.next(MAX_SEQUENCE_TIME_MS, MAX_PARTITIONS - 1);
    expect(last <= INT64_MAX).toBe(true);
    expect(() => new SequenceGenerator().next(MAX_SEQUENCE_TIME_MS + 1, 0)).toThrow(/sequence/);
  });

  it('S2: numbers increase with time and within a millisecond, also past the counter of one millisecond', () => {
    const gen = new SequenceGenerator();
    let previous = -1n;
    for (let i = 0; i < 10_000; i++) {
      const seq = gen.next(year(2300), 0);
      expect(seq > previous).toBe(true);
      previous = seq;
    }
    expect(gen.next(year(2300) + 10_000, 0) > previous).toBe(true);
  });
});

describe('S2: positioned sequence numbers', () => {
  it('S2: number a position and its partition, grow with the position, and are never a time-based number', () => {
    const gen = new SequenceGenerator();
    for (const p of [0, 7, MAX_PARTITIONS - 1]) {
      let last = 0n;
      for (const position of [1, 2, 3, 1000, 2 ** 39]) {
        const seq = positionedSeq(position, p);
        expect(seq > last).toBe(true);
        last = seq;
        expect(seq <= INT64_MAX).toBe(true);
        expect(parseSequenceNumber(seq.toString())).toBe(seq);
        expect(isPositionedSeq(seq)).toBe(true);
        expect(positionOfSeq(seq)).toBe(position);
        expect(partitionOfSeq(seq)).toBe(p);
        expect(sequenceOfLockToken(newLockToken(seq))).toBe(seq);
      }
      for (const y of [2026, 2500, 5000]) expect(isPositionedSeq(gen.next(year(y), p))).toBe(false);
    }
  });

  it("S2: a positioned message's item holds neither its number nor its partition, and reads them back from its key", () => {
    const pk = positionedPk('e1', 'active', 3);
    const item = {
      ...positionKey(pk, 42),
      seq: positionedSeq(42, 3).toString(),
      eid: 'e1',
      subqueue: 'active',
      partition: 3,
      messageId: 'm',
    } as unknown as MessageItem;
    const stored = storedMessage(item);
    for (const field of ['seq', 'eid', 'subqueue', 'partition']) expect(stored).not.toHaveProperty(field);
    expect(messageOfStored(stored)).toMatchObject({ seq: item.seq, eid: 'e1', subqueue: 'active', partition: 3 });
  });
});
