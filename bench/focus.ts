/**
 * `npx tsx bench/focus.ts [partitions] [throughput]`: one or two scenarios of the bench on
 * their own, for working on them without the whole 12-minute run. Prints the figures as
 * JSON; writes nothing.
 */
import { randomBytes } from 'node:crypto';
import { OffsetClock } from '../lib/clock.js';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.js';
import { startLocalRuntime } from '../infra/local/runtime.js';
import { createEnv } from './harness.js';
import { runPartitions } from './scenarios/partitions.js';
import { runThroughput } from './scenarios/throughput.js';

const wanted = new Set(process.argv.slice(2));
const log = (line: string) => console.error(`[focus] ${line}`);
const dynamo = await startDynamoDbLocal();
const stops: (() => unknown)[] = [() => dynamo.stop()];
try {
  const rootKey = randomBytes(32).toString('base64');
  const out: Record<string, unknown> = {};
  if (wanted.has('partitions')) {
    const p = await runPartitions(dynamo.endpoint, rootKey, 2_000);
    out.partitions = Object.fromEntries(Object.entries(p.ops).map(([k, r]) => [k, { readUnits: r.tally.readUnits, writeUnits: r.tally.writeUnits }]));
  }
  if (wanted.has('throughput')) {
    const clock = new OffsetClock();
    const env = await createEnv({ name: 'runtime', endpoint: dynamo.endpoint, tableName: 'sluice', rootKey, createTable: false, clock });
    stops.push(() => env.destroy());
    const runtime = await startLocalRuntime({
      port: 0, inMemory: true, dynamoEndpoint: dynamo.endpoint, timers: false, streamPollMs: 0, rootKey, clock,
      handlers: { api: env.handler, stream: env.stream },
      logger: { info: () => {}, error: (m, e) => console.error(`[runtime] ${m}`, e ?? '') },
    });
    stops.push(() => runtime.stop());
    const t = await runThroughput(runtime, env.meter, dynamo.endpoint, { concurrency: 16, sliceSeconds: 3, rounds: 4, warmupSeconds: 2, log });
    out.throughput = {
      sendRatio: t.send.ratio, send: t.send.api.perSecond, sendBaseline: t.send.baseline.perSecond, sendCalls: t.send.api.dynamoCallsPerOp,
      recvRatio: t.receiveComplete.ratio, recv: t.receiveComplete.api.perSecond, recvBaseline: t.receiveComplete.baseline.perSecond,
      recvCalls: t.receiveComplete.api.dynamoCallsPerOp, baselineLostRaces: t.receiveComplete.baseline.lostRaces, baselineCompleted: t.receiveComplete.baseline.completed, lostRacesPerMessage: t.receiveComplete.api.failedConditionalWritesPerOp, emptyReceives: t.receiveComplete.api.emptyReceives,
    };
  }
  console.log(JSON.stringify(out, null, 2));
} finally {
  for (const stop of stops.reverse()) await stop();
}
