/**
 * What happens to a message at the moments the broker looks at it: a lock released
 * (abandon), a candidate found by a receive, an item on the sweeper's agenda. Pure, so the
 * receive path, the settlement path and the sweeper cannot disagree. Times in epoch ms.
 */
import { isExpired } from './ttl.js';

export interface MessageFacts {
  state: 'Active' | 'Scheduled' | 'Deferred';
  deliveryCount: number;
  enqueuedAt: number;
  expiresAt?: number | null;
  lockedUntil?: number | null;
  inDeadLetter: boolean;
}

export type Outcome =
  | { kind: 'deliver' }
  | { kind: 'release' }
  | { kind: 'expire' }
  | { kind: 'deadLetter'; reason: string; description: string }
  | { kind: 'activate'; nextDueAt: number | null }
  | { kind: 'reschedule'; at: number | null };

export const reasons = {
  expired: 'TTLExpiredException',
  maxDelivery: 'MaxDeliveryCountExceeded',
  headerSize: 'HeaderSizeExceeded',
  sessionIdNull: 'Session id is null',
  maxHops: 'MaxTransferHopCountExceeded',
} as const;

const maxDelivery = (count: number, max: number): Outcome => ({
  kind: 'deadLetter',
  reason: reasons.maxDelivery,
  description: `Message could not be consumed after ${count} delivery attempts (maxDeliveryCount is ${max}).`,
});

/** D2 cannot be turned off; a dead-letter subqueue has no dead-letter of its own (D5). */
const overDelivered = (m: MessageFacts, max: number) => !m.inDeadLetter && m.deliveryCount >= max && m.deliveryCount > 0;

/**
 * A lock ends by abandon (R4) or by running out (R6). D2 goes first: the message failed its
 * consumers often enough and is kept for inspection, which is the safer of the two fates;
 * then T5: expiry takes effect at once. Dead-lettered messages never expire (T9).
 */
export function onLockReleased(m: MessageFacts, maxDeliveryCount: number, now: number): Outcome {
  if (overDelivered(m, maxDeliveryCount)) return maxDelivery(m.deliveryCount, maxDeliveryCount);
  if (!m.inDeadLetter && m.state !== 'Deferred' && isExpired(m.expiresAt, now)) return { kind: 'expire' };
  return { kind: 'release' };
}

/** A receive found `m` visible in the ready index: deliver it, or apply what is overdue (T4, D2). */
export function onCandidate(m: MessageFacts, maxDeliveryCount: number, now: number): Outcome {
  const released = onLockReleased(m, maxDeliveryCount, now);
  return released.kind === 'release' ? { kind: 'deliver' } : released;
}

/** The sweeper reached `m` on its agenda (T5-T9, D2, S6). */
export function onDue(m: MessageFacts, maxDeliveryCount: number, now: number): Outcome {
  if (m.inDeadLetter) return { kind: 'reschedule', at: null };
  if (m.lockedUntil && m.lockedUntil > now) return { kind: 'reschedule', at: m.lockedUntil };
  const released = onLockReleased(m, maxDeliveryCount, now);
  // A deferred message never expires (T8), but when a lock taken on it by sequence number
  // runs out on its last allowed delivery, that is D2.
  if (m.state === 'Deferred') return released.kind === 'deadLetter' && m.lockedUntil ? released : { kind: 'reschedule', at: null };
  if (released.kind !== 'release') return released;
  const expiry = m.expiresAt ?? null;
  if (m.state === 'Scheduled') {
    if (m.enqueuedAt <= now) return { kind: 'activate', nextDueAt: expiry };
    return { kind: 'reschedule', at: m.enqueuedAt };
  }
  return { kind: 'reschedule', at: expiry };
}

/** When the sweeper must next look at a message, or null when never (send and settlement use it). */
export function nextDueAt(m: Pick<MessageFacts, 'state' | 'enqueuedAt' | 'expiresAt'>, now: number): number | null {
  if (m.state === 'Deferred') return null;
  if (m.state === 'Scheduled' && m.enqueuedAt > now) return m.enqueuedAt;
  return m.expiresAt ?? null;
}
