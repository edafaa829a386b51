/**
 * H2: a hint subscription needs Listen on an existing entity, checked as a receive is, and
 * lasts as long as that entity incarnation, its token and its rule's key: an entity created
 * again under the same name gives the old subscribers no hints, and each ending is told with
 * a `refused` frame. A connection waits on a bounded number of entities. The notify handler
 * runs for real on DynamoDB Local; hints come from hand-made stream records of real items.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyWebsocketEventV2, DynamoDBStreamEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createNotifyHandler } from '../../functions/notify/handler.js';
import { signToken } from '../../lib/auth/index.js';
import { createBroker } from '../../lib/broker/index.js';
import { ruleStore } from '../../lib/broker/authorization.js';
import { brokerContext } from '../../lib/broker/context.js';
import { hintLapsedLocks } from '../../lib/notifications/hints.js';
import { MAX_SUBSCRIPTIONS_PER_CONNECTION, type ConnectionPoster } from '../../lib/notifications/watchers.js';
import type { ServerFrame } from '../../lib/notifications/protocol.js';
import { connectionKey, positionedPk, watchedKey, watchPk } from '../../lib/store/keys.js';
import { apiClient, TEST_ROOT_KEY } from '../support/api.js';
import { insertRecord, messageItem, queueItem } from '../support/stream.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { OffsetClock } from '../../lib/clock.js';

type Deps = Awaited<ReturnType<typeof testDeps>>;

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
/** Tokens are minted and expire by it (A1, H2): a test moves it rather than sleep. */
const wall = new OffsetClock();
let deps: Deps;
let api: ReturnType<typeof apiClient>;
/** Creates queues in today's layout: `sendAndHint` makes its stream record from a msg/ item. */
let indexApi: ReturnType<typeof apiClient>;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'notify-life')), wallClock: wall };
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
  await ruleStore(brokerContext(deps)).ensureRoot(TEST_ROOT_KEY);
});

/** A poster that keeps what each connection was sent. */
function recordingPoster() {
  const frames = new Map<string, ServerFrame[]>();
  const poster: ConnectionPoster = {
    post: async (id, frame) => {
      frames.set(id, [...(frames.get(id) ?? []), frame]);
      return true;
    },
  };
  return { poster, sent: (id: string) => frames.get(id) ?? [] };
}

const tokenFor = (resource: string, keyName: string, key: string, seconds = 600) =>
  signToken({ resourceUri: `http://localhost/${resource}`, keyName, key, expiresAt: Math.floor(wall.now() / 1000) + seconds });
const rootFor = (resource: string) => tokenFor(resource, 'RootManageSharedAccessKey', TEST_ROOT_KEY);

function notifier(poster: ConnectionPoster) {
  const notify = createNotifyHandler(deps, { poster });
  const subscribe = async (connectionId: string, entity: string, token: string) => {
    const answer = await notify({
      requestContext: { routeKey: 'subscribe', connectionId, connectedAt: Date.now() },
      body: JSON.stringify({ action: 'subscribe', entity, token }),
    } as unknown as APIGatewayProxyWebsocketEventV2);
    return JSON.parse(answer.body!) as ServerFrame;
  };
  /** The stream records a send to `queue` makes, delivered to the notify function. */
  const sendAndHint = async (queue: string) => {
    const sent = await api('POST', `/queues/${queue}/messages`, { body: 'm' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const item = (await messageItem(deps, queue, 'active', sent.body.sequenceNumber))!;
    await notify({ Records: [insertRecord(item, { at: clock.now() })] } as DynamoDBStreamEvent);
  };
  return { notify, subscribe, sendAndHint };
}

async function stored(pk: string) {
  const out = await deps.db.send(new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }));
  return out.Items ?? [];
}

describe('H2: subscriptions need an existing entity', () => {
  it('H2: subscribing to an entity never created, or deleted, answers 404 and stores no watch', async () => {
    const { poster } = recordingPoster();
    const { subscribe } = notifier(poster);
    expect(await subscribe('c1', 'queues/never', rootFor('queues/never'))).toMatchObject({ type: 'refused', entity: 'queues/never', status: 404 });
    expect((await api('PUT', '/queues/gone1', {})).status).toBe(201);
    expect((await api('DELETE', '/queues/gone1')).status).toBe(204);
    expect(await subscribe('c1', 'queues/gone1/$deadletterqueue', rootFor('queues/gone1'))).toMatchObject({ type: 'refused', status: 404 });
    expect(await stored(watchPk('queues/never'))).toEqual([]);
    expect(await stored(watchPk('queues/gone1/$deadletterqueue'))).toEqual([]);
    const watched = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: watchedKey('queues/never') }));
    expect(watched.Item).toBeUndefined();
  });
});

describe('H2: a subscription is to one incarnation', () => {
  it('H2: after delete and create again, the old subscriber gets no hint but a refused frame, and its entity-scoped key cannot subscribe again', async () => {
    const { poster, sent } = recordingPoster();
    const { subscribe, sendAndHint } = notifier(poster);
    expect((await indexApi('PUT', '/queues/again', {})).status).toBe(201);
    const rule = await api('PUT', '/queues/again/authorization-rules/listener', { rights: ['Listen'] });
    expect(rule.status).toBe(201);
    const scoped = tokenFor('queues/again', 'listener', rule.body.primaryKey);
    expect(await subscribe('old', 'queues/again', scoped)).toEqual({ type: 'subscribed', entity: 'queues/again' });
    await sendAndHint('again');
    expect(sent('old')).toEqual([{ type: 'available', entity: 'queues/again' }]);

    expect((await api('DELETE', '/queues/again')).status).toBe(204);
    expect((await indexApi('PUT', '/queues/again', {})).status).toBe(201);
    expect(await subscribe('new', 'queues/again', rootFor('queues/again'))).toEqual({ type: 'subscribed', entity: 'queues/again' });
    await sendAndHint('again');
    expect(sent('new')).toEqual([{ type: 'available', entity: 'queues/again' }]);
    // The old subscriber is told its subscription ended, and hears nothing of the new queue.
    expect(sent('old').slice(1)).toEqual([{ type: 'refused', entity: 'queues/again', status: 404, message: expect.any(String) }]);
    await sendAndHint('again');
    expect(sent('old')).toHaveLength(2);
    expect((await stored(watchPk('queues/again'))).map((w) => w.sk)).toEqual(['new']);
    // B21/A3: the deleted queue's key opens nothing, as over HTTP.
    expect(await subscribe('old', 'queues/again', scoped)).toMatchObject({ type: 'refused', status: 401 });
  });

  it('H2: the sweeper ends the subscriptions of a deleted entity and stops watching it', async () => {
    const { poster, sent } = recordingPoster();
    const { subscribe } = notifier(poster);
    expect((await api('PUT', '/queues/swept', {})).status).toBe(201);
    expect(await subscribe('w', 'queues/swept', rootFor('queues/swept'))).toMatchObject({ type: 'subscribed' });
    expect((await api('DELETE', '/queues/swept')).status).toBe(204);
    const broker = createBroker(deps);
    await hintLapsedLocks(broker.ctx, poster, clock.now() - 60_000);
    expect(sent('w')).toEqual([{ type: 'refused', entity: 'queues/swept', status: 404, message: expect.any(String) }]);
    expect(await stored(watchPk('queues/swept'))).toEqual([]);
    expect((await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: watchedKey('queues/swept') }))).Item).toBeUndefined();
  });
});

describe('H2: a subscription lasts as long as its token and its rule', () => {
  it('H2: once the token has expired, the next hint ends the subscription (401) instead', async () => {
    const { poster, sent } = recordingPoster();
    const { subscribe, sendAndHint } = notifier(poster);
    expect((await indexApi('PUT', '/queues/expiring', {})).status).toBe(201);
    const brief = tokenFor('queues/expiring', 'RootManageSharedAccessKey', TEST_ROOT_KEY, 1);
    expect(await subscribe('e', 'queues/expiring', brief)).toMatchObject({ type: 'subscribed' });
    wall.advance(1000);
    await sendAndHint('expiring');
    expect(sent('e')).toEqual([{ type: 'refused', entity: 'queues/expiring', status: 401, message: expect.any(String) }]);
    expect(await stored(watchPk('queues/expiring'))).toEqual([]);
  });

  it('H2: on a ticketed queue, the hint of a positioned put ends a subscription whose token has expired (401) too', async () => {
    const { poster, sent } = recordingPoster();
    const { notify, subscribe } = notifier(poster);
    expect((await apiClient({ ...deps, newEntityLayout: 'tickets' })('PUT', '/queues/expiring-ticketed', {})).status).toBe(201);
    const brief = tokenFor('queues/expiring-ticketed', 'RootManageSharedAccessKey', TEST_ROOT_KEY, 1);
    expect(await subscribe('t', 'queues/expiring-ticketed', brief)).toMatchObject({ type: 'subscribed' });
    wall.advance(1000);
    expect((await api('POST', '/queues/expiring-ticketed/messages', { body: 'm' })).status).toBe(201);
    const eid = (await queueItem(deps, 'expiring-ticketed'))!.eid;
    const put = (await stored(positionedPk(eid, 'active', 0))).filter((i) => i.messageId !== undefined);
    expect(put).toHaveLength(1);
    await notify({ Records: [insertRecord(put[0] as Parameters<typeof insertRecord>[0], { at: clock.now() })] } as DynamoDBStreamEvent);
    expect(sent('t')).toEqual([{ type: 'refused', entity: 'queues/expiring-ticketed', status: 401, message: expect.any(String) }]);
    expect(await stored(watchPk('queues/expiring-ticketed'))).toEqual([]);
  });

  it('H2: a removed rule, or a regenerated key, ends the subscriptions it allowed at the next hint', async () => {
    expect((await indexApi('PUT', '/queues/ruled', {})).status).toBe(201);
    const one = await api('PUT', '/queues/ruled/authorization-rules/one', { rights: ['Listen'] });
    const two = await api('PUT', '/queues/ruled/authorization-rules/two', { rights: ['Listen'] });
    const { poster, sent } = recordingPoster();
    const first = notifier(poster);
    expect(await first.subscribe('by-one', 'queues/ruled', tokenFor('queues/ruled', 'one', one.body.primaryKey))).toMatchObject({ type: 'subscribed' });
    expect(await first.subscribe('by-two', 'queues/ruled', tokenFor('queues/ruled', 'two', two.body.secondaryKey))).toMatchObject({ type: 'subscribed' });
    expect(await first.subscribe('by-root', 'queues/ruled', rootFor('queues/ruled'))).toMatchObject({ type: 'subscribed' });
    expect((await api('DELETE', '/queues/ruled/authorization-rules/one')).status).toBe(204);
    expect((await api('POST', '/queues/ruled/authorization-rules/two/regenerate', { key: 'secondary' })).status).toBe(200);
    // A notify instance whose rule cache (30 s, as the HTTP path's) has not seen them yet.
    const later = notifier(poster);
    await later.sendAndHint('ruled');
    expect(sent('by-one')).toEqual([{ type: 'refused', entity: 'queues/ruled', status: 401, message: expect.any(String) }]);
    expect(sent('by-two')).toEqual([{ type: 'refused', entity: 'queues/ruled', status: 401, message: expect.any(String) }]);
    expect(sent('by-root')).toEqual([{ type: 'available', entity: 'queues/ruled' }]);
  });
});

describe('H2: a connection waits on a bounded number of entities', () => {
  it(`H2: past ${MAX_SUBSCRIPTIONS_PER_CONNECTION} entities a subscribe is refused with a frame that says why; one already held may be renewed`, async () => {
    const { poster } = recordingPoster();
    const { subscribe } = notifier(poster);
    expect((await api('PUT', '/topics/many', {})).status).toBe(201);
    const names = Array.from({ length: MAX_SUBSCRIPTIONS_PER_CONNECTION + 1 }, (_, i) => `s${i}`);
    for (const name of names) expect((await api('PUT', `/topics/many/subscriptions/${name}`, {})).status).toBe(201);
    const token = rootFor('topics/many');
    for (const name of names.slice(0, -1)) expect(await subscribe('busy', `topics/many/subscriptions/${name}`, token)).toMatchObject({ type: 'subscribed' });
    const past = await subscribe('busy', `topics/many/subscriptions/${names.at(-1)}`, token);
    expect(past).toMatchObject({ type: 'refused', status: 403 });
    expect((past as { message: string }).message).toContain(String(MAX_SUBSCRIPTIONS_PER_CONNECTION));
    expect(await subscribe('busy', 'topics/many/subscriptions/s0', token)).toMatchObject({ type: 'subscribed' });
    const conn = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: connectionKey('busy') }));
    expect((conn.Item!.entities as Set<string>).size).toBe(MAX_SUBSCRIPTIONS_PER_CONNECTION);
  }, 120_000);
});
