/**
 * Topics' subscriptions on the positioned layout, end to end through the API on DynamoDB
 * Local: a topic send's fan-out draws each positioned subscription's copy onto its positions
 * (deliver.ts, positioned-send.ts `writeWithPositions`), beside copies in today's layout, S7's
 * marker and fan-outs too large for one transaction; scheduled copies stay in today's layout
 * (S6). Every verb on a subscription then works as on a positioned queue (positioned-queue
 * test): receive in both modes, peek, each settlement, counts, purge and deleteMessages,
 * forwarding out of a subscription (F2, F3), resubmit (D7), and the reaper clearing a deleted
 * subscription's or topic's positions, counters, cursors and leases (E4). A fan-out that dies
 * or is refused part-way delivers every copy once or none (S1, S7).
 */
import { PutCommand, ScanCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { both, faultyDeps, inputOf, is, transactionConflict, type Fault } from '../support/faults.js';
import { isLeaseToken } from '../../lib/store/leases.js';
import { isPositionedSeq } from '../../lib/store/sequence.js';
import { entityKey, positionedPk } from '../../lib/store/keys.js';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { createBroker } from '../../lib/broker/index.js';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { availableIn } from '../../lib/notifications/hints.js';
import { hintFilterPatterns } from '../../lib/store/stream-filter.js';
import { passesFilters } from '../../infra/local/event-filter.js';
import type { StoredMessageItem } from '../../lib/store/message-layout.js';
import { insertRecord } from '../support/stream.js';
import { indexLayout } from '../support/default-layout.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 7, 0));
let base: Awaited<ReturnType<typeof testDeps>>;
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let api: ReturnType<typeof apiClient>;
/** The same table, with today's layout for new entities. */
let todayApi: ReturnType<typeof apiClient>;
let broker: ReturnType<typeof createBroker>;
let topics = 0;

beforeAll(async () => {
  base = { ...(await testDeps(clock, 'possubs')), ...indexLayout };
  deps = { ...base, newEntityLayout: positionedLayout };
  api = apiClient(deps);
  todayApi = apiClient(base);
  broker = createBroker(deps);
});

async function put(path: string, body: Record<string, unknown> = {}, client = api) {
  const made = await client('PUT', path, body);
  expect(made.status, JSON.stringify(made.body)).toBeLessThan(300);
}

/** A new topic with subscriptions `subs` (positioned unless made by `todayApi`), each with `props`. */
async function topicWith(subs: string[], props: Record<string, unknown> = {}, topicProps: Record<string, unknown> = {}, client = api) {
  const topic = `pt${++topics}`;
  await put(`/topics/${topic}`, topicProps);
  for (const s of subs) await put(`/topics/${topic}/subscriptions/${s}`, { lockDuration: 'PT30S', ...props }, client);
  return topic;
}

const sub = (topic: string, name: string) => `/topics/${topic}/subscriptions/${name}`;

async function publish(topic: string, message: Record<string, unknown>, client = api) {
  const sent = await client('POST', `/topics/${topic}/messages`, message);
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  return sent.body as Json;
}

async function receive(path: string, body: Record<string, unknown> = {}, client = api): Promise<Json[]> {
  const res = await client('POST', `${path}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages: 10, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.messages as Json[];
}

const settle = (path: string, m: Json, verb: string, body: Record<string, unknown> = {}) =>
  api('POST', `${path}/messages/${m.sequenceNumber}/${verb}`, { lockToken: m.lockToken, ...body });
const bodiesOf = (messages: Json[]) => messages.map((m) => m.body as string);
const positionedSeqs = (messages: Json[]) => messages.map((m) => isPositionedSeq(BigInt(m.sequenceNumber as string)));

async function subscriptionItem(topic: string, name: string) {
  const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('subscription', name, topic), ConsistentRead: true }));
  return got.Item as { eid: string; layout?: string } | undefined;
}

/** Items at a subscription's positions (messages and tombstones). */
async function atPositions(eid: string) {
  const got = await deps.db.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': positionedPk(eid, 'active', 0) },
      ConsistentRead: true,
    }),
  );
  return (got.Items ?? []) as Json[];
}

async function runtime(path: string) {
  const got = await api('GET', path);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return got.body.runtime as Json;
}

/** Every item of the table whose key names incarnation `eid`. */
async function leftOf(eid: string): Promise<string[]> {
  const keys: string[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.db.send(new ScanCommand({ TableName: deps.tableName, ExclusiveStartKey: start, ConsistentRead: true }));
    for (const i of page.Items ?? []) if (String(i.pk).includes(eid)) keys.push(`${i.pk as string} ${i.sk as string}${retiredCounter(i) ? ' (retired)' : ''}`);
    start = page.LastEvaluatedKey;
  } while (start);
  return keys;
}

/** E4: what the reaper leaves on purpose: a partition's counter turned into a marker that refuses late draws, gone by its ttl (store/positions.ts `retireCounter`). */
const retiredCounter = (i: Record<string, unknown>) => String(i.pk).startsWith('posnext/') && i.gone === 1 && typeof i.ttl === 'number';
/** What a reaped positioned entity leaves: its partitions' retired counters, and nothing else. */
const onlyRetiredCounters = (eid: string, partitions = 1) => Array.from({ length: partitions }, (_, p) => `posnext/pos/${eid}/a/${p} next (retired)`);

describe('E2: the layout switch and subscriptions', () => {
  it("E2: a new subscription without sessions is positioned; a session subscription and the topic keep today's layout", async () => {
    const topic = await topicWith(['plain']);
    await put(sub(topic, 'sessioned'), { requiresSession: true });
    expect((await subscriptionItem(topic, 'plain'))?.layout).toBe('positions');
    expect((await subscriptionItem(topic, 'sessioned'))?.layout).toBeUndefined();
    const got = await api('GET', sub(topic, 'plain'));
    expect(JSON.stringify(got.body)).not.toContain('layout');
  });
});

describe('F1: a topic send fans out onto positioned subscriptions', () => {
  it('F1, R1, R4: every subscription gets its copy at a position, received under a lease and completed', async () => {
    const topic = await topicWith(['a', 'b', 'c']);
    const sent = await publish(topic, { body: 'hello' });
    expect([...(sent.subscriptions as string[])].sort()).toEqual(['a', 'b', 'c']);
    for (const s of ['a', 'b', 'c']) {
      const got = await receive(sub(topic, s));
      expect(bodiesOf(got)).toEqual(['hello']);
      expect(positionedSeqs(got)).toEqual([true]);
      expect(isLeaseToken(got[0]!.lockToken as string)).toBe(true);
      expect((await settle(sub(topic, s), got[0]!, 'complete')).status).toBe(204);
      expect(await receive(sub(topic, s))).toEqual([]);
    }
  });

  it("H1: a copy's put at a subscription's position wakes that subscription's watchers", async () => {
    const topic = await topicWith(['w']);
    await publish(topic, { body: 'wake' });
    const eid = (await subscriptionItem(topic, 'w'))!.eid;
    const [copy] = (await atPositions(eid)) as StoredMessageItem[];
    const put = insertRecord(copy!, { at: clock.now() });
    expect(passesFilters(hintFilterPatterns, put)).toBe(true);
    expect(availableIn([put], clock.now())).toEqual(new Map([[`topics/${topic}/subscriptions/w`, eid]]));
  });

  it('R2: receive-and-delete on a positioned subscription takes the copies in order, once', async () => {
    const topic = await topicWith(['a']);
    for (const body of ['one', 'two', 'three']) await publish(topic, { body });
    expect(bodiesOf(await receive(sub(topic, 'a'), { mode: 'receiveAndDelete' }))).toEqual(['one', 'two', 'three']);
    expect(await receive(sub(topic, 'a'))).toEqual([]);
  });

  it("F1: a positioned subscription and one in today's layout get their copies from one send, each in its own layout", async () => {
    const topic = await topicWith(['pos']);
    await put(sub(topic, 'today'), { lockDuration: 'PT30S' }, todayApi);
    expect((await subscriptionItem(topic, 'today'))?.layout).toBeUndefined();
    await publish(topic, { body: 'both' });
    expect(positionedSeqs(await receive(sub(topic, 'pos'), { mode: 'receiveAndDelete' }))).toEqual([true]);
    const today = await receive(sub(topic, 'today'), { mode: 'receiveAndDelete' });
    expect(bodiesOf(today)).toEqual(['both']);
    expect(positionedSeqs(today)).toEqual([false]);
  });

  it('F1: filters choose the subscriptions and rule actions change each copy at its position', async () => {
    const topic = await topicWith(['red', 'blue', 'all']);
    for (const [s, filter, action] of [
      ['red', "color = 'red'", "SET tagged = 'r'"],
      ['blue', "color = 'blue'", undefined],
    ] as const) {
      expect((await api('DELETE', `${sub(topic, s)}/rules/$Default`)).status).toBe(204);
      await put(`${sub(topic, s)}/rules/only`, { filter: { sql: filter }, ...(action ? { action: { sql: action } } : {}) });
    }
    const sent = await publish(topic, { body: 'r1', applicationProperties: { color: 'red' } });
    expect([...(sent.subscriptions as string[])].sort()).toEqual(['all', 'red']);
    const [red] = await receive(sub(topic, 'red'), { mode: 'receiveAndDelete' });
    expect(red).toMatchObject({ body: 'r1', applicationProperties: { color: 'red', tagged: 'r' } });
    expect(positionedSeqs([red])).toEqual([true]);
    expect(await receive(sub(topic, 'blue'))).toEqual([]);
    const [all] = await receive(sub(topic, 'all'), { mode: 'receiveAndDelete' });
    expect(all!.applicationProperties).toEqual({ color: 'red' });
  });

  it('F1: rules changed while messages wait leave the waiting copies; later sends follow the new rules', async () => {
    const topic = await topicWith(['s']);
    await publish(topic, { body: 'before', applicationProperties: { n: 1 } });
    expect((await api('DELETE', `${sub(topic, 's')}/rules/$Default`)).status).toBe(204);
    await put(`${sub(topic, 's')}/rules/big`, { filter: { sql: 'n > 5' } });
    await publish(topic, { body: 'small', applicationProperties: { n: 2 } });
    await publish(topic, { body: 'big', applicationProperties: { n: 9 } });
    expect(bodiesOf(await receive(sub(topic, 's'), { mode: 'receiveAndDelete' }))).toEqual(['before', 'big']);
  });

  it('S7: a duplicate-detecting topic stores one copy per subscription for a repeated message id, and answers the repeat', async () => {
    const topic = await topicWith(['a', 'b'], {}, { requiresDuplicateDetection: true });
    await publish(topic, { body: 'first', messageId: 'dup' });
    await publish(topic, { body: 'again', messageId: 'dup' });
    for (const s of ['a', 'b']) {
      const got = await receive(sub(topic, s), { mode: 'receiveAndDelete' });
      expect(bodiesOf(got)).toEqual(['first']);
      expect(positionedSeqs(got)).toEqual([true]);
    }
  });

  it("S2, S6: a scheduled topic send stays in today's layout (taking no position), is cancelled by its one number, and is received when due", async () => {
    const topic = await topicWith(['a', 'b']);
    const at = new Date(clock.now() + 60 * SECOND).toISOString();
    const cancelled = await publish(topic, { body: 'never', scheduledEnqueueTime: at });
    const kept = await publish(topic, { body: 'later', scheduledEnqueueTime: at });
    const a = await subscriptionItem(topic, 'a');
    // S2: each copy's number is drawn from its subscription's counter without a position: nothing for receivers to pass over.
    expect(await atPositions(a!.eid)).toEqual([]);
    expect((await api('DELETE', `/topics/${topic}/messages/scheduled/${cancelled.sequenceNumber}`)).status).toBe(204);
    expect(kept.sequenceNumber).toBeDefined();
    expect(await receive(sub(topic, 'a'))).toEqual([]);
    clock.advance(61 * SECOND);
    await broker.sweep();
    for (const s of ['a', 'b']) {
      const got = await receive(sub(topic, s), { mode: 'receiveAndDelete' });
      expect(bodiesOf(got)).toEqual(['later']);
    }
  });

  it('S1: a fan-out too large for one transaction (more than 4 MB of copies) puts every copy, each once', async () => {
    const names = Array.from({ length: 18 }, (_, i) => `s${i}`);
    const topic = await topicWith(names);
    const body = 'x'.repeat(250 * 1024);
    const sent = await publish(topic, { body });
    expect((sent.subscriptions as string[]).length).toBe(18);
    for (const s of names) {
      const got = await receive(sub(topic, s), { mode: 'receiveAndDelete' });
      expect(got.map((m) => (m.body as string).length)).toEqual([body.length]);
      expect(positionedSeqs(got)).toEqual([true]);
    }
  });

  it('S1, S7: a fan-out of more than 100 copies on a duplicate-detecting topic puts each once; its repeat is a duplicate', async () => {
    const names = Array.from({ length: 101 }, (_, i) => `s${i}`);
    const topic = await topicWith(names, {}, { requiresDuplicateDetection: true });
    expect(((await publish(topic, { body: 'wide', messageId: 'w' })).subscriptions as string[]).length).toBe(101);
    await publish(topic, { body: 'repeat', messageId: 'w' });
    for (const s of [names[0]!, names[57]!, names[100]!]) {
      const got = await receive(sub(topic, s), { mode: 'receiveAndDelete' });
      expect(bodiesOf(got)).toEqual(['wide']);
      expect(positionedSeqs(got)).toEqual([true]);
    }
    // The listing's counts read each subscription's positions: the three received, the rest wait.
    const active: number[] = [];
    for (let next: string | null = null, first = true; first || next; first = false) {
      const page = await api('GET', `/topics/${topic}/subscriptions?top=100${next ? `&next=${next}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      active.push(...(page.body.items as Json[]).map((i) => i.runtime.activeMessageCount as number));
      next = page.body.next as string | null;
    }
    expect(active.filter((n) => n === 1).length).toBe(98);
    expect(active.filter((n) => n === 0).length).toBe(3);
  });
});

describe('a positioned subscription through every verb', () => {
  it('R4, R5, R9: abandon brings a copy back counted again, renew extends its lease, and a repeat settles nothing', async () => {
    const topic = await topicWith(['s']);
    const path = sub(topic, 's');
    for (const body of ['a', 'b']) await publish(topic, { body });
    const [a, b] = await receive(path);
    expect((await settle(path, a!, 'abandon', { propertiesToModify: { step: 2 } })).status).toBe(204);
    expect((await settle(path, a!, 'complete')).status).toBe(410);
    clock.advance(20 * SECOND);
    expect((await settle(path, b!, 'renew-lock')).status).toBe(200);
    const [again] = await receive(path, { maxMessages: 1 });
    expect(again).toMatchObject({ body: 'a', deliveryCount: 2, applicationProperties: { step: 2 } });
    clock.advance(15 * SECOND);
    expect((await settle(path, b!, 'complete')).status).toBe(204);
    const res = await api('POST', `${path}/messages/complete`, { lockTokens: [again!.lockToken, again!.lockToken] });
    // One result per token (R9); the two completes of one token run together, so either may be the one that wins.
    expect(res.body.results.map((r: Json) => String(r.ok ?? r.error.code)).sort()).toEqual(['MessageLockLost', 'true']);
  });

  it('R7, D1: a deferred copy is received by number; a dead-lettered one waits in the subscription’s dead-letter subqueue', async () => {
    const topic = await topicWith(['s']);
    const path = sub(topic, 's');
    for (const body of ['later', 'bad']) await publish(topic, { body });
    const [later, bad] = await receive(path);
    expect((await settle(path, later!, 'defer')).status).toBe(204);
    expect((await settle(path, bad!, 'deadletter', { deadLetterReason: 'test', deadLetterErrorDescription: 'why' })).status).toBe(204);
    const got = await api('POST', `${path}/messages/deferred`, { sequenceNumbers: [later!.sequenceNumber] });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body.messages[0]).toMatchObject({ body: 'later', sequenceNumber: later!.sequenceNumber });
    expect((await settle(path, got.body.messages[0], 'complete')).status).toBe(204);
    const [dead] = await receive(`${path}/$deadletterqueue`);
    expect(dead).toMatchObject({ body: 'bad', deadLetterReason: 'test', deadLetterErrorDescription: 'why' });
    expect((await settle(`${path}/$deadletterqueue`, dead!, 'complete')).status).toBe(204);
  });

  it('D2, T6: past maxDeliveryCount or its time to live a copy is dead-lettered at the next claim, not handed out', async () => {
    const topic = await topicWith(['s'], { maxDeliveryCount: 1, deadLetteringOnMessageExpiration: true });
    const path = sub(topic, 's');
    await publish(topic, { body: 'poison' });
    await publish(topic, { body: 'short', timeToLive: 'PT10S' });
    await publish(topic, { body: 'fine', timeToLive: 'PT1H' });
    expect(bodiesOf(await receive(path, { maxMessages: 1 }))).toEqual(['poison']);
    clock.advance(LOCK + SECOND);
    expect(bodiesOf(await receive(path, { mode: 'receiveAndDelete' }))).toEqual(['fine']);
    const dead = await receive(`${path}/$deadletterqueue`, { mode: 'receiveAndDelete' });
    expect(dead.map((m) => [m.body, m.deadLetterReason]).sort()).toEqual([
      ['poison', 'MaxDeliveryCountExceeded'],
      ['short', 'TTLExpiredException'],
    ]);
  });

  it("R8, E6: peek shows what is left, and the subscription's runtime and its topic's listing count it", async () => {
    const topic = await topicWith(['s', 'other']);
    const path = sub(topic, 's');
    for (const body of ['a', 'b', 'c']) await publish(topic, { body });
    const [a] = await receive(path, { maxMessages: 1 });
    expect((await settle(path, a!, 'complete')).status).toBe(204);
    const peeked = await api('GET', `${path}/messages?maxMessages=10`);
    expect(bodiesOf(peeked.body.messages)).toEqual(['b', 'c']);
    expect(await runtime(path)).toMatchObject({ activeMessageCount: 2, totalMessageCount: 2 });
    expect((await runtime(path)).sizeInBytes).toBeGreaterThan(0);
    const listed = await api('GET', `/topics/${topic}/subscriptions`);
    expect((listed.body.items as Json[]).map((i) => [i.name, i.runtime.activeMessageCount])).toEqual([
      ['other', 3],
      ['s', 2],
    ]);
  });

  it('R11: deleteMessages and purge on a subscription take what waits at its positions, and only that', async () => {
    const topic = await topicWith(['s', 'other']);
    const path = sub(topic, 's');
    for (const body of ['old1', 'old2']) await publish(topic, { body });
    clock.advance(SECOND);
    const cutoff = new Date(clock.now()).toISOString();
    clock.advance(SECOND);
    await publish(topic, { body: 'new' });
    expect((await api('POST', `${path}/messages/delete`, { maxMessageCount: 100, beforeEnqueueTime: cutoff })).body.deleted).toBe(2);
    expect(bodiesOf(await receive(path, { mode: 'peekLock', maxMessages: 1 }))).toEqual(['new']);
    clock.advance(LOCK + SECOND);
    expect((await api('DELETE', `${path}/messages`)).body.purged).toBe(1);
    expect(await receive(path)).toEqual([]);
    expect(bodiesOf(await receive(sub(topic, 'other'), { mode: 'receiveAndDelete' }))).toEqual(['old1', 'old2', 'new']);
  });
});

describe('R8, E6: what the explorer and the CLI read of a positioned subscription', () => {
  it('R8, D7: paged peeks from a sequence number, rules, runtime, resubmit by number and a single take', async () => {
    const topic = await topicWith(['s']);
    const path = sub(topic, 's');
    for (const body of ['a', 'b', 'c', 'd', 'e']) await publish(topic, { body });
    // The explorer's peek: pages of 2, each from the last number shown plus one.
    const seen: string[] = [];
    for (let from = '0'; ;) {
      const page = await api('GET', `${path}/messages?fromSequenceNumber=${from}&maxMessages=2`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      const messages = page.body.messages as Json[];
      if (messages.length === 0) break;
      seen.push(...bodiesOf(messages));
      from = (BigInt(messages[messages.length - 1]!.sequenceNumber as string) + 1n).toString();
    }
    expect(seen).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(((await api('GET', `${path}/rules`)).body.items as Json[]).map((r) => r.name)).toEqual(['$Default']);
    expect(await runtime(path)).toMatchObject({ activeMessageCount: 5 });
    const [a] = await receive(path, { maxMessages: 1 });
    expect((await settle(path, a!, 'deadletter', { deadLetterReason: 'look' })).status).toBe(204);
    const [dead] = (await api('GET', `${path}/$deadletterqueue/messages?maxMessages=10`)).body.messages as Json[];
    const resubmitted = await api('POST', `${path}/$deadletterqueue/resubmit`, { sequenceNumbers: [dead!.sequenceNumber] });
    expect(resubmitted.body).toMatchObject({ resubmitted: 1 });
    expect(await runtime(path)).toMatchObject({ activeMessageCount: 5 });
    expect(bodiesOf(await receive(path, { mode: 'receiveAndDelete', maxMessages: 1 }))).toEqual(['b']);
  });
});

describe('forwarding out of and into a positioned subscription', () => {
  it('F2: a subscription that forwards to a positioned queue puts its copies on the queue’s positions, none on its own', async () => {
    await put('/queues/psq-fwd', { lockDuration: 'PT30S' });
    const topic = await topicWith(['fwd'], { forwardTo: 'psq-fwd' });
    await publish(topic, { body: 'onward' });
    const got = await receive('/queues/psq-fwd', { mode: 'receiveAndDelete' });
    expect(bodiesOf(got)).toEqual(['onward']);
    expect(positionedSeqs(got)).toEqual([true]);
    expect(await atPositions((await subscriptionItem(topic, 'fwd'))!.eid)).toEqual([]);
  });

  it('F3, D1: a dead letter of a positioned subscription forwarded to a positioned queue lands on a position with its reason', async () => {
    await put('/queues/psq-dead', { lockDuration: 'PT30S' });
    const topic = await topicWith(['s'], { forwardDeadLetteredMessagesTo: 'psq-dead' });
    await publish(topic, { body: 'bad' });
    const [m] = await receive(sub(topic, 's'));
    expect((await settle(sub(topic, 's'), m!, 'deadletter', { deadLetterReason: 'test' })).status).toBe(204);
    const got = await receive('/queues/psq-dead', { mode: 'receiveAndDelete' });
    expect(got[0]).toMatchObject({ body: 'bad', deadLetterReason: 'test' });
    expect(positionedSeqs(got)).toEqual([true]);
  });

  it("D7: resubmitting a subscription's dead letters puts them back on its positions, in line with later sends", async () => {
    const topic = await topicWith(['s']);
    const path = sub(topic, 's');
    await publish(topic, { body: 'first' });
    const [m] = await receive(path);
    expect((await settle(path, m!, 'deadletter', { deadLetterReason: 'test' })).status).toBe(204);
    expect((await api('POST', `${path}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1, remaining: false });
    await publish(topic, { body: 'second' });
    const got = await receive(path, { mode: 'receiveAndDelete' });
    expect(bodiesOf(got)).toEqual(['first', 'second']);
    expect(positionedSeqs(got)).toEqual([true, true]);
  });

  it('F2: a queue that forwards to a topic fans its messages out onto positioned subscriptions', async () => {
    const topic = await topicWith(['a']);
    await put('/queues/psq-into', { forwardTo: `topics/${topic}` });
    expect((await api('POST', '/queues/psq-into/messages', { body: 'via' })).status).toBe(201);
    const got = await receive(sub(topic, 'a'), { mode: 'receiveAndDelete' });
    expect(bodiesOf(got)).toEqual(['via']);
    expect(positionedSeqs(got)).toEqual([true]);
  });
});

describe('E4: the reaper clears what a deleted positioned subscription leaves', () => {
  /** A subscription with a message held under a lease, one waiting, and one tombstoned hole. */
  async function busy(topic: string, name: string) {
    const path = sub(topic, name);
    for (const body of ['held', 'waiting']) await publish(topic, { body });
    expect(bodiesOf(await receive(path, { maxMessages: 1 }))).toEqual(['held']);
    const eid = (await subscriptionItem(topic, name))!.eid;
    expect((await leftOf(eid)).length).toBeGreaterThan(3);
    return eid;
  }

  async function reapAll() {
    for (let i = 0; i < 5; i++) if ((await broker.reap()).complete && (await broker.reap()).tombstonesCleared === 0) break;
  }

  it('E4: deleting a subscription leaves nothing of its positions, cursor or leases once reaped, its counter only retired', async () => {
    const topic = await topicWith(['gone', 'stays']);
    const eid = await busy(topic, 'gone');
    expect((await api('DELETE', sub(topic, 'gone'))).status).toBe(204);
    await reapAll();
    expect(await leftOf(eid)).toEqual(onlyRetiredCounters(eid));
    expect(bodiesOf(await receive(sub(topic, 'stays'), { mode: 'receiveAndDelete' }))).toEqual(['held', 'waiting']);
  });

  it("E4: deleting a topic clears every positioned subscription's positions, cursor and leases, and retires its counter", async () => {
    const topic = await topicWith(['a', 'b']);
    const eids = [await busy(topic, 'a'), (await subscriptionItem(topic, 'b'))!.eid];
    expect((await api('DELETE', `/topics/${topic}`)).status).toBe(204);
    await reapAll();
    for (const eid of eids) expect(await leftOf(eid)).toEqual(onlyRetiredCounters(eid));
  });
});

describe('S1, S7: a fan-out onto positions that dies or is refused part-way', () => {
  /** The draw of a subscription's positions: its counter's update. */
  const isDraw = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('posnext/'));
  /** The transaction that puts the copies at their positions. */
  const isFanOut = both(is(TransactWriteCommand), (c) =>
    ((inputOf(c).TransactItems ?? []) as { Put?: { Item?: { pk?: unknown } } }[]).some((t) => String(t.Put?.Item?.pk ?? '').startsWith('pos/')),
  );
  const faulty = (fault: Fault) => apiClient(faultyDeps(deps, fault));

  /** What each subscription delivers once every hole has aged. */
  async function delivered(topic: string, subs: string[]) {
    clock.advance(HOLE_AFTER_MS);
    const out: Record<string, string[]> = {};
    for (const s of subs) out[s] = bodiesOf(await receive(sub(topic, s), { mode: 'receiveAndDelete' }));
    return out;
  }

  it('S1: dying after the first draw stores nothing; the holes are passed and the retry reaches each subscription once', async () => {
    const topic = await topicWith(['a', 'b']);
    const res = await faulty({ match: isDraw, phase: 'after' })('POST', `/topics/${topic}/messages`, { body: 'm' });
    expect(res.status).toBe(500);
    await publish(topic, { body: 'm' });
    expect(await delivered(topic, ['a', 'b'])).toEqual({ a: ['m'], b: ['m'] });
  });

  it('S1: dying before the transaction leaves no copy anywhere; the retry reaches each subscription once', async () => {
    const topic = await topicWith(['a']);
    await put(sub(topic, 'today'), { lockDuration: 'PT30S' }, todayApi);
    const res = await faulty({ match: isFanOut })('POST', `/topics/${topic}/messages`, { body: 'm' });
    expect(res.status).toBe(500);
    expect(await delivered(topic, ['a', 'today'])).toEqual({ a: [], today: [] });
    await publish(topic, { body: 'm' });
    expect(await delivered(topic, ['a', 'today'])).toEqual({ a: ['m'], today: ['m'] });
  });

  it('S7: dying after the transaction (the answer lost), the retry with its message id is a duplicate: one copy each', async () => {
    const topic = await topicWith(['a', 'b'], {}, { requiresDuplicateDetection: true });
    const res = await faulty({ match: isFanOut, phase: 'after' })('POST', `/topics/${topic}/messages`, { body: 'm', messageId: 'once' });
    expect(res.status).toBe(500);
    await publish(topic, { body: 'm', messageId: 'once' });
    expect(await delivered(topic, ['a', 'b'])).toEqual({ a: ['m'], b: ['m'] });
  });

  it('S1, S7: a fan-out past 4 MB that dies after some of its puts loses no copy; the retry records the id, so a third send is a duplicate', async () => {
    const names = Array.from({ length: 18 }, (_, i) => `s${i}`);
    const topic = await topicWith(names, {}, { requiresDuplicateDetection: true });
    const body = 'y'.repeat(250 * 1024);
    const isPositionedPut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('pos/') && !inputOf(c).Item?.tomb);
    const res = await faulty({ match: isPositionedPut, nth: 5, phase: 'after' })('POST', `/topics/${topic}/messages`, { body, messageId: 'big' });
    expect(res.status).toBe(500);
    // Not acknowledged: the retry is stored (the marker was never written), then the id counts.
    await publish(topic, { body, messageId: 'big' });
    await publish(topic, { body: 'third', messageId: 'big' });
    clock.advance(HOLE_AFTER_MS);
    let copies = 0;
    for (const s of names) {
      const got = await receive(sub(topic, s), { mode: 'receiveAndDelete' });
      copies += got.length;
      // At least once, as today's large fan-out: a subscription the dead send reached has its copy twice.
      expect(got.length).toBeGreaterThanOrEqual(1);
      expect(got.length).toBeLessThanOrEqual(2);
      for (const m of got) expect((m.body as string).length).toBe(body.length);
    }
    // The dead send's fifth put had gone through: at least five subscriptions hold both.
    expect(copies).toBeGreaterThanOrEqual(names.length + 5);
  });

  it('S1: a transaction the store refuses (a conflict past its retries) stores no copy; the retry reaches each once', async () => {
    const topic = await topicWith(['a', 'b']);
    const refusing = faulty({
      match: isFanOut,
      times: 10,
      interleave: () => Promise.reject(transactionConflict(3)),
    });
    const res = await refusing('POST', `/topics/${topic}/messages`, { body: 'm' });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await delivered(topic, ['a', 'b'])).toEqual({ a: [], b: [] });
    await publish(topic, { body: 'm' });
    expect(await delivered(topic, ['a', 'b'])).toEqual({ a: ['m'], b: ['m'] });
  });
});
