/**
 * What the write-ahead send tests (E4, E5: a single send and a batch) share: a world of its own
 * per call (a ManualClock, a table and the queue `q` made by `other`, another process), the
 * sending process with its own client (another Lambda instance) whose message puts are
 * recorded, the predicates that pick out the take-back and the entity read, and looks past the
 * API at what an incarnation stores. Nothing here is module state: workers keep modules between
 * files.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import type { Deps } from '../../lib/deps.js';
import { entityKey, messagePk } from '../../lib/store/keys.js';
import { apiClient, type Json } from './api.js';
import { faultyStore, type StoreCall, type StoreFaultPlan } from './dynamo-faults.js';
import { faultyClient, inputOf, is, type Fault } from './faults.js';
import { ManualClock, testDeps } from './table.js';

export type TestDeps = Awaited<ReturnType<typeof testDeps>>;
export type Api = ReturnType<typeof apiClient>;

export const isMessagePut = (c: unknown) => is(PutCommand)(c) && String(inputOf(c).Item?.pk ?? '').startsWith('msg/');
/** The take-back: the one delete conditioned on a message never having been handed out. */
export const isTakeBack = (c: unknown) => is(DeleteCommand)(c) && String(inputOf(c).ConditionExpression ?? '').includes('deliveryCount = :zero');
export const takeBackCall = (c: StoreCall) => c.operation === 'DeleteItem' && String(c.input.ConditionExpression ?? '').includes('deliveryCount = :zero');
export const queueReadCall = (c: StoreCall) => c.operation === 'GetItem' && c.input.Key?.pk?.S === 'queues' && c.input.Key?.sk?.S === 'q';

/**
 * A clock and table of their own, with the queue `q` (5 min locks) made by `other`. `layout`
 * (default-layout.ts `indexLayout`) pins the layout a test of the write ahead needs: only
 * today's writes ahead, a positioned send puts nothing until its entity read agrees.
 */
export async function sendAheadWorld(prefix: string, layout: Pick<Deps, 'newEntityLayout'> = {}) {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  const deps = { ...(await testDeps(clock, prefix)), ...layout };
  const other = apiClient(deps);
  expect((await other('PUT', '/queues/q', { lockDuration: 'PT5M' })).status).toBe(201);
  return { clock, deps, other };
}

/**
 * A world whose sending process goes through a faultyStore with `plan` (filled in by the test
 * later), after `first` has had it read the entity once.
 */
export async function faultyWorld(prefix: string, plan: StoreFaultPlan, first: (api: Api) => Promise<void>, layout: Pick<Deps, 'newEntityLayout'> = {}) {
  const w = await sendAheadWorld(prefix, layout);
  const store = faultyStore(w.deps.db, plan, { fastRetries: true });
  const api = apiClient({ ...w.deps, db: store.db });
  await first(api);
  return { ...w, api, log: store.log, eid: await eidOf(w.deps) };
}

/** The sending process: its own client, with `fault` on it and every message put recorded (the partition it went to). */
export function sender(deps: Deps, fault: Fault = { match: () => false }) {
  const puts: string[] = [];
  const recording = faultyClient(deps.db, {
    match: isMessagePut,
    times: Infinity,
    phase: 'after',
    interleave: async (c) => void puts.push(inputOf(c).Item.pk),
  });
  const { db } = faultyClient(recording.db, fault);
  return { api: apiClient({ ...deps, db }), puts };
}

/** The incarnation of `q` now ('' when there is none). */
export const eidOf = async (deps: TestDeps): Promise<string> => {
  const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', 'q'), ConsistentRead: true }));
  return (got.Item?.eid as string | undefined) ?? '';
};

/** The message ids stored under an incarnation's active partition, whatever its entity's state, in stored order. */
export async function storedIn(deps: TestDeps, eid: string): Promise<string[]> {
  const got = await deps.db.send(
    new QueryCommand({
      TableName: deps.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messagePk(eid, 'active', 0) },
      ConsistentRead: true,
    }),
  );
  return (got.Items ?? []).map((i) => i.messageId as string);
}

/** The ids a peek of `q` shows, in its order. */
export const peekIds = async (api: Api) => ((await api('GET', '/queues/q/messages?maxMessages=100')).body.messages as Json[]).map((m) => m.messageId as string);

export async function reapAll(deps: TestDeps) {
  const reaper = createReaperHandler(deps);
  for (let run = 0; run < 4; run++) await reaper();
}
