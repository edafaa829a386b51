/**
 * A world for the idle-deletion tests (I1-I4): a fresh table and ManualClock, so the entities
 * of one test never become due in another, and a `tick` that is one minute of the
 * deployment's schedule: the stream consumer (runtime counts, only when `counts`), then the
 * reaper. Nothing sleeps for real.
 */
import { expect } from 'vitest';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { createStreamHandler } from '../../functions/stream/handler.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { TOUCH_INTERVAL_MS } from '../../lib/broker/entities.js';
import type { Deps } from '../../lib/deps.js';
import { apiClient } from './api.js';
import { TableStreamReader, deliver as deliverRecords } from './stream.js';
import { ManualClock, testDeps } from './table.js';

/** accessedAt may lag the last use by up to TOUCH_INTERVAL_MS, so deletion waits that much longer (still within I4's 2 minutes). */
export const GRACE = TOUCH_INTERVAL_MS;

/** `newEntityLayout`: the layout the world's new entities get, when the test pins one. */
export async function idleWorld({ prefix, counts = false, ...layout }: { prefix: string; counts?: boolean } & Pick<Deps, 'newEntityLayout'>) {
  const clock = new ManualClock();
  const t0 = clock.now();
  // The stream only where the counts follow it (`pump` reads it).
  const deps = { ...(await testDeps(clock, prefix, undefined, { stream: counts })), ...layout };
  const api = apiClient(deps);
  const reaper = createReaperHandler(deps);
  const sweeper = createSweeperHandler(deps);
  const stream = createStreamHandler(deps);
  const reader = new TableStreamReader(deps);
  /** Moves the clock to t0 + offset (never back). */
  const at = (offset: number) => {
    const target = t0 + offset;
    if (target < clock.now()) throw new Error('the clock never goes back');
    clock.current = target;
    return target;
  };
  /** Counts follow the stream (E6); the reaper reads them for pending scheduled messages. */
  const pump = async () => deliverRecords(stream, await reader.read());
  /** One scheduled minute: stream consumer, reaper. Returns what the reaper deleted. */
  const tick = async (): Promise<string[]> => {
    if (counts) await pump();
    const report = await reaper();
    return report.entitiesDeleted as string[];
  };
  const exists = async (path: string) => {
    const got = await api('GET', path);
    if (got.status !== 200 && got.status !== 404) throw new Error(`GET ${path}: ${got.status} ${JSON.stringify(got.body)}`);
    return got.status === 200;
  };
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await api(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res;
  };
  /** An item read past the API. */
  const raw = async (key: { pk: string; sk: string }) =>
    (await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: key, ConsistentRead: true }))).Item;
  /** Items stored under one partition key. */
  const countItems = async (pk: string) => {
    let n = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await deps.db.send(
        new QueryCommand({
          TableName: deps.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          Select: 'COUNT',
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      n += page.Count ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    return n;
  };
  return { clock, t0, deps, api, reaper, sweeper, pump, tick, at, exists, ok, raw, countItems };
}
export type IdleWorld = Awaited<ReturnType<typeof idleWorld>>;
