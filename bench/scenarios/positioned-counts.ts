/**
 * What a positioned queue's counts (E6, lib/store/positioned-counts.ts) and the sweeper's
 * expiry pass (T7, lib/broker/positioned-expiry.ts) cost one partition, on DynamoDB Local,
 * metered call by call, with the 1 KB JSON event stored as today's send stores it: the read
 * units of one count with nothing, 10 and 1,000 messages waiting (30 of them locked in the
 * last case), and of one pass over a partition whose head is not expired (its claim finds
 * nothing to take), idle and with 1,000 waiting. Neither writes.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { createEnv, type BenchEnv } from '../harness.js';
import { jsonEvent } from '../payloads.js';
import { entityKey, messagePk, positionedPk } from '../../lib/store/keys.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { claim } from '../../lib/store/leases.js';
import { tallyPartition } from '../../lib/store/positioned-counts.js';
import { deleteVoidBelowCursor } from '../../lib/store/position-expiry.js';
import { expiredBy, SWEEP_LOCK_MS, SWEEP_TAKE } from '../../lib/broker/positioned-expiry.js';

const NOT_CARRIED = ['pk', 'sk', 'rpk', 'rsk', 'dpk', 'dsk', 'ttl'];

export interface ReadCost {
  readUnits: number;
  writeUnits: number;
  calls: number;
}

export interface PositionedCountsResult {
  count: { empty: ReadCost; waiting10: ReadCost; waiting1000locked30: ReadCost };
  sweepPass: { empty: ReadCost; waiting1000: ReadCost };
}

async function storedEvent(env: BenchEnv): Promise<Record<string, unknown>> {
  await env.api('PUT', '/queues/template', {}, 201);
  await env.api('POST', '/queues/template/messages', { body: jsonEvent(0) }, 201);
  const entity = await env.deps.db.send(new GetCommand({ TableName: env.tableName, Key: entityKey('queue', 'template'), ConsistentRead: true }));
  const out = await env.deps.db.send(
    new QueryCommand({
      TableName: env.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messagePk(entity.Item!.eid as string, 'active', 0) },
      ConsistentRead: true,
    }),
  );
  return Object.fromEntries(Object.entries(out.Items![0]!).filter(([k]) => !NOT_CARRIED.includes(k)));
}

async function fill(env: BenchEnv, pk: string, payload: Record<string, unknown>, n: number) {
  env.meter.paused = true;
  for (let i = 0; i < n; i += 10) {
    const draw = await drawPositions(env.deps, pk, 10);
    await putAtPositions(
      env.deps,
      pk,
      draw,
      Array.from({ length: 10 }, () => payload),
    );
  }
  env.meter.paused = false;
}

const costOf = async (env: BenchEnv, work: () => Promise<unknown>): Promise<ReadCost> => {
  const { tally } = await env.meter.measure(work);
  return { readUnits: tally.readUnits, writeUnits: tally.writeUnits, calls: tally.requests };
};

/** The pass over one partition (positioned-expiry.ts `sweepPartition`) when nothing at its head is expired. */
const pass = async (env: BenchEnv, pk: string) => {
  await deleteVoidBelowCursor(env.deps, pk);
  await claim(env.deps, pk, SWEEP_TAKE, { lockMs: SWEEP_LOCK_MS, takeWhile: expiredBy(env.clock.now()) });
};

export async function runPositionedCounts(endpoint: string, rootKey: string): Promise<PositionedCountsResult> {
  // Today's layout, named: the event is stored as today's send stores it (a `msg/` item read back).
  const env = await createEnv({ name: 'positioned-counts', endpoint, tableName: 'bench_positioned_counts', rootKey, newEntityLayout: 'index' });
  try {
    const payload = await storedEvent(env);
    const [empty, ten, many] = [0, 1, 2].map((p) => positionedPk('bench', 'active', p));
    await fill(env, ten!, payload, 10);
    await fill(env, many!, payload, 1_000);
    env.meter.paused = true;
    for (let i = 0; i < 3; i++) await claim(env.deps, many!, 10, { lockMs: 60_000 });
    env.meter.paused = false;
    return {
      count: {
        empty: await costOf(env, () => tallyPartition(env.deps, empty!)),
        waiting10: await costOf(env, () => tallyPartition(env.deps, ten!)),
        waiting1000locked30: await costOf(env, () => tallyPartition(env.deps, many!)),
      },
      sweepPass: {
        empty: await costOf(env, () => pass(env, empty!)),
        waiting1000: await costOf(env, () => pass(env, many!)),
      },
    };
  } finally {
    env.destroy();
  }
}
