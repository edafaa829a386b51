/**
 * Ready marks: an empty receive on a 16-partition queue reads the entity and one small
 * item, not 16 partitions of the ready index; and no message ever hides behind a missing
 * mark (R2): not after a clear, not when a send races a clearing receive, not when a send dies
 * between its mark and its put (D3-style crash tests with an injected fault).
 */
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { choosePartition } from '../../lib/broker/message-items.js';
import { CLEAR_AFTER_MS } from '../../lib/broker/ready-marks.js';
import { brokerContext } from '../../lib/broker/context.js';
import { reap } from '../../lib/broker/reaper.js';
import { entityKey, POSITIONED_PK_PREFIX, readyMarksKey } from '../../lib/store/keys.js';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { MAX_PARTITIONS } from '../../lib/store/sequence.js';
import { apiClient } from '../support/api.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { ManualClock, testDeps } from '../support/table.js';
import { indexLayout } from '../support/default-layout.js';

type Deps = Awaited<ReturnType<typeof testDeps>>;
const clock = new ManualClock(Date.UTC(2031, 0, 1, 12, 0, 0));
let deps: Deps;
let api: ReturnType<typeof apiClient>;
/** The same table with today's layout for new queues (default-layout.ts `indexLayout`). */
let indexApi: ReturnType<typeof apiClient>;
let counter = 0;

beforeAll(async () => {
  deps = await testDeps(clock, 'marks');
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
});

/** A partitioned queue, made by `client` (the default layout unless it is `indexApi`). */
async function newQueue(props: Record<string, unknown> = {}, client = api): Promise<string> {
  const name = `rm${++counter}`;
  const created = await client('PUT', `/queues/${name}`, { enablePartitioning: true, ...props });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return name;
}

const eidOf = async (q: string) => (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', q) }))).Item!.eid as string;
const marksOf = async (q: string) => {
  const item = (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: readyMarksKey(await eidOf(q)), ConsistentRead: true }))).Item;
  return item
    ? Object.keys(item)
        .filter((k) => /^p\d+$/.test(k))
        .sort()
    : undefined;
};
const receive = (client: typeof api, q: string, maxMessages = 1) => client('POST', `/queues/${q}/messages/receive`, { maxMessages, mode: 'receiveAndDelete' });
/** A client whose DynamoDB calls matching `fault` are counted (never failed) or faulted. */
const counting = (match: Fault['match']) => {
  const d = faultyDeps(deps, { match, nth: Number.MAX_SAFE_INTEGER });
  return { client: apiClient(d), log: d.faults };
};
const isMarkClear = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression).startsWith('REMOVE'));
/** Calls other than the authorization rules' (read once per handler instance). */
const notAuth = (c: unknown) => inputOf(c).Key?.pk !== 'auth';
const partitionOf = (key: string) => choosePartition({ partitions: MAX_PARTITIONS }, { partitionKey: key });

describe('ready marks: an empty partitioned receive costs one read of the marks', () => {
  it('R2: a never-used partitioned queue is received from without a single Query', async () => {
    const q = await newQueue();
    const { client, log } = counting(both(is(QueryCommand, GetCommand), notAuth));

    const got = await receive(client, q);

    expect(got.status).toBe(200);
    expect(got.body.messages).toEqual([]);
    expect(log.seen).toBe(2); // the entity and its marks: 0.5 + 0.5 read units
    expect(await marksOf(q)).toEqual([]);
  });

  it('R2: messages in many partitions are all received; drained partitions lose their marks only once old enough', async () => {
    const q = await newQueue();
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`);
    expect((await api('POST', `/queues/${q}/messages/batch`, { messages: keys.map((k) => ({ body: k, partitionKey: k })) })).status).toBe(201);
    const marked = [...new Set(keys.map(partitionOf))].map((p) => `p${p}`).sort();
    expect(await marksOf(q)).toEqual(marked);

    const bodies: string[] = [];
    for (let i = 0; i < 10 && bodies.length < keys.length; i++) bodies.push(...(await receive(api, q, 100)).body.messages.map((m: { body: string }) => m.body));
    expect(bodies.sort()).toEqual([...keys].sort());
    // Empty now, but the marks are recent: a put behind one of them may still be on its way.
    expect((await receive(api, q)).body.messages).toEqual([]);
    expect(await marksOf(q)).toEqual(marked);

    clock.advance(CLEAR_AFTER_MS + 1);
    expect((await receive(api, q)).body.messages).toEqual([]);
    expect(await marksOf(q)).toEqual([]);
    const { client, log } = counting(both(is(QueryCommand), notAuth));
    expect((await receive(client, q)).body.messages).toEqual([]);
    expect(log.seen).toBe(0);

    // A partition marked again after its clear is read again.
    expect((await api('POST', `/queues/${q}/messages`, { body: 'again', partitionKey: 'key-7' })).status).toBe(201);
    expect(await marksOf(q)).toEqual([`p${partitionOf('key-7')}`]);
    expect((await receive(api, q)).body.messages.map((m: { body: string }) => m.body)).toEqual(['again']);
  });

  it('R2: locked and scheduled messages keep their partition marked', async () => {
    const q = await newQueue({ lockDuration: 'PT1M' });
    const later = new Date(clock.now() + 2 * CLEAR_AFTER_MS).toISOString();
    expect((await api('POST', `/queues/${q}/messages`, { body: 'locked', partitionKey: 'a' })).status).toBe(201);
    expect((await api('POST', `/queues/${q}/messages`, { body: 'scheduled', partitionKey: 'b', scheduledEnqueueTime: later })).status).toBe(201);
    const locked = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: 1 });
    expect(locked.body.messages[0].body).toBe('locked');

    clock.advance(CLEAR_AFTER_MS + 1); // the lock has lapsed, the schedule not yet
    const again = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: 1 });
    expect(again.body.messages.map((m: { body: string }) => m.body)).toEqual(['locked']);
    expect(await marksOf(q)).toEqual([`p${partitionOf('a')}`, `p${partitionOf('b')}`].sort());

    clock.advance(CLEAR_AFTER_MS);
    const due = await receive(api, q, 10);
    expect(due.body.messages.map((m: { body: string }) => m.body).sort()).toEqual(['locked', 'scheduled']);
  });
});

describe('ready marks: every way into a partition marks it', () => {
  it('D7: a message resubmitted from the dead-letter subqueue into a cleared partition is received', async () => {
    const q = await newQueue();
    expect((await api('POST', `/queues/${q}/messages`, { body: 'twice', partitionKey: 'k' })).status).toBe(201);
    const [m] = (await api('POST', `/queues/${q}/messages/receive`, {})).body.messages;
    expect((await api('POST', `/queues/${q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken })).status).toBe(204);
    clock.advance(CLEAR_AFTER_MS + 1);
    expect((await receive(api, q)).body.messages).toEqual([]);
    expect(await marksOf(q)).toEqual([]);

    // This process marked that partition over REMARK_MS ago: the resubmit marks it again.
    expect((await api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {})).body).toMatchObject({ resubmitted: 1 });

    expect((await marksOf(q))!.length).toBe(1);
    expect((await receive(api, q)).body.messages.map((x: { body: string }) => x.body)).toEqual(['twice']);
  });
});

describe('ready marks: races and crashes never hide a message', () => {
  it('R2: a send that marks the partition while a receive is clearing it keeps its mark, and its message is received', async () => {
    const q = await newQueue();
    expect((await api('POST', `/queues/${q}/messages`, { body: 'first', partitionKey: 'k' })).status).toBe(201);
    expect((await receive(api, q)).body.messages).toHaveLength(1);
    clock.advance(CLEAR_AFTER_MS + 1);
    // Between the receive's empty read and its clear, another request marks and puts.
    const racing = faultyDeps(deps, {
      match: isMarkClear,
      interleave: async () => {
        expect((await api('POST', `/queues/${q}/messages`, { body: 'racer', partitionKey: 'k' })).status).toBe(201);
      },
    });

    expect((await receive(apiClient(racing), q)).body.messages).toEqual([]);

    expect(racing.faults.tripped).toBe(1);
    expect(await marksOf(q)).toEqual([`p${partitionOf('k')}`]);
    expect((await receive(api, q)).body.messages.map((m: { body: string }) => m.body)).toEqual(['racer']);
  });

  it('R2: a receive while a send is between its mark and its put does not clear the mark', async () => {
    const q = await newQueue();
    const isPut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('msg/'));
    const slow = faultyDeps(deps, {
      match: isPut,
      interleave: async () => {
        // The put is on its way; everything a receive can see says the partition is empty.
        clock.advance(CLEAR_AFTER_MS - 1);
        expect((await receive(api, q)).body.messages).toEqual([]);
      },
    });

    expect((await apiClient(slow)('POST', `/queues/${q}/messages`, { body: 'slow', partitionKey: 'k' })).status).toBe(201);

    expect(await marksOf(q)).toEqual([`p${partitionOf('k')}`]);
    expect((await receive(api, q)).body.messages.map((m: { body: string }) => m.body)).toEqual(['slow']);
  });

  it('S1: a send that dies before its mark is durable stores nothing; one that dies after it leaves a mark a later receive clears', async () => {
    // Today's layout (indexLayout): the faults strike today's send, its mark and then its msg/ put.
    const q = await newQueue({}, indexApi);
    const isMark = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('ready/'));
    const beforeMark = faultyDeps(deps, { match: isMark });
    const failed = await apiClient(beforeMark)('POST', `/queues/${q}/messages`, { body: 'lost', partitionKey: 'k' });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await marksOf(q)).toEqual([]);

    const isPut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith('msg/'));
    const afterMark = faultyDeps(deps, { match: isPut });
    expect((await apiClient(afterMark)('POST', `/queues/${q}/messages`, { body: 'lost too', partitionKey: 'j' })).status).toBeGreaterThanOrEqual(500);
    expect(await marksOf(q)).toEqual([`p${partitionOf('j')}`]);

    // The retry of the acknowledged-never send lands and is received.
    expect((await api('POST', `/queues/${q}/messages`, { body: 'retried', partitionKey: 'j' })).status).toBe(201);
    expect((await receive(api, q, 10)).body.messages.map((m: { body: string }) => m.body)).toEqual(['retried']);
    clock.advance(CLEAR_AFTER_MS + 1);
    expect((await receive(api, q)).body.messages).toEqual([]);
    expect(await marksOf(q)).toEqual([]);
  });

  it('S1: on a ticketed queue, a send that dies before its mark stores nothing; one that dies after it leaves a mark a later receive clears', async () => {
    const q = await newQueue({}, apiClient({ ...deps, newEntityLayout: 'tickets' }));
    expect((await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', q) }))).Item).toMatchObject({
      layout: 'positions',
      ticketed: true,
    });
    const isMark = both(is(UpdateCommand), (c) => String(inputOf(c).Key?.pk ?? '').startsWith('ready/'));
    const failed = await apiClient(faultyDeps(deps, { match: isMark }))('POST', `/queues/${q}/messages`, { body: 'lost', partitionKey: 'k' });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await marksOf(q)).toEqual([]);

    const isPositionPut = both(is(PutCommand), (c) => String(inputOf(c).Item?.pk ?? '').startsWith(POSITIONED_PK_PREFIX));
    const afterMark = faultyDeps(deps, { match: isPositionPut });
    expect((await apiClient(afterMark)('POST', `/queues/${q}/messages`, { body: 'lost too', partitionKey: 'j' })).status).toBeGreaterThanOrEqual(500);
    expect(await marksOf(q)).toEqual([`p${partitionOf('j')}`]);

    // The retry lands behind the dead send's drawn position, a hole receivers pass once it ages.
    expect((await api('POST', `/queues/${q}/messages`, { body: 'retried', partitionKey: 'j' })).status).toBe(201);
    clock.advance(HOLE_AFTER_MS + 1);
    expect((await receive(api, q, 10)).body.messages.map((m: { body: string }) => m.body)).toEqual(['retried']);
    clock.advance(CLEAR_AFTER_MS + 1);
    expect((await receive(api, q)).body.messages).toEqual([]);
    expect(await marksOf(q)).toEqual([]);
  });

  it('E4: the marks go with a deleted queue; a queue of the same name starts with none', async () => {
    const q = await newQueue();
    const oldEid = await eidOf(q);
    expect((await api('POST', `/queues/${q}/messages`, { body: 'gone', partitionKey: 'k' })).status).toBe(201);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    expect((await api('PUT', `/queues/${q}`, { enablePartitioning: true })).status).toBe(201);

    expect(await marksOf(q)).toEqual([]);
    expect((await receive(api, q)).body.messages).toEqual([]);
    const old = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: readyMarksKey(oldEid), ConsistentRead: true }));
    expect(old.Item).toBeDefined(); // until the reaper removes the old incarnation's leftovers

    for (let run = 0; run < 3; run++) await reap(brokerContext(deps));
    const after = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: readyMarksKey(oldEid), ConsistentRead: true }));
    expect(after.Item).toBeUndefined();
    expect(await marksOf(q)).toEqual([]); // the new incarnation's marks are its own
  });
});
