/**
 * `npm run bench`: starts DynamoDB Local and a local runtime of its own, runs the scenarios,
 * prints the table and writes the same figures to bench-results.json at the repository root.
 *
 * Order matters on a 2-core machine: bundles are built while DynamoDB Local starts, imports
 * are timed while it is idle, the capacity scenarios run one at a time, and throughput runs
 * last, alone, on a DynamoDB Local of its own (the shared one is worn by then). The runtime runs with no timers and no stream poller (nothing in the
 * background skews a figure); the stream is drained explicitly where it is measured.
 * Everything started here is stopped on the way out, failure or not.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { OffsetClock } from '../lib/clock.js';
import type { NewEntityLayout } from '../lib/deps.js';
import { startDynamoDbLocal, type DynamoDbLocal } from '../infra/local/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../infra/local/runtime.js';
import { repoRoot, type FunctionName } from '../infra/paths.js';
import type { StreamHandler } from '../functions/stream/handler.js';
import { billingRules, fmtUnits, type CallType, type Coverage } from './capacity.js';
import { buildBundles, buildVariants, removeBundles, timeImports } from './bundles.js';
import { lambdaBundling } from '../infra/bundling.js';
import { allEnvs, createEnv, type BenchEnv, type OpResult } from './harness.js';
import { competitors, idlePerMonth, perMillion, prices, steadyFlowPrice } from './prices.js';
import { stackFixedCost } from './fixed-costs.js';
import {
  allAssumptions,
  backlogRatios,
  buildTargets,
  capacityTargets,
  sessionLifeTargets,
  RETIRED_TARGET_NAMES,
  bundleTargets,
  capacityEntry,
  throughputTargets,
  printReport,
  type BenchResults,
  type CapacityEntry,
  type SmallUser,
  type Target,
} from './report.js';
import { runBacklog } from './scenarios/backlog.js';
import { runIdle } from './scenarios/idle.js';
import { runOperations } from './scenarios/operations.js';
import { runPartitions } from './scenarios/partitions.js';
import { runTopics } from './scenarios/topics.js';
import { runStream, type HandlerTimer } from './scenarios/stream.js';
import { runThroughput, type ThroughputResult } from './scenarios/throughput.js';
import { runDurations } from './scenarios/durations.js';
import { runVerify } from './scenarios/verify.js';
import { runSweeper } from './scenarios/sweeper.js';
import { runWaiting, type WaitingResult } from './scenarios/waiting.js';
import { existsSync, readFileSync } from 'node:fs';
import { isSessionTarget, printSessions, printSteadyFlow, printWaiting, sessionTargets, waitingTargets, type SessionsSummary } from './report.js';
import { runLifecycle, runPositionedLifecycle } from './scenarios/lifecycle.js';
import {
  indexLifeFigures,
  lifeFigures,
  lifeTargets,
  positionedLifeFigures,
  printLife,
  smallUser,
  type IndexLifeFigures,
  type LifeFigures,
} from './life-report.js';
import { cliTargets, printCli, runCliStart } from './cli.js';
import { runSessionCapacity, runSessionThroughput, type SessionCapacityResult } from './scenarios/sessions.js';

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)}s`;
const log = (line: string) => console.error(`[bench ${elapsed()}] ${line}`);

const cleanups: (() => Promise<void> | void)[] = [];
async function cleanup() {
  for (const step of cleanups.splice(0).reverse()) {
    try {
      await step();
    } catch (error) {
      console.error('[bench] cleanup step failed', error);
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

function mergeCoverage(into: Partial<Record<CallType, Coverage>>, from: Partial<Record<CallType, Coverage>>) {
  for (const [type, c] of Object.entries(from) as [CallType, Coverage][]) {
    const slot = (into[type] ??= { calls: 0, withCapacity: 0, zeroReported: 0 });
    slot.calls += c.calls;
    slot.withCapacity += c.withCapacity;
    slot.zeroReported += c.zeroReported;
  }
}

/**
 * `npm run bench -- --only=waiting`: only the waiting consumer, merged into an
 * existing bench-results.json (its other figures kept) and printed.
 */
async function onlyWaiting(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  cleanups.push(() => dynamo.stop());
  const waiting = await runWaiting(dynamo.endpoint, randomBytes(32).toString('base64'), log);
  const existing = readResults();
  writeResults({ ...existing, waitingConsumer: waiting, targets: replacingTargets(existing.targets, waitingTargets(waiting)) });
  printWaiting(waiting);
  log(`wrote ${resultsFile}`);
}

/**
 * Today's layout's lives, beside the default's: the 1 KB lives and their hottest key (the
 * price by size is the default's alone).
 */
const INDEX_LIFE = { layout: 'index', sizes: [1024] } as const satisfies { layout: NewEntityLayout; sizes: readonly number[] };

function printIndexLife(f: IndexLifeFigures): void {
  const c = f.capacity;
  const u = (e: { writeUnits: number; readUnits: number }) => `${e.writeUnits.toFixed(2)} WCU + ${e.readUnits.toFixed(2)} RCU`;
  console.log(
    `   on today's layout (the ready index): JSON event ${u(c.lifecycleJsonIndex)}, one at a time ${u(c.lifecycleSingleIndex)}, ` +
      `incompressible ${u(c.lifecycleIncompressibleIndex)}; hottest key ${f.hotKey.key}, ${f.hotKey.livesPerSecond.toFixed(0)} lives/s`,
  );
}

/** The message-life figures as they go into bench-results.json. */
function lifeResults(f: LifeFigures, user: SmallUser) {
  return {
    capacity: f.capacity,
    dollars: { sluiceJson: f.dollars.sluiceJson, sluiceIncompressible: f.dollars.sluiceIncompressible },
    breakdown: f.dollars.breakdown,
    priceBySize: f.priceBySize,
    smallUser: user,
    hotKey: f.hotKey,
  };
}

/**
 * `npm run bench -- --only=lifecycle`: only the message life: a 1 KB JSON event and a
 * 1 KB incompressible body, the JSON event one at a time, its stream consumer's share and
 * hottest partition key, and the price by size, merged into an existing bench-results.json
 * (the waiting consumer and the idle deployment are taken from it when it has them). Run
 * `--only=waiting` first for a fresh small user's month.
 */
async function onlyLifecycle(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  cleanups.push(() => dynamo.stop());
  const verification = await runVerify(dynamo.endpoint);
  billingRules.emptyQueryFloor = verification.emptyQueryReportsZero;
  billingRules.transactionsFromItems = !(verification.transactionsDoubled && verification.transactionsSummed);
  log('message life (the default layout: ticketed positions)');
  const life = await runLifecycle(dynamo.endpoint, randomBytes(32).toString('base64'), log);
  log("message life on today's layout (the ready index)");
  const index = indexLifeFigures(await runLifecycle(dynamo.endpoint, randomBytes(32).toString('base64'), log, INDEX_LIFE));
  log('message life on the positioned layout (heads claimed by cursor)');
  const positioned = positionedLifeFigures(await runPositionedLifecycle(dynamo.endpoint, randomBytes(32).toString('base64'), log));
  const existing = readResults();
  const figures = lifeFigures(life);
  let idle = existing.idleDollarsPerMonth;
  if (idle === undefined) {
    log("idle jobs (for the small user's month)");
    const run = await runIdle(dynamo.endpoint, randomBytes(32).toString('base64'));
    idle = idlePerMonth({
      jobs: [
        { name: 'sweeper', readUnits: run.sweeper.tally.readUnits, writeUnits: run.sweeper.tally.writeUnits, ms: run.sweeper.handlerMs },
        { name: 'reaper', readUnits: run.reaper.tally.readUnits, writeUnits: run.reaper.tally.writeUnits, ms: run.reaper.handlerMs },
      ],
      fixed: stackFixedCost(),
    }).total;
  }
  const user = smallUser(figures, existing.waitingConsumer?.dollarsPerMonth, idle);
  const r = lifeResults(figures, user);
  const targets = replacingTargets(existing.targets, lifeTargets(figures));
  const merged = {
    ...existing,
    capacity: { ...(existing.capacity ?? {}), ...r.capacity, ...index.capacity, ...positioned.capacity },
    dollarsPerMillionMessages: {
      ...(existing.dollarsPerMillionMessages ?? {}),
      ...r.dollars,
      ...index.dollars,
      ...positioned.dollars,
      breakdown: { ...(existing.dollarsPerMillionMessages?.breakdown ?? {}), ...r.breakdown },
    },
    priceBySize: r.priceBySize,
    smallUser: r.smallUser,
    hotKey: r.hotKey,
    hotKeyIndex: index.hotKey,
    hotKeyPositioned: positioned.hotKey,
    targets,
  };
  writeResults(merged);
  printLife(figures, user);
  printIndexLife(index);
  log(`wrote ${resultsFile}`);
}

/** The throughput block of bench-results.json from scenario 3 (the session receivers' figure is added beside it). */
function throughputFigures(throughput: ThroughputResult, index: ThroughputResult): Omit<BenchResults['throughput'], 'sessionReceive'> {
  const side = (c: ThroughputResult['send']) => ({
    ...c,
    perSecond: c.api.perSecond,
    baselinePerSecond: c.baseline.perSecond,
    p50Ms: c.api.p50Ms,
    p99Ms: c.api.p99Ms,
    baselineP50Ms: c.baseline.p50Ms,
    baselineP99Ms: c.baseline.p99Ms,
  });
  return {
    concurrency: throughput.concurrency,
    sliceSeconds: throughput.sliceSeconds,
    rounds: throughput.rounds,
    send: side(throughput.send),
    receiveComplete: side(throughput.receiveComplete),
    baselineCalls: throughput.baselineCalls,
    lostRacesPerMessage: throughput.receiveComplete.api.failedConditionalWritesPerOp ?? NaN,
    sendIndex: side(index.send),
    receiveCompleteIndex: side(index.receiveComplete),
    lostRacesPerMessageIndex: index.receiveComplete.api.failedConditionalWritesPerOp ?? NaN,
  };
}

/**
 * Scenario 3 on a DynamoDB Local and a local runtime of their own. DynamoDB Local keeps every
 * stream record it wrote and reads through them on each write (CONTRIBUTING, "DynamoDB Local
 * wears out"), so after the capacity scenarios' tens of thousands of writes the shared one
 * served both sides at a crawl (11 sends a second through the API and 19 bare PutItems in the
 * run of 2026-11-23), and the ratio measured the emulator's wear more than the broker.
 */
async function runThroughputOnOwnDynamoDb(rootKey: string, newEntityLayout?: NewEntityLayout): Promise<ThroughputResult> {
  return withOwnDynamoDb(async (endpoint) => {
    const clock = new OffsetClock();
    const env = await createEnv({ name: 'throughput', endpoint, tableName: 'sluice', rootKey, createTable: false, clock, newEntityLayout });
    const runtime = await benchRuntime(endpoint, rootKey, clock, { api: env.handler, stream: env.stream });
    try {
      return await runThroughput(runtime, env.meter, endpoint, { concurrency: 16, sliceSeconds: 3, rounds: 4, warmupSeconds: 2, log });
    } finally {
      await runtime.stop();
      env.destroy();
    }
  });
}

/**
 * Scenario 3 twice, each on a DynamoDB Local of its own: on the default layout (ticketed
 * positions, the stable `send` and `receiveComplete`) and on today's (`sendIndex`,
 * `receiveCompleteIndex`), whose queue the baseline's bare calls are shaped after.
 */
async function runThroughputBoth(rootKey: string): Promise<{ throughput: ThroughputResult; index: ThroughputResult }> {
  log('scenario 3 on the default layout (ticketed positions)');
  const throughput = await runThroughputOnOwnDynamoDb(rootKey);
  log("scenario 3 on today's layout (the ready index)");
  const index = await runThroughputOnOwnDynamoDb(rootKey, 'index');
  return { throughput, index };
}

/**
 * `npm run bench -- --only=throughput`: only scenario 3 (send, and receive + complete, through
 * the local HTTP API against bare calls), merged into an existing bench-results.json with its
 * three targets; the session receivers' figure is kept.
 */
async function onlyThroughput(): Promise<void> {
  const { throughput, index } = await runThroughputBoth(randomBytes(32).toString('base64'));
  const existing = readResults();
  const figures = { ...(existing.throughput ?? {}), ...throughputFigures(throughput, index) } as BenchResults['throughput'];
  const fresh = throughputTargets(figures);
  writeResults({ ...existing, throughput: figures, targets: replacingTargets(existing.targets, fresh) });
  for (const t of fresh) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.value} (wanted ${t.target})`);
  const ix = figures;
  console.log(
    `  today's layout: send ${ix.sendIndex?.ratio.toFixed(2)} (${ix.sendIndex?.perSecond.toFixed(0)}/s), ` +
      `receive+complete ${ix.receiveCompleteIndex?.ratio.toFixed(2)} (${ix.receiveCompleteIndex?.perSecond.toFixed(0)}/s), lost races ${ix.lostRacesPerMessageIndex?.toFixed(2)}`,
  );
  log(`wrote ${resultsFile}`);
}

/** The bundles' figures as bench-results.json keeps them (without the built file's path). */
const bundleFiguresOf = (bundles: Awaited<ReturnType<typeof timeImports>>) =>
  Object.fromEntries(
    (Object.entries(bundles) as [FunctionName, (typeof bundles)[FunctionName]][]).map(([name, b]) => {
      const { file: _file, ...rest } = b;
      return [name, rest];
    }),
  ) as BenchResults['bundles'];

/**
 * `npm run bench -- --only=bundles`: only the functions' bundles (size, cold import, the api's
 * what-if builds), merged into an existing bench-results.json with their targets.
 */
async function onlyBundles(): Promise<void> {
  cleanups.push(removeBundles);
  const bundled = await buildBundles();
  const bundles = bundleFiguresOf(await timeImports(bundled.built, 5));
  const apiVariants = await buildVariants('api');
  removeBundles();
  const existing = readResults();
  const fresh = bundleTargets(bundles);
  const bundling = {
    banner: lambdaBundling.banner,
    bannerSource: 'infra/bundling.ts',
    target: lambdaBundling.target,
    buildS: bundled.buildMs / 1000,
    whatIf: { api: apiVariants },
  };
  writeResults({ ...existing, bundles, bundling, targets: replacingTargets(existing.targets, fresh) });
  for (const t of fresh) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.value} (wanted ${t.target})`);
  log(`wrote ${resultsFile}`);
}

const sessionSummary = ({ ops: _ops, ...rest }: SessionCapacityResult): SessionsSummary => rest;

/**
 * Runs `fn` on a DynamoDB Local of its own, stopped afterwards. The sessions scenarios use
 * one each: after the 10,000-session capacity scenario, the same DynamoDB Local served the
 * session throughput scenario about 8x slower (3-4 messages/s on both sides instead of 25-35,
 * measured 2026-11-23), and scenario 3 must not inherit that either.
 */
async function withOwnDynamoDb<T>(fn: (endpoint: string) => Promise<T>): Promise<T> {
  const own = await startDynamoDbLocal();
  const stop = () => own.stop();
  cleanups.push(stop); // on a signal too
  try {
    return await fn(own.endpoint);
  } finally {
    cleanups.splice(cleanups.indexOf(stop), 1);
    await own.stop();
  }
}

/**
 * `npm run bench -- --only=sessions`: only the sessions scenarios (N1-N8), merged into an
 * existing bench-results.json (its other figures kept) and printed.
 */
async function onlySessions(): Promise<void> {
  const rootKey = randomBytes(32).toString('base64');
  const verification = await withOwnDynamoDb((endpoint) => runVerify(endpoint));
  billingRules.emptyQueryFloor = verification.emptyQueryReportsZero;
  billingRules.transactionsFromItems = !(verification.transactionsDoubled && verification.transactionsSummed);
  // Written after each part, so a failure in the throughput keeps the capacity figures.
  const merge = (part: Partial<BenchResults>) => {
    const existing = readResults();
    const capacity = { ...(existing.capacity ?? {}), ...(part.capacity ?? {}) };
    const throughput = { ...(existing.throughput ?? {}), ...(part.throughput ?? {}) } as BenchResults['throughput'];
    const sessions = part.sessions ?? existing.sessions;
    const targets = replacingTargets(
      (existing.targets ?? []).filter((t) => !isSessionTarget(t)),
      [...sessionTargets(sessions), ...sessionLifeTargets(capacity)],
    );
    const merged = { ...existing, capacity, throughput, sessions, targets };
    writeResults(merged);
    return merged;
  };
  log('sessions: accept next, lifecycle');
  const capacityResult = await withOwnDynamoDb((endpoint) => runSessionCapacity(endpoint, rootKey, undefined, log));
  const capacity: Record<string, CapacityEntry> = {};
  for (const [name, r] of Object.entries(capacityResult.ops)) capacity[name] = capacityEntry(r);
  merge({ capacity, sessions: sessionSummary(capacityResult) });
  log('sessions: throughput');
  const sessionReceive = await withOwnDynamoDb((endpoint) => runSessionThroughput(endpoint, rootKey, { log }));
  const merged = merge({ throughput: { sessionReceive } as BenchResults['throughput'] });
  printSessions(merged);
  for (const t of [...sessionTargets(merged.sessions), ...sessionLifeTargets(merged.capacity)])
    console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.value} (wanted ${t.target})`);
  log(`wrote ${resultsFile}`);
}

/**
 * `npm run bench -- --only=cli`: only the CLI's cold start, against a local runtime of its
 * own, merged into an existing bench-results.json (its other figures kept) and printed.
 */
async function onlyCli(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  cleanups.push(() => dynamo.stop());
  const runtime = await startLocalRuntime({ port: 0, inMemory: true, dynamoEndpoint: dynamo.endpoint, timers: false, streamPollMs: 0, logger: quietRuntime });
  cleanups.push(() => runtime.stop());
  log('CLI cold start: sluice --help, sluice queue list');
  const cli = await runCliStart(runtime.connectionString);
  const existing = readResults();
  writeResults({ ...existing, cli, targets: replacingTargets(existing.targets, cliTargets(cli)) });
  printCli(cli);
  for (const t of cliTargets(cli)) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.value} (wanted ${t.target})`);
  log(`wrote ${resultsFile}`);
}

/** The figures of a capacity entry that must not move when only the code's shape changes. */
const unitsOf = (c: CapacityEntry) => {
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return JSON.stringify({
    writeUnits: round(c.writeUnits),
    readUnits: round(c.readUnits),
    requests: round(c.requests),
    byTarget: Object.fromEntries(Object.entries(c.byTarget).map(([t, u]) => [t, { writeUnits: round(u.writeUnits), readUnits: round(u.readUnits) }])),
  });
};

/**
 * `npm run bench -- --only=capacity`: the capacity scenarios (operations, backlog,
 * partitions, topics, idle jobs) compared operation by operation with bench-results.json,
 * which is left as it is (unless `--write`): the check that a refactor keeps the capacity
 * units. Exits 1 when an operation differs; its calls are printed beside the recorded ones. Units are counted,
 * not timed, with two exceptions: an entity read the cache makes again when a repetition
 * runs late, and the partitioned receive of one message, which starts at a random partition.
 */
async function onlyCapacity(): Promise<void> {
  const dynamo = await startDynamoDbLocal();
  cleanups.push(() => dynamo.stop());
  const rootKey = randomBytes(32).toString('base64');
  const verification = await runVerify(dynamo.endpoint);
  billingRules.emptyQueryFloor = verification.emptyQueryReportsZero;
  billingRules.transactionsFromItems = !(verification.transactionsDoubled && verification.transactionsSummed);
  const capacity: Record<string, CapacityEntry> = {};
  log('capacity per operation');
  for (const [name, r] of Object.entries((await runOperations(dynamo.endpoint, rootKey)).ops)) capacity[name] = capacityEntry(r);
  log('backlog');
  for (const [name, r] of Object.entries((await runBacklog(dynamo.endpoint, rootKey)).ops)) capacity[name] = capacityEntry(r);
  log('partitions');
  for (const [name, r] of Object.entries((await runPartitions(dynamo.endpoint, rootKey)).ops)) capacity[name] = capacityEntry(r);
  log('topics');
  for (const [name, r] of Object.entries((await runTopics(dynamo.endpoint, rootKey)).ops)) capacity[name] = capacityEntry(r);
  log('idle jobs');
  const idle = await runIdle(dynamo.endpoint, rootKey);
  capacity.sweeperIdle = capacityEntry(idle.sweeper);
  capacity.reaperIdle = capacityEntry(idle.reaper);
  const recorded = readResults().capacity ?? {};
  let differ = 0;
  for (const [name, now] of Object.entries(capacity)) {
    const before = recorded[name];
    if (!before) {
      console.log(`new      ${name}: ${unitsOf(now)}`);
      continue;
    }
    if (unitsOf(before) === unitsOf(now)) {
      console.log(`same     ${name}: ${unitsOf(now)}`);
      continue;
    }
    differ++;
    console.log(`DIFFERS  ${name}\n   recorded ${unitsOf(before)}\n   now      ${unitsOf(now)}`);
    console.log(`   recorded repetitions ${before.repTotals.map((t) => `${fmtUnits(t.writeUnits)}W ${fmtUnits(t.readUnits)}R`).join(', ')}`);
    console.log(`   now      repetitions ${now.repTotals.map((t) => `${fmtUnits(t.writeUnits)}W ${fmtUnits(t.readUnits)}R`).join(', ')}`);
    for (const call of before.calls) console.log(`   recorded · ${call}`);
    for (const call of now.calls) console.log(`   now      · ${call}`);
  }
  console.log(`${differ} of ${Object.keys(capacity).length} operations differ from ${resultsFile}`);
  // With --write, the rows measured now replace the recorded ones (after a change to how units
  // are metered, say), leaving every other figure of the file as the last full run wrote it.
  if (process.argv.includes('--write')) {
    const existing = readResults();
    const merged = { ...(existing.capacity ?? {}), ...capacity };
    // Scenario 2's ratios and the targets read from these rows follow them.
    const backlog = { ...(existing.backlog ?? { locked: 1000, scheduled: 1000, setupS: NaN }), ...backlogRatios(merged) };
    const fresh = [...capacityTargets({ backlog, capacity: merged }), ...sessionLifeTargets(merged)];
    writeResults({ ...existing, capacity: merged, backlog, targets: replacingTargets(existing.targets, fresh) });
    for (const t of fresh) console.log(`  ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.value} (wanted ${t.target})`);
    log(`wrote the ${Object.keys(capacity).length} capacity rows into ${resultsFile}`);
  } else if (differ > 0) process.exitCode = 1;
}

/** Where every run writes its figures, and every `--only` run merges its own into. */
const resultsFile = join(repoRoot, 'bench-results.json');
/** The figures written so far, or none. */
const readResults = (): Partial<BenchResults> => (existsSync(resultsFile) ? (JSON.parse(readFileSync(resultsFile, 'utf8')) as Partial<BenchResults>) : {});
const writeResults = (results: object) => writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
/** `targets` with `fresh` in place of those of the same names. */
const replacingTargets = (targets: readonly Target[] | undefined, fresh: readonly Target[]): Target[] => [
  ...(targets ?? []).filter((t) => !fresh.some((w) => w.name === t.name) && !RETIRED_TARGET_NAMES.includes(t.name)),
  ...fresh,
];

const quietRuntime = { info: () => {}, error: (message: string, error?: unknown) => console.error(`[runtime] ${message}`, error ?? '') };

/** A local runtime on `endpoint` with no timers and no stream poller: nothing in the background skews a figure. */
const benchRuntime = (endpoint: string, rootKey: string, clock: OffsetClock, handlers: { api: BenchEnv['handler']; stream: StreamHandler }) =>
  startLocalRuntime({ port: 0, inMemory: true, dynamoEndpoint: endpoint, timers: false, streamPollMs: 0, rootKey, clock, handlers, logger: quietRuntime });

async function main(): Promise<void> {
  if (process.argv.includes('--only=cli')) return onlyCli();
  if (process.argv.includes('--only=capacity')) return onlyCapacity();
  if (process.argv.includes('--only=waiting')) return onlyWaiting();
  if (process.argv.includes('--only=lifecycle')) return onlyLifecycle();
  if (process.argv.includes('--only=sessions')) return onlySessions();
  if (process.argv.includes('--only=throughput')) return onlyThroughput();
  if (process.argv.includes('--only=bundles')) return onlyBundles();
  const rootKey = randomBytes(32).toString('base64');
  const coverage: Partial<Record<CallType, Coverage>> = {};

  log('starting DynamoDB Local; bundling the four functions meanwhile');
  const dynamoStarting = startDynamoDbLocal();
  // However the bundling ends, the Java process must not outlive us.
  dynamoStarting.then(
    (d) => cleanups.push(() => d.stop()),
    () => {},
  );
  cleanups.push(removeBundles);
  const bundled = await buildBundles().catch(async (e) => {
    await dynamoStarting.catch(() => undefined);
    throw e;
  });
  const dynamo: DynamoDbLocal = await dynamoStarting;
  const endpoint = dynamo.endpoint;
  log(`DynamoDB Local at ${endpoint} (pid ${dynamo.pid}); bundles built in ${(bundled.buildMs / 1000).toFixed(1)}s; timing cold imports`);
  const bundles = await timeImports(bundled.built, 5);
  log('what-if builds of the api function');
  const apiVariants = await buildVariants('api');
  removeBundles(); // nothing needs the files any more

  log('checking what DynamoDB Local reports');
  const verification = await runVerify(endpoint);
  billingRules.emptyQueryFloor = verification.emptyQueryReportsZero;
  billingRules.transactionsFromItems = !(verification.transactionsDoubled && verification.transactionsSummed);

  // The runtime (HTTP API for throughput, stream poller for the stream consumer's cost).
  const clock = new OffsetClock();
  const streamTimer: HandlerTimer = { ms: 0, calls: 0, messageCalls: 0 };
  const envs: BenchEnv[] = [];
  // The runtime's table, metered: its API handler serves the HTTP API, its stream handler the poller.
  // Today's layout, named: its handler times (the Lambda duration of scenario 1's dollars, whose
  // operations are measured on it) and its stream consumer's cost are of `msg/` items.
  const runtimeEnv = await createEnv({ name: 'runtime', endpoint, tableName: 'sluice', rootKey, createTable: false, clock, newEntityLayout: 'index' });
  envs.push(runtimeEnv);
  cleanups.push(() => envs.forEach((e) => e.destroy()));
  const timedStream: StreamHandler = async (event) => {
    const t = performance.now();
    const messages = (event.Records ?? []).some((r) => r.dynamodb?.Keys?.pk?.S?.startsWith('msg/'));
    try {
      return await runtimeEnv.stream(event);
    } finally {
      if (messages) {
        streamTimer.ms += performance.now() - t;
        streamTimer.messageCalls++;
      }
      streamTimer.calls++;
    }
  };
  log('starting the local runtime (no timers, no stream poller)');
  const runtime: LocalRuntime = await benchRuntime(endpoint, rootKey, clock, { api: runtimeEnv.handler, stream: timedStream });
  cleanups.push(() => runtime.stop());

  log('CLI cold start: sluice --help, sluice queue list (runtime idle)');
  const cli = await runCliStart(runtime.connectionString);
  // Before the capacity scenarios: DynamoDB Local slows for good as they write (CONTRIBUTING,
  // "DynamoDB Local wears out"), and a handler's time is mostly its calls' wait.
  log('handler time per call (for the Lambda duration)');
  const durations = await runDurations(runtimeEnv, 20);
  log('scenario 1: capacity per operation');
  const operations = await runOperations(endpoint, rootKey);
  log('message life (the default layout: ticketed positions): 1 KB JSON event, 1 KB incompressible, price by size');
  const life = await runLifecycle(endpoint, rootKey, log);
  log("message life on today's layout (the ready index)");
  const indexLife = indexLifeFigures(await runLifecycle(endpoint, rootKey, log, INDEX_LIFE));
  log('message life on the positioned layout (heads claimed by cursor)');
  const positionedLife = positionedLifeFigures(await runPositionedLifecycle(endpoint, rootKey, log));
  log('scenario 2: receive behind 1,000 locked and 1,000 scheduled messages');
  const backlog = await runBacklog(endpoint, rootKey);
  log('scenario 6: partitioned queue, 10,000 sends');
  const partitions = await runPartitions(endpoint, rootKey);
  log('topics: fan-out to 20 and 100 subscriptions');
  const topics = await runTopics(endpoint, rootKey);
  log('scenario 5: idle jobs');
  const idle = await runIdle(endpoint, rootKey);
  log('sweeper: an expiry backlog of 10,000 messages');
  const sweeper = await runSweeper(endpoint, rootKey, 10_000, log);
  // Its own DynamoDB Local: the waiting consumer's price is mostly function time, which a worn
  // emulator stretches (its lapse checks cost 3.7 times as much after the sweeper scenario).
  log('waiting consumer (own DynamoDB Local)');
  const waitingConsumer: WaitingResult = await withOwnDynamoDb((own) => runWaiting(own, rootKey, log));
  log('stream consumer cost');
  const stream = await runStream(runtime, runtimeEnv, streamTimer);

  log('scenario 3: throughput through the local HTTP API (own DynamoDB Local)');
  const { throughput, index: throughputIndex } = await runThroughputBoth(rootKey);
  log('sessions (N1-N8): accept next with 10,000 sessions, and the life of a session message (own DynamoDB Local)');
  const sessionCapacity = await withOwnDynamoDb((own) => runSessionCapacity(own, rootKey, undefined, log));
  log('sessions (N1-N8): throughput of 16 session receivers (own DynamoDB Local)');
  const sessionReceive = await withOwnDynamoDb((own) => runSessionThroughput(own, rootKey, { concurrency: 16, log }));
  for (const env of allEnvs) mergeCoverage(coverage, env.meter.coverage);

  // --- figures --------------------------------------------------------------------------------
  const capacity: Record<string, CapacityEntry> = {};
  for (const [name, r] of Object.entries(operations.ops)) capacity[name] = capacityEntry(r);
  for (const [name, r] of Object.entries(backlog.ops)) capacity[name] = capacityEntry(r);
  for (const [name, r] of Object.entries(partitions.ops)) capacity[name] = capacityEntry(r);
  for (const [name, r] of Object.entries(topics.ops)) capacity[name] = capacityEntry(r);
  for (const [name, r] of Object.entries(sessionCapacity.ops)) capacity[name] = capacityEntry(r);
  capacity.sweeperIdle = capacityEntry(idle.sweeper);
  capacity.reaperIdle = capacityEntry(idle.reaper);

  const ops = operations.ops;
  const streamShare = { invocationsPerMessage: stream.invocationsPerMessage, ms: stream.handlerMs, writeUnits: stream.writeUnits, readUnits: stream.readUnits };
  // A message's send, receive and complete: each call's handler time, shared by the messages it carries.
  const lifecycleCost = (op: OpResult, perCall: number, ms: [send: number, receive: number, complete: number]) =>
    perMillion({
      writeUnits: op.tally.writeUnits,
      readUnits: op.tally.readUnits,
      httpRequests: op.httpRequests,
      apiCalls: ms.map((m) => ({ perMessage: 1 / perCall, ms: m })),
      stream: streamShare,
    });
  const batched = lifecycleCost(ops.lifecycleBatch10!, 10, [durations.sendBatch10, durations.receive10, durations.completeBatch10]);
  const unbatched = lifecycleCost(ops.lifecycle!, 1, [durations.send, durations.receive, durations.complete]);
  const lifeF = lifeFigures(life);
  const idleMonth = idlePerMonth({
    jobs: [
      { name: 'sweeper', readUnits: idle.sweeper.tally.readUnits, writeUnits: idle.sweeper.tally.writeUnits, ms: idle.sweeper.handlerMs },
      { name: 'reaper', readUnits: idle.reaper.tally.readUnits, writeUnits: idle.reaper.tally.writeUnits, ms: idle.reaper.handlerMs },
    ],
    fixed: stackFixedCost(),
  });

  const billingAdjustments = [
    `ConsumedCapacity (INDEXES) came back on ${verification.allReported ? 'every' : 'NOT every'} probed call type, with per-index units ${verification.indexUnitsReported ? 'included' : 'MISSING'}; ReadCapacityUnits/WriteCapacityUnits are not split out, so reads and writes are told apart by call type.`,
    verification.emptyQueryReportsZero
      ? 'DynamoDB Local reports 0 units for a Query that finds nothing; AWS charges at least 0.5 (1 if consistent): applied to every empty Query ("raw" shows Local\'s figure).'
      : 'DynamoDB Local charged empty Queries itself: taken as reported.',
    billingRules.transactionsFromItems
      ? `DynamoDB Local's transaction figures are not AWS's (doubled: ${verification.transactionsDoubled ? 'yes' : 'no'}; a 2-item transaction reports both items: ${verification.transactionsSummed ? 'yes' : 'no'}): a transaction is billed from its items instead, 2 units per 1 KB of each item (deleted items read first, outside the meter, to size them) + 1 unit per index entry added or removed (index writes not doubled: an assumption).`
      : 'DynamoDB Local doubles and sums transactional writes as AWS does: taken as reported.',
    'A failed conditional write comes back without ConsumedCapacity (AWS still charges its write units); the capacity scenarios are sequential and had none, except where listed as failed.',
  ];

  const bundleFigures = bundleFiguresOf(bundles);

  const partial: Omit<BenchResults, 'targets'> = {
    generatedAt: new Date().toISOString(),
    machine: { node: process.version, cpus: cpus().length, platform: `${process.platform}/${process.arch}` },
    durationS: (performance.now() - started) / 1000,
    message: { bodyBytes: 1024, itemBytesSent: operations.itemBytes.sent, itemBytesLocked: operations.itemBytes.locked },
    capacity,
    lifecycleByBodySize: operations.lifecycleByBodySize,
    backlog: {
      locked: backlog.locked,
      scheduled: backlog.scheduled,
      ...backlogRatios(capacity),
      setupS: backlog.setupMs / 1000,
    },
    streamConsumer: stream,
    throughput: {
      ...throughputFigures(throughput, throughputIndex),
      sessionReceive,
    },
    steadyFlow: steadyFlowPrice({
      messagesPerSecond: 100,
      writeUnitsPerMessage: ops.lifecycleBatch10!.tally.writeUnits,
      readUnitsPerMessage: ops.lifecycleBatch10!.tally.readUnits,
      targetUtilization: 0.7,
    }),
    sessions: sessionSummary(sessionCapacity),
    bundles: bundleFigures,
    bundling: {
      banner: lambdaBundling.banner,
      bannerSource: 'infra/bundling.ts',
      target: lambdaBundling.target,
      buildS: bundled.buildMs / 1000,
      whatIf: { api: apiVariants },
    },
    dollarsPerMillionMessages: {
      sluice: batched.total,
      sluiceUnbatched: unbatched.total,
      serviceBusStandard: competitors.serviceBusStandard,
      serviceBusStandardBaseMonthly: prices.serviceBusBaseMonthly,
      sqs: competitors.sqs,
      sqsBatched: competitors.sqsBatched,
      breakdown: { batched, unbatched },
    },
    handlerMs: durations,
    receiveContention: {
      concurrency: throughput.concurrency,
      failedConditionalWritesPerMessage: throughput.receiveComplete.api.failedConditionalWritesPerOp ?? NaN,
      // A failed conditional write is billed like the write: ceil(item size / 1 KB) units.
      writeUnitsPerMessage: (throughput.receiveComplete.api.failedConditionalWritesPerOp ?? NaN) * Math.ceil(operations.itemBytes.locked / 1024),
      dollarsPerMillionMessages:
        (throughput.receiveComplete.api.failedConditionalWritesPerOp ?? NaN) * Math.ceil(operations.itemBytes.locked / 1024) * prices.writeUnit * 1e6,
    },
    idleDollarsPerMonth: idleMonth.total,
    idle: idleMonth,
    sweeper,
    waitingConsumer,
    partitions: (({ ops: _ops, ...rest }) => rest)(partitions),
    cli,
    dynamodbLocal: { verification, coverage, billingAdjustments },
    failures: operations.failures,
    assumptions: allAssumptions(),
  };
  const user = smallUser(lifeF, waitingConsumer.dollarsPerMonth, idleMonth.total);
  const lifeR = lifeResults(lifeF, user);
  Object.assign(partial.capacity, lifeR.capacity);
  Object.assign(partial.dollarsPerMillionMessages, lifeR.dollars);
  Object.assign(partial.dollarsPerMillionMessages.breakdown, lifeR.breakdown);
  partial.priceBySize = lifeR.priceBySize;
  partial.smallUser = lifeR.smallUser;
  partial.hotKey = lifeR.hotKey;
  Object.assign(partial.capacity, indexLife.capacity);
  Object.assign(partial.dollarsPerMillionMessages, indexLife.dollars);
  partial.hotKeyIndex = indexLife.hotKey;
  Object.assign(partial.capacity, positionedLife.capacity);
  Object.assign(partial.dollarsPerMillionMessages, positionedLife.dollars);
  partial.hotKeyPositioned = positionedLife.hotKey;
  const results: BenchResults & { topics?: unknown } = {
    ...partial,
    targets: [...buildTargets(partial), ...lifeTargets(lifeF)],
    topics: { copies20: topics.copies20, send100: topics.send100 },
  };
  writeResults(results);
  printReport(results);
  printWaiting(results.waitingConsumer);
  printLife(lifeF, user);
  printIndexLife(indexLife);
  printSteadyFlow(results.steadyFlow);
  printSessions(results);
  printCli(results.cli);
  const t20 = topics.ops.topicSend20.tally;
  const t20f = topics.ops.topicSend20Filtered.tally;
  console.log(
    `\nTOPICS — one 1 KB send to a topic with 20 filtered subscriptions: ${topics.copies20} copies = ${t20.writeUnits} WCU + ${t20.readUnits} RCU` +
      ` (one matching: ${t20f.writeUnits} WCU + ${t20f.readUnits} RCU);` +
      ` 100 subscriptions, ${topics.send100.copies} copies: median ${topics.send100.medianMs.toFixed(0)} ms, max ${topics.send100.maxMs.toFixed(0)} ms (API Gateway allows 30,000 ms)`,
  );
  log(`wrote ${resultsFile}`);
}

try {
  await main();
  await cleanup();
  log('done');
} catch (error) {
  console.error('[bench] failed:', error);
  await cleanup();
  process.exitCode = 1;
}
