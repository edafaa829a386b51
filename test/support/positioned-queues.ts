/**
 * What the positioned send and peek tests share: a world of their own per file (a ManualClock,
 * a table, a deployment whose new queues take the positioned layout), queues named afresh per
 * test, and looks past the API at what an incarnation stores in either layout. Until receive
 * takes positioned messages, they are read back here, from the store. Nothing here is module
 * state: workers keep modules between files.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { entityKey, messagePk, positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import type { PositionedItem } from '../../lib/store/positions.js';
import { apiClient, type Json } from './api.js';
import { faultyClient, type Fault } from './faults.js';
import { ManualClock, testDeps } from './table.js';
import { positionedLayout } from './positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

export type PositionedDeps = Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
export type Api = ReturnType<typeof apiClient>;

export function positionedWorld(prefix: string) {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  let deps!: PositionedDeps;
  let api!: Api;
  let queues = 0;
  const open = async () => {
    deps = { ...(await testDeps(clock, prefix)), newEntityLayout: positionedLayout };
    api = apiClient(deps);
    return { deps, api };
  };
  /** A new queue (positioned, unless `plain`) of its own name, made by `api`. */
  const newQueue = async (properties: Record<string, unknown> = {}, plain = false) => {
    const name = `q${++queues}`;
    const maker = plain ? apiClient({ ...deps, newEntityLayout: 'index' }) : api;
    const made = await maker('PUT', `/queues/${name}`, { lockDuration: 'PT5M', ...properties });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return name;
  };
  /** Another process: its own client, so its own entity reads; `fault` on its calls. */
  const process = (fault: Fault = { match: () => false }) => {
    const { db, log } = faultyClient(deps.db, fault);
    return { api: apiClient({ ...deps, db }), log };
  };
  return { clock, open, newQueue, process, deps: () => deps, api: () => api };
}

/** The incarnation of queue `name` now ('' when there is none). */
export async function eidOf(deps: PositionedDeps, name: string): Promise<string> {
  const got = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: entityKey('queue', name), ConsistentRead: true }));
  return (got.Item?.eid as string | undefined) ?? '';
}

async function everything(deps: PositionedDeps, pk: string): Promise<Record<string, Json>[]> {
  const got = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return (got.Items ?? []) as Record<string, Json>[];
}

/** Every item (messages and tombstones) at the positions of an incarnation's active partition, in position order. */
export const positionedIn = (deps: PositionedDeps, eid: string, partition = 0) =>
  everything(deps, positionedPk(eid, 'active', partition)) as Promise<PositionedItem[]>;

/** The message ids at an incarnation's positions (tombstones left out), in position order. */
export const positionedIds = async (deps: PositionedDeps, eid: string, partition = 0) =>
  (await positionedIn(deps, eid, partition)).filter((i) => !i.tomb).map((i) => i.messageId as string);

/** The items in today's layout of an incarnation's active partition. */
export const todaysIn = (deps: PositionedDeps, eid: string, partition = 0) => everything(deps, messagePk(eid, 'active', partition));

/** How many positions a partition has drawn (its counter), 0 when none. */
export async function drawnIn(deps: PositionedDeps, eid: string, partition = 0): Promise<number> {
  const got = await deps.db.send(
    new GetCommand({ TableName: deps.tableName, Key: positionCounterKey(positionedPk(eid, 'active', partition)), ConsistentRead: true }),
  );
  return Number(got.Item?.next ?? 0);
}

/** The ids a peek of `queue` shows, in its order. */
export const peekIds = async (api: Api, queue: string, query = 'maxMessages=100') => {
  const got = await api('GET', `/queues/${queue}/messages?${query}`);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return (got.body.messages as Json[]).map((m) => m.messageId as string);
};
