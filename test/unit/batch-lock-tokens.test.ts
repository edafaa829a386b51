/**
 * Lock tokens of a batch taken under one lock reminder (R6): each names its message (R4, R5)
 * as any token does, states the batch's size, keeps 56 random bits, and the batch's id is a
 * hash of the whole token set, so only the whole set names the batch's reminder.
 */
import { describe, expect, it } from 'vitest';
import {
  batchIdOfLockTokens,
  batchSizeOfLockToken,
  isLockTokenShape,
  lockTokenTail,
  newBatchLockToken,
  sequenceOfLockToken,
} from '../../lib/messages/lock-token.js';

const seq = 0x01b8dd58e2000639n;

describe('R6: lock tokens of a reminder batch', () => {
  it('R5/R6: a batch token names its message, states the batch size (0 past 127, so the top bit stays clear) and differs at every take', () => {
    for (const planned of [2, 10, 100, 127]) {
      const token = newBatchLockToken(seq, planned);
      expect(isLockTokenShape(token)).toBe(true);
      expect(sequenceOfLockToken(token)).toBe(seq);
      expect(batchSizeOfLockToken(token)).toBe(planned);
    }
    expect(batchSizeOfLockToken(newBatchLockToken(seq, 128))).toBe(0);
    const tails = new Set(Array.from({ length: 1000 }, () => lockTokenTail(newBatchLockToken(seq, 10)).slice(2)));
    expect(tails.size).toBe(1000);
  });

  it('R6: the batch id depends on the whole set of tokens, not their order', () => {
    const tokens = Array.from({ length: 10 }, (_, i) => newBatchLockToken(seq + BigInt(i), 10));
    const id = batchIdOfLockTokens(tokens);
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(batchIdOfLockTokens([...tokens].reverse())).toBe(id);
    expect(batchIdOfLockTokens(tokens.slice(1))).not.toBe(id);
    expect(batchIdOfLockTokens([...tokens.slice(1), newBatchLockToken(seq, 10)])).not.toBe(id);
  });
});
