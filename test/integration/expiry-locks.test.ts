/**
 * Expiry against locks, deferral and dead-lettering, through the API handler and the
 * sweeper: T5, T8, T9 (with D6). Raw items are read past the API to check the DynamoDB
 * `ttl` attribute, which must be absent whenever DynamoDB's TTL must not act.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { ttlSeconds } from '../../lib/messages/item.js';
import { apiClient } from '../support/api.js';
import { indexLayout, nextPositionedPass } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { messageItem, messageItems, queueItem } from '../support/stream.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
/**
 * Creates queues in today's layout: for the tests that read its items' `ttl` attribute, and
 * that expect each sweeper run to expire what is due (a positioned queue's pass may wait, T7).
 */
let indexApi: ReturnType<typeof apiClient>;
let sweep: ReturnType<typeof createSweeperHandler>;

beforeAll(async () => {
  deps = await testDeps(clock, 'expiry-locks');
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
  sweep = createSweeperHandler(deps);
});

const { createQueue, send, receive, receiveOne, peek, settle, dlq } = queueHelpers(() => api);
const { createQueue: createIndexQueue } = queueHelpers(() => indexApi);

/** A queue whose messages expire after 1 minute while a lock lasts 5 minutes. */
async function lockedPastExpiry(queue: string, deadLettering: boolean, { todays = false } = {}): Promise<{ sent: Msg; locked: Msg }> {
  await (todays ? createIndexQueue : createQueue)(queue, {
    defaultMessageTimeToLive: 'PT1M',
    lockDuration: 'PT5M',
    deadLetteringOnMessageExpiration: deadLettering,
  });
  const sent = await send(queue, { body: { n: 1 }, applicationProperties: { k: 'v' } });
  const locked = await receiveOne(`/queues/${queue}`);
  clock.advance(2 * MINUTE); // past expiresAt, lock still held
  return { sent, locked };
}

describe('T5: expiry does not touch a locked message', () => {
  it('T5: a locked message past expiresAt survives a sweeper run and can be completed; it is never dead-lettered afterwards', async () => {
    // prepare
    const { locked } = await lockedPastExpiry('t5-complete', true);
    await sweep();
    // act
    const done = await settle('t5-complete', locked, 'complete');
    clock.advance(30 * MINUTE);
    await sweep();
    // assess
    expect(done.status).toBe(204);
    expect(await messageItems(deps, 't5-complete', 'active')).toEqual([]);
    expect(await peek(dlq('t5-complete'))).toEqual([]);
  });

  it('T5: a completed message is never dead-lettered for expiry, even when completed after expiresAt with no sweeper before', async () => {
    const { locked } = await lockedPastExpiry('t5-complete-nosweep', true);
    expect((await settle('t5-complete-nosweep', locked, 'complete')).status).toBe(204);
    clock.advance(DAY);
    await sweep();
    expect(await receive('/queues/t5-complete-nosweep')).toEqual([]);
    expect(await peek(dlq('t5-complete-nosweep'))).toEqual([]);
  });

  it('T5: the lock of a message past expiresAt can be renewed: lockedUntil = now + lockDuration', async () => {
    // prepare
    const { locked } = await lockedPastExpiry('t5-renew', true);
    // act
    const renewed = await settle('t5-renew', locked, 'renew-lock');
    // assess
    expect(renewed.status).toBe(200);
    expect(renewed.body.lockedUntil).toBe(new Date(clock.now() + 5 * MINUTE).toISOString());
    clock.advance(4 * MINUTE); // past the first lock, within the renewed one
    await sweep();
    expect((await settle('t5-renew', locked, 'complete')).status).toBe(204);
    expect(await peek(dlq('t5-renew'))).toEqual([]);
  });

  it('T5/R4: a locked message past expiresAt can be dead-lettered by the application (its reason, not TTLExpiredException)', async () => {
    const { sent, locked } = await lockedPastExpiry('t5-deadletter', true);
    const res = await settle('t5-deadletter', locked, 'deadletter', { deadLetterReason: 'app-reason', deadLetterErrorDescription: 'app says no' });
    expect(res.status).toBe(204);
    const dead = await peek(dlq('t5-deadletter'));
    expect(dead.map((m) => [m.messageId, m.deadLetterReason, m.deadLetterErrorDescription])).toEqual([[sent.messageId, 'app-reason', 'app says no']]);
    expect(await messageItems(deps, 't5-deadletter', 'active')).toEqual([]);
  });

  it('T5/T8: a locked message past expiresAt can be deferred, and then never expires', async () => {
    // prepare
    const { sent, locked } = await lockedPastExpiry('t5-defer', true);
    // act
    const res = await settle('t5-defer', locked, 'defer');
    clock.advance(10 * DAY);
    await sweep();
    // assess
    expect(res.status).toBe(204);
    expect(await peek(dlq('t5-defer'))).toEqual([]);
    const got = await api('POST', '/queues/t5-defer/messages/deferred', { sequenceNumbers: [sent.sequenceNumber] });
    expect(got.status).toBe(200);
    expect(got.body.messages.map((m: Msg) => m.messageId)).toEqual([sent.messageId]);
    expect((await settle('t5-defer', got.body.messages[0], 'complete')).status).toBe(204);
  });

  it('T5/T6: abandon after expiresAt expires it at once: dead-lettered with TTLExpiredException when deadLetteringOnMessageExpiration', async () => {
    // prepare
    const { sent, locked } = await lockedPastExpiry('t5-abandon-on', true);
    // act
    const res = await settle('t5-abandon-on', locked, 'abandon');
    // assess
    expect(res.status).toBe(204);
    expect(await receive('/queues/t5-abandon-on')).toEqual([]);
    expect(await messageItems(deps, 't5-abandon-on', 'active')).toEqual([]);
    const dead = await peek(dlq('t5-abandon-on'));
    expect(dead.map((m) => [m.messageId, m.deadLetterReason, m.enqueuedSequenceNumber])).toEqual([
      [sent.messageId, 'TTLExpiredException', sent.sequenceNumber],
    ]);
  });

  it('T5/T6: abandon after expiresAt expires it at once: gone without deadLetteringOnMessageExpiration', async () => {
    const { locked } = await lockedPastExpiry('t5-abandon-off', false);
    expect((await settle('t5-abandon-off', locked, 'abandon')).status).toBe(204);
    expect(await messageItems(deps, 't5-abandon-off', 'active')).toEqual([]);
    expect(await peek(dlq('t5-abandon-off'))).toEqual([]);
  });

  it('T5/T7: the lock running out after expiresAt expires it once the sweeper looks (dead-lettered when asked)', async () => {
    // prepare
    const { sent, locked } = await lockedPastExpiry('t5-lapse-sweep-on', true, { todays: true });
    await sweep(); // still locked: nothing happens
    expect(await peek(dlq('t5-lapse-sweep-on'))).toEqual([]);
    clock.current = Date.parse(locked.lockedUntil); // the lock runs out
    // act
    await sweep();
    // assess
    expect(await messageItems(deps, 't5-lapse-sweep-on', 'active')).toEqual([]);
    expect((await peek(dlq('t5-lapse-sweep-on'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'TTLExpiredException']]);
    expect((await settle('t5-lapse-sweep-on', locked, 'complete')).status).toBe(410);
  });

  it('T5/T7: the lock running out after expiresAt deletes it once the sweeper looks (no dead-lettering)', async () => {
    const { locked } = await lockedPastExpiry('t5-lapse-sweep-off', false, { todays: true });
    clock.current = Date.parse(locked.lockedUntil) + SECOND;
    await sweep();
    expect(await messageItems(deps, 't5-lapse-sweep-off', 'active')).toEqual([]);
    expect(await peek(dlq('t5-lapse-sweep-off'))).toEqual([]);
    expect((await settle('t5-lapse-sweep-off', locked, 'complete')).status).toBe(410);
  });

  it('T5/T7 on a ticketed queue: the lock running out after expiresAt deletes it once the quarter-hourly pass looks (no dead-lettering)', async () => {
    const { locked } = await lockedPastExpiry('t5-lapse-pass-off', false);
    expect(await queueItem(deps, 't5-lapse-pass-off')).toMatchObject({ layout: 'positions', ticketed: true });
    expect(await messageItems(deps, 't5-lapse-pass-off', 'active')).toHaveLength(1); // the check below sees a ticketed queue's message
    clock.current = nextPositionedPass(Date.parse(locked.lockedUntil) + SECOND);
    await sweep();
    expect(await messageItems(deps, 't5-lapse-pass-off', 'active')).toEqual([]);
    expect(await peek('/queues/t5-lapse-pass-off')).toEqual([]);
    expect(await peek(dlq('t5-lapse-pass-off'))).toEqual([]);
    expect((await settle('t5-lapse-pass-off', locked, 'complete')).status).toBe(410);
  });

  it('T5/T4: the lock running out after expiresAt: a receive that looks returns nothing and expires it (dead-lettered when asked)', async () => {
    // prepare
    const { sent, locked } = await lockedPastExpiry('t5-lapse-receive', true);
    clock.current = Date.parse(locked.lockedUntil) + SECOND;
    // act
    const got = await receive('/queues/t5-lapse-receive', { mode: 'receiveAndDelete' });
    // assess
    expect(got).toEqual([]);
    expect(await messageItems(deps, 't5-lapse-receive', 'active')).toEqual([]);
    expect((await peek(dlq('t5-lapse-receive'))).map((m) => [m.messageId, m.deadLetterReason])).toEqual([[sent.messageId, 'TTLExpiredException']]);
  });

  it('T5: the ttl attribute is absent while locked and restored on abandon (before expiry)', async () => {
    // prepare
    await createIndexQueue('t5-ttl-attr', { lockDuration: 'PT1M' });
    const sent = await send('t5-ttl-attr', { body: 'x', timeToLive: 'PT10M' });
    const expiresAt = Date.parse(sent.expiresAt);
    const stored = await messageItem(deps, 't5-ttl-attr', 'active', sent.sequenceNumber);
    expect(stored?.ttl).toBe(ttlSeconds(expiresAt));
    expect(stored!.ttl! * 1000).toBeGreaterThan(expiresAt); // DynamoDB TTL never acts before expiresAt
    // act: lock
    const locked = await receiveOne('/queues/t5-ttl-attr');
    const whileLocked = await messageItem(deps, 't5-ttl-attr', 'active', sent.sequenceNumber);
    // act: renew keeps it off
    clock.advance(30 * SECOND);
    expect((await settle('t5-ttl-attr', locked, 'renew-lock')).status).toBe(200);
    const afterRenew = await messageItem(deps, 't5-ttl-attr', 'active', sent.sequenceNumber);
    // act: abandon
    expect((await settle('t5-ttl-attr', locked, 'abandon')).status).toBe(204);
    const afterAbandon = await messageItem(deps, 't5-ttl-attr', 'active', sent.sequenceNumber);
    // assess
    expect(whileLocked).toBeDefined();
    expect(whileLocked!.ttl).toBeUndefined();
    expect(afterRenew!.ttl).toBeUndefined();
    expect(afterAbandon!.ttl).toBe(ttlSeconds(expiresAt));
    expect(afterAbandon!.lockToken).toBeUndefined();
  });
});

describe('T8: deferred messages are not expired', () => {
  it('T8: a deferred message never expires; its stored item has no ttl attribute and is off the agenda', async () => {
    // prepare
    await createQueue('t8-deferred', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await send('t8-deferred', { body: { keep: true } });
    const locked = await receiveOne('/queues/t8-deferred');
    expect((await settle('t8-deferred', locked, 'defer')).status).toBe(204);
    // act
    clock.advance(365 * DAY);
    await sweep();
    const stored = await messageItem(deps, 't8-deferred', 'active', sent.sequenceNumber);
    const peeked = await peek('/queues/t8-deferred');
    const ordinary = await receive('/queues/t8-deferred');
    const byNumber = await api('POST', '/queues/t8-deferred/messages/deferred', { sequenceNumbers: [sent.sequenceNumber] });
    // assess
    expect(stored).toBeDefined();
    expect(stored!.ttl).toBeUndefined();
    expect(stored!.dpk).toBeUndefined();
    expect(stored!.state).toBe('Deferred');
    expect(peeked.map((m) => [m.messageId, m.state])).toEqual([[sent.messageId, 'Deferred']]);
    expect(ordinary).toEqual([]);
    expect(await peek(dlq('t8-deferred'))).toEqual([]);
    expect(byNumber.status).toBe(200);
    expect(byNumber.body.messages).toHaveLength(1);
    expect(byNumber.body.messages[0]).toMatchObject({ messageId: sent.messageId, body: { keep: true } });
    expect((await settle('t8-deferred', byNumber.body.messages[0], 'complete')).status).toBe(204);
  });

  it('T8: a deferred message received by number, abandoned after its nominal expiry, stays deferred (not expired)', async () => {
    await createQueue('t8-abandon', { defaultMessageTimeToLive: 'PT1M' });
    const sent = await send('t8-abandon', { body: 1 });
    expect((await settle('t8-abandon', await receiveOne('/queues/t8-abandon'), 'defer')).status).toBe(204);
    clock.advance(10 * MINUTE);
    const got = await api('POST', '/queues/t8-abandon/messages/deferred', { sequenceNumbers: [sent.sequenceNumber] });
    expect(got.body.messages).toHaveLength(1);
    expect((await settle('t8-abandon', got.body.messages[0], 'abandon')).status).toBe(204);
    clock.advance(DAY);
    await sweep();
    const stored = await messageItem(deps, 't8-abandon', 'active', sent.sequenceNumber);
    expect(stored?.state).toBe('Deferred');
    expect(stored?.ttl).toBeUndefined();
  });
});

describe('T9/D6: dead-lettered messages never expire', () => {
  it('T9/D6: an application dead-letter of a short-lived message stays in the DLQ for years; no ttl, no agenda entry; the sweeper never touches it', async () => {
    // prepare
    await createQueue('t9-app', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await send('t9-app', { body: 'keep me' });
    const locked = await receiveOne('/queues/t9-app');
    expect((await settle('t9-app', locked, 'deadletter', { deadLetterReason: 'r' })).status).toBe(204);
    const [dead] = await peek(dlq('t9-app'));
    // act
    clock.advance(3 * 365 * DAY);
    await sweep();
    await sweep();
    // assess
    const stored = await messageItem(deps, 't9-app', 'deadletter', dead.sequenceNumber);
    expect(stored).toBeDefined();
    expect(stored!.ttl).toBeUndefined();
    expect(stored!.expiresAt).toBeUndefined();
    expect(stored!.dpk).toBeUndefined();
    expect(dead.expiresAt).toBeNull();
    const got = await receive(dlq('t9-app'), { mode: 'receiveAndDelete' });
    expect(got.map((m) => m.messageId)).toEqual([sent.messageId]);
  });

  it('T9/D6: a message dead-lettered for expiry (TTLExpiredException) is not expired again', async () => {
    await createQueue('t9-ttl', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const sent = await send('t9-ttl', { body: 1 });
    clock.advance(2 * MINUTE);
    expect(await receive('/queues/t9-ttl')).toEqual([]); // the receive dead-letters it
    const [dead] = await peek(dlq('t9-ttl'));
    expect(dead).toMatchObject({ messageId: sent.messageId, deadLetterReason: 'TTLExpiredException' });
    clock.advance(1000 * DAY);
    await sweep();
    const stored = await messageItem(deps, 't9-ttl', 'deadletter', dead.sequenceNumber);
    expect(stored?.ttl).toBeUndefined();
    expect(stored?.dpk).toBeUndefined();
    const locked = await receive(dlq('t9-ttl'));
    expect(locked.map((m) => m.messageId)).toEqual([sent.messageId]);
    // abandoned in the DLQ long after its nominal expiry: still there (T9), not gone
    expect((await api('POST', `${dlq('t9-ttl')}/messages/${locked[0].sequenceNumber}/abandon`, { lockToken: locked[0].lockToken })).status).toBe(204);
    expect((await peek(dlq('t9-ttl'))).map((m) => m.messageId)).toEqual([sent.messageId]);
  });
});
