/**
 * A positioned queue end to end through the API on DynamoDB Local: sent into positions,
 * received by claim cursor and lease, and every settlement of either layout dispatched on its
 * token (store/leases.ts `isLeaseToken`): complete, abandon (single and batch), renew, defer
 * with receive-deferred, dead-letter with the dead-letter subqueue, D2 at a claim and T6 at a
 * claim. The store-level tests of each part are in positioned-send, positioned-receive,
 * lease-settlements, positioned-settle and positioned-expiry; this file proves they meet.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { isLeaseToken } from '../../lib/store/leases.js';
import { eidOf, positionedIn } from '../support/positioned-queues.js';
import { isPositionedSeq } from '../../lib/store/sequence.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 7, 0));
let api: ReturnType<typeof apiClient>;
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'posqueue')), newEntityLayout: positionedLayout };
  api = apiClient(deps);
});

async function newQueue(props: Record<string, unknown> = {}) {
  const name = `pq${++queues}`;
  const made = await api('PUT', `/queues/${name}`, { lockDuration: 'PT30S', ...props });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return name;
}

async function sendBatch(q: string, bodies: string[], extra: Record<string, unknown> = {}) {
  const sent = await api('POST', `/queues/${q}/messages/batch`, { messages: bodies.map((body) => ({ body, ...extra })) });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
}

async function receive(path: string, body: Record<string, unknown> = {}): Promise<Json[]> {
  const res = await api('POST', `${path}/messages/receive`, { maxWaitTime: 'PT0S', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as Json[];
}

const settle = (path: string, m: Json, verb: string, body: Record<string, unknown> = {}) =>
  api('POST', `${path}/messages/${m.sequenceNumber}/${verb}`, { lockToken: m.lockToken, ...body });
const bodiesOf = (messages: Json[]) => messages.map((m) => m.body as string);

describe('a positioned queue through the API', () => {
  it('T4: a send written in a transaction (duplicate detection) puts no ttl on its positions', async () => {
    // DynamoDB's TTL would empty the position, a receiver would take it for a crashed sender's
    // hole, and the whole request would be voided: an expired message goes by claim instead.
    const q = await newQueue({ requiresDuplicateDetection: true, defaultMessageTimeToLive: 'PT1H' });
    const sent = await api('POST', `/queues/${q}/messages/batch`, { messages: ['a', 'b'].map((body) => ({ body, messageId: `id-${body}` })) });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const stored = await positionedIn(deps, await eidOf(deps, q));
    expect(stored.map((i) => i.sk).length).toBe(2);
    for (const item of stored) expect(item).not.toHaveProperty('ttl');
  });

  it("R8, R3: a peek shows each message's deliveries, the one a lease holds now included", async () => {
    const q = await newQueue();
    await sendBatch(q, ['a', 'b']);
    const counts = async () => {
      const res = await api('GET', `/queues/${q}/messages?fromSequenceNumber=0&maxMessages=10`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.messages as Json[]).map((m) => [m.body, m.deliveryCount]);
    };
    expect(await counts()).toEqual([
      ['a', 0],
      ['b', 0],
    ]);
    const [a] = await receive(`/queues/${q}`, { maxMessages: 1 });
    expect(await counts()).toEqual([
      ['a', 1],
      ['b', 0],
    ]);
    expect((await settle(`/queues/${q}`, a!, 'abandon')).status).toBeLessThan(300);
    expect(await counts()).toEqual([
      ['a', 1],
      ['b', 0],
    ]);
    const again = await receive(`/queues/${q}`, { maxMessages: 2 });
    expect(again.map((m) => [m.body, m.deliveryCount])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    expect(await counts()).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    clock.advance(LOCK + SECOND);
    // Lapsed: the deliveries stay counted, before and after the take-back a receive makes.
    expect(await counts()).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    await receive(`/queues/${q}`, { maxMessages: 10, mode: 'receiveAndDelete' });
    expect(await counts()).toEqual([]);
  });

  it('R1, R4: sent messages come back in order under lease tokens, and a batch complete removes them', async () => {
    const q = await newQueue();
    await sendBatch(q, ['a', 'b', 'c']);
    const got = await receive(`/queues/${q}`, { maxMessages: 10 });
    expect(bodiesOf(got)).toEqual(['a', 'b', 'c']);
    for (const m of got) {
      expect(isPositionedSeq(BigInt(m.sequenceNumber as string))).toBe(true);
      expect(isLeaseToken(m.lockToken as string)).toBe(true);
      expect(m.deliveryCount).toBe(1);
    }
    const done = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: got.map((m) => m.lockToken) });
    expect(
      done.body.results.every((r: Json) => r.ok === true),
      JSON.stringify(done.body),
    ).toBe(true);
    expect(await receive(`/queues/${q}`)).toEqual([]);
  });

  it('R4, R5: an abandoned message comes back first, counted again; its old token settles nothing', async () => {
    const q = await newQueue();
    await sendBatch(q, ['a', 'b']);
    const [a] = await receive(`/queues/${q}`);
    expect((await settle(`/queues/${q}`, a!, 'abandon', { propertiesToModify: { step: 2 } })).status).toBe(204);
    expect((await settle(`/queues/${q}`, a!, 'complete')).status).toBe(410);
    const again = await receive(`/queues/${q}`, { maxMessages: 2 });
    expect(bodiesOf(again)).toEqual(['a', 'b']);
    expect(again[0]).toMatchObject({ deliveryCount: 2, applicationProperties: { step: 2 } });
    for (const m of again) expect((await settle(`/queues/${q}`, m, 'complete')).status).toBe(204);
  });

  it('R9: a batch abandon of lease tokens answers each, and a repeat of one is MessageLockLost', async () => {
    const q = await newQueue();
    await sendBatch(q, ['a', 'b', 'c']);
    const got = await receive(`/queues/${q}`, { maxMessages: 3 });
    const res = await api('POST', `/queues/${q}/messages/abandon`, { lockTokens: [got[0]!.lockToken, got[1]!.lockToken, got[0]!.lockToken] });
    expect(res.body.results.map((r: Json) => r.ok ?? r.error.code)).toEqual([true, true, 'MessageLockLost']);
    const again = await receive(`/queues/${q}`, { maxMessages: 3 });
    expect(bodiesOf(again)).toEqual(['a', 'b']);
    expect((await settle(`/queues/${q}`, got[2]!, 'complete')).status).toBe(204);
  });

  it('R4, R5: a renewed lock outlives the lock end its token states; past the renewed end the complete fails', async () => {
    const q = await newQueue();
    await sendBatch(q, ['a', 'b']);
    const [a, b] = await receive(`/queues/${q}`, { maxMessages: 2 });
    clock.advance(20 * SECOND);
    const renewed = await settle(`/queues/${q}`, a!, 'renew-lock');
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect(Date.parse(renewed.body.lockedUntil)).toBe(clock.now() + LOCK);
    clock.advance(15 * SECOND);
    // Past the lock end both tokens state: b's lapsed (R5), a's renewed lock holds (R4).
    expect((await settle(`/queues/${q}`, b!, 'complete')).status).toBe(410);
    expect((await settle(`/queues/${q}`, a!, 'complete')).status).toBe(204);
    expect(bodiesOf(await receive(`/queues/${q}`))).toEqual(['b']);
  });

  it("R7: a deferred message is received by its number through today's receive-deferred, and completed under that lock", async () => {
    const q = await newQueue();
    await sendBatch(q, ['later', 'now']);
    const [first] = await receive(`/queues/${q}`);
    expect((await settle(`/queues/${q}`, first!, 'defer')).status).toBe(204);
    expect(bodiesOf(await receive(`/queues/${q}`))).toEqual(['now']);
    const got = await api('POST', `/queues/${q}/messages/deferred`, { sequenceNumbers: [first!.sequenceNumber] });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    const [deferred] = got.body.messages as Json[];
    expect(deferred).toMatchObject({ body: 'later', sequenceNumber: first!.sequenceNumber });
    expect(isLeaseToken(deferred!.lockToken as string)).toBe(false);
    expect((await settle(`/queues/${q}`, deferred!, 'complete')).status).toBe(204);
  });

  it('D1: a dead-lettered message is in the dead-letter subqueue with its reason, and settles there', async () => {
    const q = await newQueue();
    await sendBatch(q, ['bad']);
    const [m] = await receive(`/queues/${q}`);
    expect((await settle(`/queues/${q}`, m!, 'deadletter', { deadLetterReason: 'test', deadLetterErrorDescription: 'why' })).status).toBe(204);
    expect(await receive(`/queues/${q}`)).toEqual([]);
    const [dead] = await receive(`/queues/${q}/$deadletterqueue`);
    expect(dead).toMatchObject({ body: 'bad', deadLetterReason: 'test', deadLetterErrorDescription: 'why' });
    expect((await settle(`/queues/${q}/$deadletterqueue`, dead!, 'complete')).status).toBe(204);
  });

  it('D2: a message whose locks lapsed maxDeliveryCount times is dead-lettered at the next claim, not handed out', async () => {
    const q = await newQueue({ maxDeliveryCount: 2 });
    await sendBatch(q, ['poison', 'fine']);
    expect(bodiesOf(await receive(`/queues/${q}`))).toEqual(['poison']);
    clock.advance(LOCK + SECOND);
    const second = await receive(`/queues/${q}`);
    expect(second[0]).toMatchObject({ body: 'poison', deliveryCount: 2 });
    clock.advance(LOCK + SECOND);
    expect(bodiesOf(await receive(`/queues/${q}`))).toEqual(['fine']);
    const [dead] = await receive(`/queues/${q}/$deadletterqueue`);
    expect(dead).toMatchObject({ body: 'poison', deadLetterReason: 'MaxDeliveryCountExceeded' });
  });

  it('T4, T6: an expired message is never handed out; with dead-lettering on expiry it reaches the dead-letter subqueue', async () => {
    const q = await newQueue({ deadLetteringOnMessageExpiration: true });
    await sendBatch(q, ['short'], { timeToLive: 'PT10S' });
    await sendBatch(q, ['long']);
    clock.advance(11 * SECOND);
    expect(bodiesOf(await receive(`/queues/${q}`, { maxMessages: 5 }))).toEqual(['long']);
    const [dead] = await receive(`/queues/${q}/$deadletterqueue`);
    expect(dead).toMatchObject({ body: 'short', deadLetterReason: 'TTLExpiredException' });
  });

  it("R8: peek shows what is left in order, and a count of the queue's active messages follows settlements", async () => {
    const q = await newQueue();
    await sendBatch(q, ['a', 'b', 'c']);
    const [a] = await receive(`/queues/${q}`);
    expect((await settle(`/queues/${q}`, a!, 'complete')).status).toBe(204);
    const peeked = await api('GET', `/queues/${q}/messages?maxMessages=10`);
    expect(bodiesOf(peeked.body.messages)).toEqual(['b', 'c']);
    const view = await api('GET', `/queues/${q}`);
    expect(view.body.runtime.activeMessageCount).toBe(2);
  });

  it('R11: deleteMessages takes what was enqueued before its cutoff, up to its count, and leaves a locked message to its holder', async () => {
    const q = await newQueue();
    await sendBatch(q, ['held', 'old1', 'old2', 'old3']);
    const [held] = await receive(`/queues/${q}`);
    clock.advance(SECOND);
    const cutoff = new Date(clock.now()).toISOString();
    clock.advance(SECOND);
    await sendBatch(q, ['new']);
    const two = await api('POST', `/queues/${q}/messages/delete`, { maxMessageCount: 2, beforeEnqueueTime: cutoff });
    expect(two.body.deleted).toBe(2);
    const rest = await api('POST', `/queues/${q}/messages/delete`, { maxMessageCount: 100, beforeEnqueueTime: cutoff });
    expect(rest.body.deleted).toBe(1);
    // The message after the cutoff was never claimed: first in line, delivered once.
    const [next] = await receive(`/queues/${q}`);
    expect(next).toMatchObject({ body: 'new', deliveryCount: 1 });
    expect((await settle(`/queues/${q}`, held!, 'complete')).status).toBe(204);
    expect((await settle(`/queues/${q}`, next!, 'abandon')).status).toBe(204);
    const purged = await api('DELETE', `/queues/${q}/messages`);
    expect(purged.body.purged).toBe(1);
    expect(await receive(`/queues/${q}`)).toEqual([]);
  });
});
