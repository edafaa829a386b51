/**
 * `npx tsx bench/focus.ts [operations] [lifecycle] [partitions] [throughput] [throughput-positioned] [races] [races-http [latency=MS]] [lifecycle-positioned] [lifecycle-ticketed] [throughput-ticketed] [sessions] [sessions-ttl] [positions] [positioned-send] [lease-settlements] [ticket-settlements] [positioned-counts] [positioned-receive] [topic-positioned] [tickets]`: scenarios
 * of the bench on their own, for working on them without the whole run (half an hour on 2 cores). Prints the
 * figures as JSON; writes nothing. `races`: 16 receivers calling the API handler in-process (no
 * HTTP), 640 receive+complete pairs: lost lock races per message without the HTTP server's
 * latency. `races-http`: the full bench's receive+complete throughput scenario alone, over HTTP
 * (16 receivers, 4 API slices of 3 s between the raw baseline's): its lost lock races per
 * message, the figure the bench reports. `latency=MS` delays each DynamoDB call of the API by
 * MS, as a loaded machine does (full runs have seen 1.7-3.3 s a receive+complete pair): the
 * fewer messages a slice completes, the more the races at each slice's start weigh.
 * `throughput-positioned`: the full bench's throughput scenario (send, and receive + complete, 16
 * clients over HTTP against the same bare calls) on a queue of the positioned layout.
 * `operations`: the batched and the single life of the operations scenario, with their call shapes.
 * `lifecycle`: the full bench's life scenario on the default layout (its by-size lives and stream
 * run too, a few minutes): `capacity.lifecycleJson`, `lifecycleSingle` and `lifecycleIncompressible`
 * on the request path. `lifecycle-positioned`: those three lives on queues of the positioned layout
 * with heads claimed by cursor (lib/deps.ts `newEntityLayout: 'positions'`), the request path (all
 * told: the stream never sees them), their price per million and the hottest key.
 * `lifecycle-ticketed` and `throughput-ticketed`: the same on queues whose heads are taken by
 * ticket (`newEntityLayout: 'tickets'`, lib/store/tickets.ts, the default); `throughput` names
 * today's layout (`'index'`).
 * `sessions`: the session capacity scenario with 200 sessions (20 locked) instead of 10,000
 * (1,000), its life figures per message with the bench's 1 KB incompressible body and with the
 * 1 KB JSON event. `sessions-ttl`: those life figures on a life queue whose default time to live
 * (a day) gives every message an expiry. `positions`: the positioned layout's store operations (step 1a, not behind the API
 * yet): write and read units per life of the 1 KB JSON event in batches of 10 and one at a time,
 * and claims a second on one partition with 16 receivers of one message and of 10. `positioned-send`: write and
 * read units per message of a 1 KB JSON send, single and in a batch of 10, into a queue of today's layout and a
 * positioned one, through the API handler.
 * `lease-settlements`: the units of each settlement under a lease other than complete (step 3)
 * for the 1 KB JSON event. `ticket-settlements`: the same on a ticket's token (a ticketed queue).
 * `positioned-counts`: read units of a positioned partition's count (E6) and of the sweeper's
 * expiry pass over it (T7), idle and with messages waiting.
 * `positioned-receive`: receive and complete of the 1 KB JSON event through the API, on a
 * positioned queue and on today's layout, batches of 10 and one at a time (send not metered).
 * `topic-positioned`: the bench's topic sends (20 filtered subscriptions, all or one matching;
 * 100 subscriptions timed) on subscriptions of today's layout and of the positioned one.
 * `tickets`: 16 receivers of one message each draining one positioned partition, store level
 * (lib/store/tickets.ts, not behind the API): tickets against the cursor claim, messages a
 * second, failed conditional writes, calls and units per message.
 */
import { randomBytes } from 'node:crypto';
import { OffsetClock } from '../lib/clock.js';
import { startDynamoDbLocal } from '../infra/local/dynamodb-local.js';
import { startLocalRuntime } from '../infra/local/runtime.js';
import { createEnv } from './harness.js';
import type { NewEntityLayout } from '../lib/deps.js';
import { runPartitions } from './scenarios/partitions.js';
import { runThroughput } from './scenarios/throughput.js';
import { runOperations } from './scenarios/operations.js';
import { runSessionCapacity } from './scenarios/sessions.js';
import { runLifecycle, runPositionedLifecycle } from './scenarios/lifecycle.js';
import { runPositions } from './scenarios/positions.js';
import { runPositionedSend } from './scenarios/positioned-send.js';
import { runLeaseSettlements } from './scenarios/lease-settlements.js';
import { runTicketSettlements } from './scenarios/ticket-settlements.js';
import { runPositionedCounts } from './scenarios/positioned-counts.js';
import { runPositionedReceive } from './scenarios/positioned-receive.js';
import { runTopics } from './scenarios/topics.js';
import { runTickets } from './scenarios/tickets.js';
import { jsonEvent } from './payloads.js';
import { positionedLifeFigures } from './life-report.js';
import { steadyFlowPrice } from './prices.js';

const wanted = new Set(process.argv.slice(2));
const log = (line: string) => console.error(`[focus] ${line}`);
const dynamo = await startDynamoDbLocal();
const stops: (() => unknown)[] = [() => dynamo.stop()];
try {
  const rootKey = randomBytes(32).toString('base64');
  const out: Record<string, unknown> = {};
  if (wanted.has('operations')) {
    const ops = (await runOperations(dynamo.endpoint, rootKey)).ops;
    const life = ops.lifecycleBatch10!.tally;
    out.lifecycleBatch10 = { writeUnits: life.writeUnits, readUnits: life.readUnits, calls: ops.lifecycleBatch10!.calls };
    out.lifecycleSingle = { writeUnits: ops.lifecycle!.tally.writeUnits, readUnits: ops.lifecycle!.tally.readUnits, calls: ops.lifecycle!.calls };
    out.steadyFlow = steadyFlowPrice({
      messagesPerSecond: 100,
      writeUnitsPerMessage: life.writeUnits,
      readUnitsPerMessage: life.readUnits,
      targetUtilization: 0.7,
    });
  }
  if (wanted.has('lifecycle')) {
    const r = await runLifecycle(dynamo.endpoint, rootKey, log);
    const entry = (run: typeof r.json) => ({ writeUnits: run.op.tally.writeUnits, readUnits: run.op.tally.readUnits, calls: run.op.calls });
    out.lifecycle = { lifecycleJson: entry(r.json), lifecycleSingle: entry(r.single), lifecycleIncompressible: entry(r.incompressible) };
  }
  for (const scenario of ['lifecycle-positioned', 'lifecycle-ticketed'] as const) {
    if (!wanted.has(scenario)) continue;
    const r = await runPositionedLifecycle(dynamo.endpoint, rootKey, log, scenario === 'lifecycle-ticketed' ? 'tickets' : 'positions');
    const f = positionedLifeFigures(r);
    const entry = (run: typeof r.json) => ({ writeUnits: run.op.tally.writeUnits, readUnits: run.op.tally.readUnits, calls: run.op.calls });
    out[scenario === 'lifecycle-ticketed' ? 'lifecycleTicketed' : 'lifecyclePositioned'] = {
      lifecycleJson: { ...entry(r.json), dollarsPerMillion: f.dollars.sluiceJsonPositioned },
      lifecycleSingle: entry(r.single),
      lifecycleIncompressible: { ...entry(r.incompressible), dollarsPerMillion: f.dollars.sluiceIncompressiblePositioned },
      hotKey: f.hotKey,
    };
  }
  if (wanted.has('sessions') || wanted.has('sessions-ttl')) {
    const lives = async (lifeBody?: (n: number) => unknown, lifeQueue?: Record<string, unknown>) => {
      // Its own DynamoDB Local each time: the scenario creates its tables under fixed names.
      const own = await startDynamoDbLocal();
      const r = await runSessionCapacity(own.endpoint, rootKey, { sessions: 200, locked: 20 }, log, lifeBody, lifeQueue).finally(() => own.stop());
      const names = ['sessionSend', 'sessionSendBatch10', 'sessionLifecycle', 'sessionLifecycle10'] as const;
      return Object.fromEntries(names.map((k) => [k, { writeUnits: r.ops[k].tally.writeUnits, readUnits: r.ops[k].tally.readUnits, calls: r.ops[k].calls }]));
    };
    if (wanted.has('sessions')) out.sessions = { incompressible: await lives(), json: await lives((n) => jsonEvent(n)) };
    // A day's default time to live: every message carries an expiry (`ttl`, a due entry), as on an entity configured so.
    const ttl = { defaultMessageTimeToLive: 'P1D' };
    if (wanted.has('sessions-ttl')) out.sessionsTtl = { incompressible: await lives(undefined, ttl), json: await lives((n) => jsonEvent(n), ttl) };
  }
  if (wanted.has('positions')) out.positions = await runPositions(dynamo.endpoint, rootKey, log);
  if (wanted.has('positioned-send')) {
    const r = await runPositionedSend(dynamo.endpoint, rootKey);
    const entry = (o: (typeof r)['today']['single']) => ({
      writeUnits: o.tally.writeUnits,
      readUnits: o.tally.readUnits,
      handlerMs: o.handlerMs,
      calls: o.calls,
    });
    out.positionedSend = Object.fromEntries(
      (['today', 'positioned'] as const).map((layout) => [layout, { single: entry(r[layout].single), batch10: entry(r[layout].batch10) }]),
    );
  }
  if (wanted.has('lease-settlements')) out.leaseSettlements = await runLeaseSettlements(dynamo.endpoint, rootKey, log);
  if (wanted.has('ticket-settlements')) out.ticketSettlements = await runTicketSettlements(dynamo.endpoint, rootKey, log);
  if (wanted.has('tickets')) out.tickets = await runTickets(dynamo.endpoint, rootKey, log);
  if (wanted.has('positioned-counts')) out.positionedCounts = await runPositionedCounts(dynamo.endpoint, rootKey);
  if (wanted.has('positioned-receive')) out.positionedReceive = await runPositionedReceive(dynamo.endpoint, rootKey, log);
  if (wanted.has('topic-positioned')) {
    const figures = (r: Awaited<ReturnType<typeof runTopics>>) => ({
      ...Object.fromEntries(
        Object.entries(r.ops).map(([k, o]) => [k, { writeUnits: o.tally.writeUnits, readUnits: o.tally.readUnits, handlerMs: o.handlerMs, calls: o.calls }]),
      ),
      copies20: r.copies20,
      send100: r.send100,
    });
    out.topicPositioned = {
      today: figures(await runTopics(dynamo.endpoint, rootKey, { newEntityLayout: 'index' })),
      positioned: figures(await runTopics(dynamo.endpoint, rootKey, { newEntityLayout: 'positions' })),
    };
  }
  if (wanted.has('partitions')) {
    const p = await runPartitions(dynamo.endpoint, rootKey, 2_000);
    out.partitions = Object.fromEntries(Object.entries(p.ops).map(([k, r]) => [k, { readUnits: r.tally.readUnits, writeUnits: r.tally.writeUnits }]));
  }
  if (wanted.has('races')) {
    // Today's layout, named: the lost races of the `ready` index receive (a ticketed receive loses none: throughput-ticketed).
    const env = await createEnv({ name: 'races', endpoint: dynamo.endpoint, tableName: 'bench_races', rootKey, newEntityLayout: 'index' });
    stops.push(() => env.destroy());
    await env.api('PUT', '/queues/r', { lockDuration: 'PT5M' }, 201);
    for (let i = 0; i < 7; i++)
      await env.api('POST', '/queues/r/messages/batch', { messages: Array.from({ length: 100 }, (_, j) => ({ body: i * 100 + j })) }, 201);
    let delivered = 0;
    const window = await env.meter.measure(() =>
      Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let k = 0; k < 40; k++) {
            const got = (await env.api('POST', '/queues/r/messages/receive', { maxMessages: 1 })).body.messages[0];
            if (!got) continue;
            await env.api('POST', `/queues/r/messages/${got.sequenceNumber}/complete`, { lockToken: got.lockToken }, 204);
            delivered++;
          }
        }),
      ),
    );
    const lost = window.tally.calls.filter((c) => !c.ok && c.kind === 'write').length;
    out.races = { receivers: 16, delivered, lostRacesPerMessage: lost / delivered, readUnitsPerMessage: window.tally.readUnits / delivered };
  }
  /** The local runtime over HTTP on table `tableName`, its API handler metered, each DynamoDB call of it `latencyMs` late. */
  const runtimeOn = async (tableName: string, latencyMs = 0, newEntityLayout?: NewEntityLayout) => {
    const clock = new OffsetClock();
    const env = await createEnv({ name: 'runtime', endpoint: dynamo.endpoint, tableName, rootKey, createTable: false, clock, newEntityLayout });
    stops.push(() => env.destroy());
    if (latencyMs > 0) {
      const target = env.deps.db as unknown as { send: (...a: unknown[]) => Promise<unknown> };
      const send = target.send.bind(env.deps.db);
      target.send = async (...a) => (await new Promise((r) => setTimeout(r, latencyMs)), send(...a));
    }
    const runtime = await startLocalRuntime({
      port: 0,
      inMemory: true,
      dynamoEndpoint: dynamo.endpoint,
      tableName,
      timers: false,
      streamPollMs: 0,
      rootKey,
      clock,
      handlers: { api: env.handler, stream: env.stream },
      logger: { info: () => {}, error: (m, e) => console.error(`[runtime] ${m}`, e ?? '') },
    });
    stops.push(() => runtime.stop());
    return { env, runtime };
  };
  if (wanted.has('races-http')) {
    const latencyMs = Number(process.argv.find((a) => a.startsWith('latency='))?.slice('latency='.length) ?? 0);
    const { env, runtime } = await runtimeOn('sluice_races', latencyMs);
    const t = await runThroughput(runtime, env.meter, dynamo.endpoint, { concurrency: 16, sliceSeconds: 3, rounds: 4, warmupSeconds: 2, send: false, log });
    const api = t.receiveComplete.api;
    out.racesHttp = {
      receivers: 16,
      latencyMs,
      completed: api.completed,
      lostRacesPerMessage: api.failedConditionalWritesPerOp,
      perSecond: api.perSecond,
      p50Ms: api.p50Ms,
      sliceRates: api.sliceRates,
      emptyReceives: api.emptyReceives,
      calls: api.callsPerOp,
    };
  }
  for (const layout of ['throughput', 'throughput-positioned', 'throughput-ticketed'] as const) {
    if (!wanted.has(layout)) continue;
    // 'throughput' is today's layout, named; the default's is 'throughput-ticketed'.
    const entityLayout = layout === 'throughput-positioned' ? 'positions' : layout === 'throughput-ticketed' ? 'tickets' : 'index';
    const table = entityLayout === 'positions' ? 'sluice_pos' : entityLayout === 'tickets' ? 'sluice_tix' : 'sluice';
    const { env, runtime } = await runtimeOn(table, 0, entityLayout);
    const t = await runThroughput(runtime, env.meter, dynamo.endpoint, { concurrency: 16, sliceSeconds: 3, rounds: 4, warmupSeconds: 2, log });
    out[layout] = {
      sendRatio: t.send.ratio,
      send: t.send.api.perSecond,
      sendBaseline: t.send.baseline.perSecond,
      sendCalls: t.send.api.dynamoCallsPerOp,
      sendCallKinds: t.send.api.callsPerOp,
      recvRatio: t.receiveComplete.ratio,
      recv: t.receiveComplete.api.perSecond,
      recvBaseline: t.receiveComplete.baseline.perSecond,
      recvCalls: t.receiveComplete.api.dynamoCallsPerOp,
      recvCallKinds: t.receiveComplete.api.callsPerOp,
      baselineLostRaces: t.receiveComplete.baseline.lostRaces,
      baselineCompleted: t.receiveComplete.baseline.completed,
      lostRacesPerMessage: t.receiveComplete.api.failedConditionalWritesPerOp,
      emptyReceives: t.receiveComplete.api.emptyReceives,
    };
  }
  console.log(JSON.stringify(out, null, 2));
} finally {
  for (const stop of stops.reverse()) await stop();
}
