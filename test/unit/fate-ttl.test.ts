import { describe, expect, it } from 'vitest';
import { effectiveTimeToLive, enqueueTime, expiresAt, isExpired } from '../../lib/fate/ttl.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const now = Date.UTC(2030, 0, 1, 12, 0, 0);

describe('T1: the effective time to live is the smallest of message, entity and topic', () => {
  it('T1: the message TTL wins when it is the smallest', () => {
    // prepare
    const message = 5 * MINUTE;
    const entity = HOUR;
    const topic = 2 * HOUR;
    // act
    const ttl = effectiveTimeToLive(message, entity, topic);
    // assess
    expect(ttl).toBe(5 * MINUTE);
  });

  it('T1: a message TTL above the entity default is lowered to the entity default', () => {
    expect(effectiveTimeToLive(2 * HOUR, HOUR)).toBe(HOUR);
    expect(effectiveTimeToLive(2 * HOUR, HOUR, undefined)).toBe(HOUR);
  });

  it("T1: for a subscription the topic's smaller default wins over message and subscription", () => {
    expect(effectiveTimeToLive(HOUR, 30 * MINUTE, 10 * MINUTE)).toBe(10 * MINUTE);
    expect(effectiveTimeToLive(undefined, null, 10 * MINUTE)).toBe(10 * MINUTE);
    expect(effectiveTimeToLive(null, 30 * MINUTE, 10 * MINUTE)).toBe(10 * MINUTE);
  });

  it('T1: unlimited (null or absent) never lowers anything', () => {
    expect(effectiveTimeToLive(7 * MINUTE, null, null)).toBe(7 * MINUTE);
    expect(effectiveTimeToLive(undefined, 3 * MINUTE)).toBe(3 * MINUTE);
    expect(effectiveTimeToLive(undefined, 3 * MINUTE, null)).toBe(3 * MINUTE);
  });

  it('T1/T2: all unlimited gives unlimited (null)', () => {
    expect(effectiveTimeToLive()).toBeNull();
    expect(effectiveTimeToLive(undefined, null, undefined)).toBeNull();
  });

  it('T1: equal values give that value', () => {
    expect(effectiveTimeToLive(MINUTE, MINUTE, MINUTE)).toBe(MINUTE);
  });
});

describe('T2: expiresAt = enqueued time + effective time to live', () => {
  it('T2: adds the TTL to the enqueued time', () => {
    // prepare
    const enqueued = now;
    // act
    const at = expiresAt(enqueued, 10 * MINUTE);
    // assess
    expect(at).toBe(now + 10 * MINUTE);
  });

  it('T2: an unlimited TTL gives no expiresAt', () => {
    expect(expiresAt(now, null)).toBeNull();
  });

  it('T2: large TTLs stay exact (P10675199D is no problem for epoch ms)', () => {
    const ttl = 10_675_199 * 24 * HOUR;
    expect(expiresAt(now, ttl)).toBe(now + ttl);
    expect(Number.isSafeInteger(expiresAt(now, ttl))).toBe(true);
  });
});

describe('T3: a scheduled message is enqueued at its scheduled time', () => {
  it('T3: scheduled 5 minutes ahead with a 10-minute TTL expires 15 minutes after the send', () => {
    // prepare
    const scheduled = now + 5 * MINUTE;
    // act
    const enqueued = enqueueTime(now, scheduled);
    const at = expiresAt(enqueued, effectiveTimeToLive(10 * MINUTE, null));
    // assess
    expect(enqueued).toBe(now + 5 * MINUTE);
    expect(at).toBe(now + 15 * MINUTE);
  });

  it('T3: no schedule, or a schedule now or in the past, enqueues now', () => {
    expect(enqueueTime(now, undefined)).toBe(now);
    expect(enqueueTime(now, null)).toBe(now);
    expect(enqueueTime(now, now)).toBe(now);
    expect(enqueueTime(now, now - HOUR)).toBe(now);
  });

  it('T3: a schedule in the past expires relative to now, not to the past schedule', () => {
    const enqueued = enqueueTime(now, now - 5 * MINUTE);
    expect(expiresAt(enqueued, 10 * MINUTE)).toBe(now + 10 * MINUTE);
  });
});

describe('T4: a message is expired from its expiresAt on', () => {
  const expires = now + MINUTE;

  it('T4: one millisecond before expiresAt it is not expired', () => {
    expect(isExpired(expires, expires - 1)).toBe(false);
  });

  it('T4: at exactly expiresAt it is expired (boundary)', () => {
    expect(isExpired(expires, expires)).toBe(true);
  });

  it('T4: after expiresAt it is expired', () => {
    expect(isExpired(expires, expires + 1)).toBe(true);
    expect(isExpired(expires, expires + 365 * 24 * HOUR)).toBe(true);
  });

  it('T4: a message without expiresAt never expires', () => {
    expect(isExpired(null, Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(isExpired(undefined, Number.MAX_SAFE_INTEGER)).toBe(false);
  });

  it('T4: expiresAt 0 (the epoch) is a real instant, not "unlimited"', () => {
    expect(isExpired(0, 0)).toBe(true);
    expect(isExpired(0, 1)).toBe(true);
  });
});
