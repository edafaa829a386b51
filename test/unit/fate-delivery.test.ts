import { describe, expect, it } from 'vitest';
import { nextDueAt, onCandidate, onDue, onLockReleased, reasons, type MessageFacts } from '../../lib/fate/delivery.js';

const MINUTE = 60_000;
const now = Date.UTC(2030, 0, 1, 12, 0, 0);
const MAX = 5;

/** An active message, enqueued a minute ago, unexpired, delivered once, not locked. */
const facts = (over: Partial<MessageFacts> = {}): MessageFacts => ({
  state: 'Active',
  deliveryCount: 1,
  enqueuedAt: now - MINUTE,
  expiresAt: now + MINUTE,
  lockedUntil: null,
  inDeadLetter: false,
  ...over,
});

describe('onLockReleased: a lock ends by abandon or by running out (R4, R6, T5, D2)', () => {
  it('R4/R6: an unexpired message below maxDeliveryCount is released', () => {
    expect(onLockReleased(facts(), MAX, now)).toEqual({ kind: 'release' });
  });

  it('R4: a message without expiry is released', () => {
    expect(onLockReleased(facts({ expiresAt: null }), MAX, now)).toEqual({ kind: 'release' });
    expect(onLockReleased(facts({ expiresAt: undefined }), MAX, now)).toEqual({ kind: 'release' });
  });

  it('T5: past expiresAt, expiry takes effect at once', () => {
    expect(onLockReleased(facts({ expiresAt: now - 1 }), MAX, now)).toEqual({ kind: 'expire' });
  });

  it('T4/T5: at exactly expiresAt, expiry takes effect', () => {
    expect(onLockReleased(facts({ expiresAt: now }), MAX, now)).toEqual({ kind: 'expire' });
  });

  it('D2: deliveryCount equal to maxDeliveryCount dead-letters with MaxDeliveryCountExceeded and names the count', () => {
    // prepare
    const m = facts({ deliveryCount: MAX });
    // act
    const outcome = onLockReleased(m, MAX, now);
    // assess
    expect(outcome).toMatchObject({ kind: 'deadLetter', reason: reasons.maxDelivery });
    expect(reasons.maxDelivery).toBe('MaxDeliveryCountExceeded');
    expect(outcome.kind === 'deadLetter' && outcome.description).toContain(String(MAX));
  });

  it('D2: deliveryCount above maxDeliveryCount (max lowered meanwhile) dead-letters too', () => {
    const outcome = onLockReleased(facts({ deliveryCount: 9 }), 3, now);
    expect(outcome).toMatchObject({ kind: 'deadLetter', reason: 'MaxDeliveryCountExceeded' });
    expect(outcome.kind === 'deadLetter' && outcome.description).toMatch(/9/);
    expect(outcome.kind === 'deadLetter' && outcome.description).toMatch(/3/);
  });

  it('D2: one below maxDeliveryCount is released', () => {
    expect(onLockReleased(facts({ deliveryCount: MAX - 1 }), MAX, now)).toEqual({ kind: 'release' });
  });

  it('D2 takes precedence over T5: expired and over-delivered goes to the DLQ as MaxDeliveryCountExceeded', () => {
    const outcome = onLockReleased(facts({ deliveryCount: MAX, expiresAt: now - MINUTE }), MAX, now);
    expect(outcome).toMatchObject({ kind: 'deadLetter', reason: 'MaxDeliveryCountExceeded' });
  });

  it('D2: maxDeliveryCount 1 dead-letters after the first delivery', () => {
    expect(onLockReleased(facts({ deliveryCount: 1 }), 1, now)).toMatchObject({ kind: 'deadLetter', reason: 'MaxDeliveryCountExceeded' });
  });

  it('D2: a never-delivered message is never over-delivered', () => {
    expect(onLockReleased(facts({ deliveryCount: 0 }), 1, now)).toEqual({ kind: 'release' });
  });

  it('T8: a deferred message never expires, even long past expiresAt', () => {
    expect(onLockReleased(facts({ state: 'Deferred', expiresAt: now - 100 * MINUTE }), MAX, now)).toEqual({ kind: 'release' });
  });

  it('D2 applies to a deferred message received by sequence number and abandoned too often', () => {
    expect(onLockReleased(facts({ state: 'Deferred', deliveryCount: MAX }), MAX, now)).toMatchObject({
      kind: 'deadLetter',
      reason: 'MaxDeliveryCountExceeded',
    });
  });

  it('T9/D6: a dead-lettered message never expires', () => {
    expect(onLockReleased(facts({ inDeadLetter: true, expiresAt: now - MINUTE }), MAX, now)).toEqual({ kind: 'release' });
  });

  it('D5: a message in a dead-letter subqueue is never dead-lettered again, whatever its delivery count', () => {
    expect(onLockReleased(facts({ inDeadLetter: true, deliveryCount: 1000 }), MAX, now)).toEqual({ kind: 'release' });
  });
});

describe('onCandidate: what a receive does with a visible message (T4, D2)', () => {
  it('R1: a fresh message is delivered', () => {
    expect(onCandidate(facts({ deliveryCount: 0 }), MAX, now)).toEqual({ kind: 'deliver' });
  });

  it('T4: an expired message is never delivered: it is expired', () => {
    expect(onCandidate(facts({ expiresAt: now - 1 }), MAX, now)).toEqual({ kind: 'expire' });
    expect(onCandidate(facts({ expiresAt: now }), MAX, now)).toEqual({ kind: 'expire' });
  });

  it('T4 boundary: one millisecond before expiresAt it is delivered', () => {
    expect(onCandidate(facts({ expiresAt: now + 1 }), MAX, now)).toEqual({ kind: 'deliver' });
  });

  it('D2: a message whose last allowed lock ran out is dead-lettered, not delivered again', () => {
    expect(onCandidate(facts({ deliveryCount: MAX, lockedUntil: now - 1 }), MAX, now)).toMatchObject({
      kind: 'deadLetter',
      reason: 'MaxDeliveryCountExceeded',
    });
  });

  it('D2 before T4: over-delivered and expired is dead-lettered as MaxDeliveryCountExceeded', () => {
    expect(onCandidate(facts({ deliveryCount: MAX, expiresAt: now - 1 }), MAX, now)).toMatchObject({ kind: 'deadLetter' });
  });

  it('D5/T9: in a dead-letter subqueue a message is delivered whatever its count and nominal expiry', () => {
    expect(onCandidate(facts({ inDeadLetter: true, deliveryCount: 50, expiresAt: now - MINUTE }), MAX, now)).toEqual({ kind: 'deliver' });
  });
});

describe('onDue: the sweeper reaches a message on its agenda (T5-T9, D2, S6)', () => {
  it('T9/D6: a dead-lettered message is dropped from the agenda, never expired', () => {
    expect(onDue(facts({ inDeadLetter: true, expiresAt: now - MINUTE }), MAX, now)).toEqual({ kind: 'reschedule', at: null });
  });

  it('T8: a deferred message is dropped from the agenda, never expired', () => {
    expect(onDue(facts({ state: 'Deferred', expiresAt: now - MINUTE }), MAX, now)).toEqual({ kind: 'reschedule', at: null });
  });

  it('T8: a deferred message with deliveryCount at the max is not dead-lettered by the sweeper', () => {
    expect(onDue(facts({ state: 'Deferred', deliveryCount: MAX }), MAX, now)).toEqual({ kind: 'reschedule', at: null });
  });

  it('T5: a locked message past expiresAt is not touched: looked at again when its lock ends', () => {
    const lockedUntil = now + 2 * MINUTE;
    expect(onDue(facts({ expiresAt: now - MINUTE, lockedUntil }), MAX, now)).toEqual({ kind: 'reschedule', at: lockedUntil });
  });

  it('T5/D2: a locked message on its last delivery is looked at again when its lock ends', () => {
    const lockedUntil = now + MINUTE;
    expect(onDue(facts({ deliveryCount: MAX, lockedUntil }), MAX, now)).toEqual({ kind: 'reschedule', at: lockedUntil });
  });

  it('T5: a lock ending exactly now no longer protects: expiry takes effect', () => {
    expect(onDue(facts({ expiresAt: now - MINUTE, lockedUntil: now }), MAX, now)).toEqual({ kind: 'expire' });
  });

  it('T5/T7: a lock that ran out after expiresAt: expired at once', () => {
    expect(onDue(facts({ expiresAt: now - 2 * MINUTE, lockedUntil: now - MINUTE }), MAX, now)).toEqual({ kind: 'expire' });
  });

  it('T7: an expired, unlocked message is expired by the sweeper', () => {
    expect(onDue(facts({ expiresAt: now }), MAX, now)).toEqual({ kind: 'expire' });
  });

  it('D2: the last allowed lock ran out: dead-lettered with MaxDeliveryCountExceeded', () => {
    expect(onDue(facts({ deliveryCount: MAX, lockedUntil: now - 1 }), MAX, now)).toMatchObject({
      kind: 'deadLetter',
      reason: 'MaxDeliveryCountExceeded',
    });
  });

  it('D2 before T5: the last lock ran out after expiresAt: MaxDeliveryCountExceeded wins', () => {
    expect(onDue(facts({ deliveryCount: MAX, lockedUntil: now - 1, expiresAt: now - MINUTE }), MAX, now)).toMatchObject({
      kind: 'deadLetter',
      reason: 'MaxDeliveryCountExceeded',
    });
  });

  it('S6: a scheduled message whose time has come is activated, next due at its expiry', () => {
    const m = facts({ state: 'Scheduled', deliveryCount: 0, enqueuedAt: now, expiresAt: now + 10 * MINUTE });
    expect(onDue(m, MAX, now)).toEqual({ kind: 'activate', nextDueAt: now + 10 * MINUTE });
  });

  it('S6: a scheduled message without expiry is activated and leaves the agenda', () => {
    const m = facts({ state: 'Scheduled', deliveryCount: 0, enqueuedAt: now - 1, expiresAt: null });
    expect(onDue(m, MAX, now)).toEqual({ kind: 'activate', nextDueAt: null });
  });

  it('S6/T3: a scheduled message before its time is looked at again at its scheduled time', () => {
    const m = facts({ state: 'Scheduled', deliveryCount: 0, enqueuedAt: now + 5 * MINUTE, expiresAt: now + 15 * MINUTE });
    expect(onDue(m, MAX, now)).toEqual({ kind: 'reschedule', at: now + 5 * MINUTE });
  });

  it('T3/T4: a scheduled message past its scheduled time and its expiry is expired, not activated', () => {
    const m = facts({ state: 'Scheduled', deliveryCount: 0, enqueuedAt: now - 15 * MINUTE, expiresAt: now - 5 * MINUTE });
    expect(onDue(m, MAX, now)).toEqual({ kind: 'expire' });
  });

  it('T7: an active message due early (agenda moved) is looked at again at its expiry', () => {
    expect(onDue(facts({ expiresAt: now + MINUTE }), MAX, now)).toEqual({ kind: 'reschedule', at: now + MINUTE });
  });

  it('T2: an active message without expiry leaves the agenda', () => {
    expect(onDue(facts({ expiresAt: null }), MAX, now)).toEqual({ kind: 'reschedule', at: null });
  });
});

describe('nextDueAt: when the sweeper must look at a message (send and settlement use it)', () => {
  it('T8: a deferred message is never on the agenda', () => {
    expect(nextDueAt({ state: 'Deferred', enqueuedAt: now, expiresAt: now + MINUTE }, now)).toBeNull();
  });

  it('S6/T3: a future schedule is due at its scheduled time', () => {
    expect(nextDueAt({ state: 'Scheduled', enqueuedAt: now + 5 * MINUTE, expiresAt: now + 15 * MINUTE }, now)).toBe(now + 5 * MINUTE);
    expect(nextDueAt({ state: 'Scheduled', enqueuedAt: now + 5 * MINUTE, expiresAt: null }, now)).toBe(now + 5 * MINUTE);
  });

  it('T7: a schedule whose time has come is due at its expiry', () => {
    expect(nextDueAt({ state: 'Scheduled', enqueuedAt: now, expiresAt: now + 10 * MINUTE }, now)).toBe(now + 10 * MINUTE);
  });

  it('T7: an active message is due at its expiry', () => {
    expect(nextDueAt({ state: 'Active', enqueuedAt: now, expiresAt: now + MINUTE }, now)).toBe(now + MINUTE);
  });

  it('T2: an active message without expiry is never due', () => {
    expect(nextDueAt({ state: 'Active', enqueuedAt: now }, now)).toBeNull();
    expect(nextDueAt({ state: 'Active', enqueuedAt: now, expiresAt: null }, now)).toBeNull();
  });
});
