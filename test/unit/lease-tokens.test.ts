/**
 * The positioned layout's lock tokens (lib/store/leases.ts `leaseToken`): GUIDs as every lock
 * token is (the API refuses any other shape), whose first half is the message's positioned
 * sequence number, so a token alone says its layout, partition and position (R4, R9), and whose
 * second half carries the take-back count a complete insists on (R5), the lock end to the second
 * and the claim id's low bits, read back exactly.
 */
import { describe, expect, it } from 'vitest';
import { claimIdOfToken, entryOfToken, isLeaseToken, leaseToken, lockEndOfToken } from '../../lib/store/leases.js';
import { leasePk, positionedPk } from '../../lib/store/keys.js';
import { isLockTokenShape, newBatchLockToken, newLockToken, sequenceOfLockToken } from '../../lib/messages/lock-token.js';
import { isPositionedSeq, partitionOfSeq, positionedSeq, positionOfSeq } from '../../lib/store/sequence.js';

const leaseOn = (partition: number, id: number, until: number) => ({ pk: leasePk(positionedPk('e1', 'active', partition)), id, until });
const now = Date.UTC(2030, 0, 1, 12, 0, 0);

describe('lease tokens', () => {
  it('R4, R9: a GUID whose first half is the positioned sequence number, with the entry, lock end and claim id read back', () => {
    for (const [partition, position, g, id, until] of [
      [0, 1, 0, 1, now + 30_000],
      [15, 2 ** 39, 9, 2 ** 40, now + 300_123],
      [7, 123_456, 2 ** 27 - 1, 255, now + 5_000],
    ] as const) {
      const token = leaseToken(leaseOn(partition, id, until), [position, g]);
      expect(isLockTokenShape(token)).toBe(true);
      expect(token).toBe(token.toLowerCase());
      const seq = sequenceOfLockToken(token);
      expect(seq).toBe(positionedSeq(position, partition));
      expect(isPositionedSeq(seq)).toBe(true);
      expect(partitionOfSeq(seq)).toBe(partition);
      expect(positionOfSeq(seq)).toBe(position);
      expect(entryOfToken(token)).toEqual([position, g]);
      expect(claimIdOfToken(token)).toBe(id % 256);
      expect(lockEndOfToken(token, now)).toBe(Math.floor(until / 1000) * 1000);
      // Read long after, the stated end is still the one it was (R5: lapsed, never ahead).
      expect(lockEndOfToken(token, now + 400 * 24 * 3600 * 1000)).toBe(Math.floor(until / 1000) * 1000);
    }
  });

  it('R5: each delivery of a message has its own token: another take-back count or claim is another token', () => {
    const a = leaseToken(leaseOn(0, 1, now), [5, 0]);
    expect(leaseToken(leaseOn(0, 2, now + 30_000), [5, 1])).not.toBe(a);
    expect(leaseToken(leaseOn(0, 1, now), [6, 0])).not.toBe(a);
  });

  it("R4: a lease's token is told from every token today's layout hands out, also for a positioned number (a deferred message, a dead letter)", () => {
    const seq = positionedSeq(42, 3);
    for (let i = 0; i < 200; i++) {
      expect(isLeaseToken(leaseToken(leaseOn(3, i, now), [42, i % 5]))).toBe(true);
      expect(isLeaseToken(newLockToken(seq))).toBe(false);
      expect(isLeaseToken(newBatchLockToken(seq, 1 + (i % 100)))).toBe(false);
    }
  });
});
