/**
 * The results as one JSON document (bench-results.json) and as the table `npm run bench`
 * prints. Both are built from the same object, so they always show the same figures.
 */
import type { SweeperResult } from './scenarios/sweeper.js';
import type { FunctionName } from '../infra/paths.js';
import { fmtUnits } from './capacity.js';
import type { OpResult } from './harness.js';
import type { BundleResult, Variant } from './bundles.js';
import { assumptions, competitors, prices, type DollarBreakdown, type IdleBreakdown, type SteadyFlowPrice } from './prices.js';
import type { OperationsResult } from './scenarios/operations.js';
import type { PartitionsResult } from './scenarios/partitions.js';
import type { StreamResult } from './scenarios/stream.js';
import type { ThroughputResult } from './scenarios/throughput.js';
import type { VerifyResult } from './scenarios/verify.js';
import type { Durations } from './scenarios/durations.js';
import type { WaitingResult } from './scenarios/waiting.js';
import type { SessionCapacityResult, SessionThroughputResult } from './scenarios/sessions.js';
import type { CallType, Coverage, ReadWriteUnits } from './capacity.js';
import { cliTargets, type CliResult } from './cli.js';
import { capacityRows, consoleLabel } from './capacity-rows.js';

export interface CapacityEntry extends ReadWriteUnits {
  /** DynamoDB requests per message. */
  requests: number;
  /** HTTP API requests (Lambda calls) per message; for jobs, runs per repetition. */
  httpRequests: number;
  /** Messages a repetition handled; the figures are per one. */
  perMessages: number;
  /** As DynamoDB Local reported them, before the AWS billing rules. */
  reported: ReadWriteUnits;
  /** Units by table and index. */
  byTarget: Record<string, ReadWriteUnits>;
  /** Handler time per HTTP request (or job run), ms, median. */
  handlerMs: number;
  /** The DynamoDB calls of one repetition. */
  calls: string[];
  repTotals: ReadWriteUnits[];
  failedConditions: number;
  note?: string;
}

export interface Target {
  name: string;
  value: string;
  target: string;
  pass: boolean;
}

/** A million messages' price at one body size (life-report.ts computes the rows). */
export interface PriceRow {
  bodyBytes: number;
  sluiceJson: number;
  sluiceIncompressible: number;
  serviceBusStandard: number;
  sqs: number;
  sqsBatched: number;
  json: { writeUnits: number; readUnits: number; itemBytesLocked: number; compressed: boolean };
  incompressible: { writeUnits: number; readUnits: number; itemBytesLocked: number; compressed: boolean };
}

/** The most write units a message life puts on one partition key, and what that allows (life-report.ts computes it). */
export interface HotKey {
  /** DynamoDB's ceiling per partition key (table or index), write units a second. */
  writeUnitsPerSecondPerKey: number;
  /** Message lives a second one non-partitioned entity allows: the ceiling over `writeUnitsPerLife`. */
  livesPerSecond: number;
  /** Write units per life on the hottest key, request path and stream consumer together. */
  writeUnitsPerLife: number;
  /** The hottest key (`table <pk>` or `<index> <key>`, entity ids as `{eid}`). */
  key: string;
  /** The keys taking at least 0.1 write units per life, hottest first. */
  keys: { key: string; writeUnitsPerLife: number }[];
  /** What the figures are of. */
  of: string;
}

/** A small user's month, all told (life-report.ts computes it). */
export interface SmallUser {
  description: string;
  messagesPerMonth: number;
  waitingConsumers: number;
  sluice: { messages: number; waiting: number; idleDeployment: number; total: number };
  serviceBusStandard: number;
  sqs: { messages: number; waiting: number; total: number };
  notes: string[];
}

export interface BenchResults {
  generatedAt: string;
  machine: { node: string; cpus: number; platform: string };
  durationS: number;
  message: { bodyBytes: number; itemBytesSent: number; itemBytesLocked: number };
  capacity: Record<string, CapacityEntry>;
  lifecycleByBodySize: OperationsResult['lifecycleByBodySize'];
  backlog: { locked: number; scheduled: number; readRatio: number; writeRatio: number; setupS: number };
  streamConsumer: StreamResult;
  throughput: {
    concurrency: number;
    sliceSeconds: number;
    rounds: number;
    send: ThroughputResult['send'] & {
      perSecond: number;
      baselinePerSecond: number;
      p50Ms: number;
      p99Ms: number;
      baselineP50Ms: number;
      baselineP99Ms: number;
    };
    receiveComplete: ThroughputResult['receiveComplete'] & {
      perSecond: number;
      baselinePerSecond: number;
      p50Ms: number;
      p99Ms: number;
      baselineP50Ms: number;
      baselineP99Ms: number;
    };
    baselineCalls: ThroughputResult['baselineCalls'];
    /** Failed conditional writes (lost lock races) per delivered message, API side. */
    lostRacesPerMessage: number;
    /**
     * The same two sides on a queue of today's layout (`newEntityLayout: 'index'`), beside the
     * default's (ticketed) `send` and `receiveComplete`, so the docs can compare.
     */
    sendIndex?: BenchResults['throughput']['send'];
    receiveCompleteIndex?: BenchResults['throughput']['receiveComplete'];
    lostRacesPerMessageIndex?: number;
    /** 16 session receivers over many sessions, next to plain receivers (broker in process). */
    sessionReceive?: SessionThroughputResult;
  };
  /** DynamoDB's month at a steady 100 messages a second (batches of 10), on demand and provisioned. */
  steadyFlow: SteadyFlowPrice;
  /** Accept next with many sessions, and with locked ones ahead (N7). */
  sessions?: SessionsSummary;
  bundles: Record<FunctionName, Omit<BundleResult, 'file'>>;
  bundling: { banner: string; bannerSource: string; target: string; buildS: number; whatIf: Record<string, Variant[]> };
  dollarsPerMillionMessages: {
    sluice: number;
    sluiceUnbatched: number;
    serviceBusStandard: number;
    serviceBusStandardBaseMonthly: number;
    sqs: number;
    sqsBatched: number;
    /** The whole life of a 1 KB JSON event, and of a 1 KB incompressible body, batches of 10. */
    sluiceJson?: number;
    sluiceIncompressible?: number;
    /** The same lives on a queue of today's layout (`newEntityLayout: 'index'`), stream consumer included. */
    sluiceJsonIndex?: number;
    sluiceIncompressibleIndex?: number;
    /** The same lives on a queue of the cursor-claimed positioned layout (`newEntityLayout: 'positions'`), all told. */
    sluiceJsonPositioned?: number;
    sluiceIncompressiblePositioned?: number;
    breakdown: { batched: DollarBreakdown; unbatched: DollarBreakdown; json?: DollarBreakdown; incompressible?: DollarBreakdown };
  };
  /** A million messages' price by body size next to Service Bus Standard and SQS. */
  priceBySize?: PriceRow[];
  /** A small user's month, all told. */
  smallUser?: SmallUser;
  /** Message lives a second one entity of the default layout allows, from the write units on its hottest partition key. */
  hotKey?: HotKey;
  /** The hottest key of today's layout's batched JSON lives (`newEntityLayout: 'index'`). */
  hotKeyIndex?: HotKey;
  /** The hottest key of the cursor-claimed positioned layout's batched JSON lives. */
  hotKeyPositioned?: HotKey;
  /** Handler time per API call on the warm runtime table, medians (the Lambda duration in the dollars). */
  handlerMs: Durations;
  /** Lost lock races of the API receive at the throughput concurrency, and what they would cost on AWS. */
  receiveContention: { concurrency: number; failedConditionalWritesPerMessage: number; writeUnitsPerMessage: number; dollarsPerMillionMessages: number };
  idleDollarsPerMonth: number;
  /** A sweeper run clearing an expiry backlog, as Lambda runs it (50 s invocations). */
  sweeper: SweeperResult;
  idle: IdleBreakdown;
  /** One consumer waiting on an empty queue through availability hints. */
  waitingConsumer?: WaitingResult;
  partitions: Omit<PartitionsResult, 'ops'>;
  /** The `sluice` command's cold start (bin/sluice.js on its bundle), `--help` and `queue list`. */
  cli?: CliResult;
  dynamodbLocal: { verification: VerifyResult; coverage: Partial<Record<CallType, Coverage>>; billingAdjustments: string[] };
  /** Scenarios that could not be measured, and why (a broker bug shows up here). */
  failures: { scenario: string; error: string }[];
  targets: Target[];
  assumptions: string[];
}

/** The accept-next comparison (N7); the figures themselves are in `capacity`. */
export type SessionsSummary = Omit<SessionCapacityResult, 'ops'>;

export function capacityEntry(r: OpResult): CapacityEntry {
  return {
    writeUnits: r.tally.writeUnits,
    readUnits: r.tally.readUnits,
    requests: r.tally.requests,
    httpRequests: r.httpRequests,
    perMessages: r.perMessages,
    reported: { writeUnits: r.tally.reported.writeUnits, readUnits: r.tally.reported.readUnits },
    byTarget: r.tally.byTarget,
    handlerMs: r.handlerMs,
    calls: r.calls,
    repTotals: r.repTotals,
    failedConditions: r.tally.failedConditions,
    ...(r.note ? { note: r.note } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Printing

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : ' '.repeat(n - s.length) + s);
const num = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const usd = (n: number) => (n >= 0.01 ? `$${n.toFixed(3)}` : `$${n.toFixed(5)}`);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

function table(headers: string[], rows: string[][], right: boolean[] = []): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right[i] ? lpad(c, widths[i]!) : pad(c, widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

/** The steady-flow line of the report. */
export function printSteadyFlow(s: SteadyFlowPrice, out: (line: string) => void = console.log): void {
  out(
    `\nSTEADY 100 MESSAGES/S (batches of 10, ${num(s.messagesPerMonth / 1e6, 1)} M a month) — DynamoDB per month: on demand ${usd(s.onDemandDollarsPerMonth)}, ` +
      `provisioned with auto scaling ${usd(s.provisionedDollarsPerMonth)} (${num(s.provisionedWriteUnits, 0)} WCU + ${num(s.provisionedReadUnits, 0)} RCU over table and indexes; ${num(s.ratio)}x)`,
  );
}

export function printReport(r: BenchResults, out: (line: string) => void = console.log): void {
  const o = out;
  o('');
  o(`SLUICE BENCH  ${r.generatedAt}  node ${r.machine.node}, ${r.machine.cpus} CPUs, ${r.machine.platform}; took ${Math.round(r.durationS)} s`);
  o('');
  o(
    `1. CAPACITY PER OPERATION — per message, units as AWS bills them (DynamoDB Local's raw report in "raw"); ` +
      `1 KB body (${r.message.bodyBytes} B) = item of ~${r.message.itemBytesSent} B sent, ~${r.message.itemBytesLocked} B locked`,
  );
  const rows: string[][] = [];
  for (const { key, console: label } of capacityRows) {
    const c = r.capacity[key];
    if (!c) continue;
    const raw =
      c.reported.writeUnits !== c.writeUnits || c.reported.readUnits !== c.readUnits
        ? `${fmtUnits(c.reported.writeUnits)}W ${fmtUnits(c.reported.readUnits)}R`
        : '';
    const idx = Object.entries(c.byTarget)
      .filter(([t, v]) => t !== 'table' && v.writeUnits > 0)
      .map(([t, v]) => `${t} ${fmtUnits(Number(v.writeUnits.toFixed(2)))}`)
      .join(', ');
    rows.push([label, num(c.writeUnits), idx || '-', num(c.readUnits), num(c.requests), num(c.httpRequests, 1), num(c.handlerMs, 1), raw]);
  }
  for (const line of table(['operation', 'WCU', 'of which index W', 'RCU', 'DDB calls', 'HTTP', 'ms/call*', 'raw (if differs)'], rows, [
    false,
    true,
    false,
    true,
    true,
    true,
    true,
    false,
  ]))
    o(`  ${line}`);
  o('   * handler (or job) time per call, median of the few repetitions on a fresh table: indicative only (section 5 uses warm medians)');
  o('');
  o('   DynamoDB calls of one repetition (a batch operation: one request of 10):');
  for (const { key, console: label } of capacityRows) {
    const c = r.capacity[key];
    if (!c) continue;
    o(`   ${label}${c.note ? `  [${c.note}]` : ''}`);
    for (const call of c.calls) o(`      · ${call}`);
  }
  o('');
  o('   Lifecycle (send + peek-lock + complete of one message) by body size:');
  for (const line of table(
    ['body', 'item (locked)', 'WCU', 'RCU'],
    r.lifecycleByBodySize.map((s) => [`${s.bodyBytes} B`, `${s.itemBytes} B`, num(s.writeUnits), num(s.readUnits)]),
    [true, true, true, true],
  ))
    o(`     ${line}`);
  o('');
  const s = r.streamConsumer;
  o(
    `   Stream consumer (counts), ${s.messages} messages through batched lifecycles: ${s.records} records in ${s.batches} invocations with message records (local poller: ${s.localBatches}) ` +
      `(${num(s.invocationsPerMessage, 3)}/message), per message ${num(s.writeUnits, 3)} WCU + ${num(s.readUnits, 3)} RCU, ${num(s.handlerMs, 1)} ms/invocation`,
  );
  for (const call of s.calls) o(`      · ${call}`);
  o(
    `   Stream consumer, sparse traffic (each API call's records alone, as with Lambda's default batching window of 0): ` +
      `${num(s.sparse.invocationsPerMessage, 2)} invocations/message, ${num(s.sparse.writeUnits, 2)} WCU + ${num(s.sparse.readUnits, 2)} RCU per message`,
  );
  for (const call of s.sparse.calls) o(`      · ${call}`);

  o('');
  o(
    `2. BACKLOG — peek-lock receive of 1 with ${r.backlog.locked} locked + ${r.backlog.scheduled} scheduled ahead: ` +
      `${num(r.capacity.receiveWithBacklog?.readUnits ?? NaN)} RCU / ${num(r.capacity.receiveWithBacklog?.writeUnits ?? NaN)} WCU vs ` +
      `${num(r.capacity.receiveWithoutBacklog?.readUnits ?? NaN)} RCU / ${num(r.capacity.receiveWithoutBacklog?.writeUnits ?? NaN)} WCU without: ` +
      `${num(r.backlog.readRatio)}x reads, ${num(r.backlog.writeRatio)}x writes (setup ${num(r.backlog.setupS, 1)} s)`,
  );

  o('');
  const t = r.throughput;
  o(
    `3. THROUGHPUT — local HTTP API, ${t.concurrency} concurrent clients, vs raw DynamoDB Local calls at the same concurrency; ` +
      `${t.rounds} slices of ${t.sliceSeconds} s per side, alternating (shared machine)`,
  );
  for (const line of table(
    ['phase', 'ops/s', 'p50 ms', 'p99 ms', 'done', 'errors', 'DDB calls/op', 'failed cond. writes/op', 'baseline ops/s', 'p50 ms', 'p99 ms', 'ratio'],
    [
      ['send (1 KB)', t.send.api, t.send.baseline, t.send.ratio] as const,
      ['receive+complete', t.receiveComplete.api, t.receiveComplete.baseline, t.receiveComplete.ratio] as const,
    ].map(([name, a, b, ratio]) => [
      name,
      num(a.perSecond, 0),
      num(a.p50Ms, 1),
      num(a.p99Ms, 1),
      String(a.completed),
      String(a.errors),
      num(a.dynamoCallsPerOp ?? NaN),
      num(a.failedConditionalWritesPerOp ?? NaN),
      num(b.perSecond, 0),
      num(b.p50Ms, 1),
      num(b.p99Ms, 1),
      num(ratio),
    ]),
    [false, true, true, true, true, true, true, true, true, true, true, true],
  ))
    o(`  ${line}`);
  o(`   baseline send: ${t.baselineCalls.send}`);
  o(`   baseline receive+complete: ${t.baselineCalls.receiveComplete}`);
  o(
    `   API receives that came back empty while thousands waited (every candidate lost to another receiver): ${t.receiveComplete.api.emptyReceives ?? 0}; ` +
      `baseline lock updates that lost a race: ${t.receiveComplete.baseline.lostRaces ?? 0}` +
      (t.receiveComplete.api.drainedSlices || t.receiveComplete.baseline.drainedSlices ? '; some slices ran out of messages' : ''),
  );

  o('');
  o(
    `4. BUNDLES — esbuild with infra/bundling.ts, as the deploy (ESM, minify, platform node, target ${r.bundling.target}, SDK bundled; banner from ${r.bundling.bannerSource}); cold import in a fresh node, median`,
  );
  for (const line of table(
    ['function', 'bytes', 'size', 'map', 'import ms', 'cpu ms', 'no maps ms', 'largest parts'],
    (Object.entries(r.bundles) as [string, Omit<BundleResult, 'file'>][]).map(([name, b]) => [
      name,
      String(b.bytes),
      kb(b.bytes),
      kb(b.sourceMapBytes),
      num(b.importMs, 1),
      num(b.importCpuMs, 1),
      num(b.importMsNoSourceMaps, 1),
      b.topInputs
        .slice(0, 5)
        .map((i) => `${i.name} ${Math.round(i.bytes / 1024)}K`)
        .join(', '),
    ]),
    [false, true, true, true, true, true, true, false],
  ))
    o(`  ${line}`);
  o(
    '   import ms: wall time, node --enable-source-maps as deployed (NODE_OPTIONS); cpu ms: user+system CPU of the same imports (less disturbed by other load)',
  );
  for (const [fn, variants] of Object.entries(r.bundling.whatIf)) {
    o(
      `   what-if for ${fn} (not deployed): ` +
        variants
          .map(
            (v) =>
              `${v.name} ${kb(v.bytes)}${v.bytes === r.bundles[fn as FunctionName]?.bytes ? ' (no change: the code already does this)' : ''}${v.importMs !== undefined ? ` (import ${num(v.importMs, 1)} ms, cpu ${num(v.importCpuMs ?? NaN, 1)} ms)` : ''}`,
          )
          .join('; '),
    );
  }

  o('');
  const d = r.dollarsPerMillionMessages;
  o('5. DOLLARS — one million 1 KB messages (send, peek-lock, complete)');
  const br = (name: string, b: DollarBreakdown) => [
    name,
    usd(b.dynamodb),
    usd(b.httpApi),
    usd(b.lambdaCalls),
    usd(b.lambdaDuration),
    usd(b.streamConsumer),
    usd(b.total),
  ];
  for (const line of table(
    ['offer', 'DynamoDB', 'HTTP API', 'Lambda calls', 'Lambda GB-s', 'stream', 'total'],
    [
      br('Sluice, batches of 10', d.breakdown.batched),
      br('Sluice, one at a time', d.breakdown.unbatched),
      ['Azure Service Bus Standard', '', '', '', '', '', `${usd(d.serviceBusStandard)} + $${d.serviceBusStandardBaseMonthly}/month`],
      ['Amazon SQS, one at a time', '', '', '', '', '', usd(d.sqs)],
      ['Amazon SQS, batches of 10', '', '', '', '', '', usd(d.sqsBatched)],
    ],
    [false, true, true, true, true, true, true],
  ))
    o(`  ${line}`);
  const h = r.handlerMs;
  o(
    `   Lambda duration from handler time per call (median of ${h.reps}, warm table): send ${num(h.send, 1)} ms, receive ${num(h.receive, 1)}, complete ${num(h.complete, 1)}; ` +
      `batch send of 10 ${num(h.sendBatch10, 1)}, receive of 10 ${num(h.receive10, 1)}, batch complete of 10 ${num(h.completeBatch10, 1)}`,
  );
  const rc = r.receiveContention;
  o(
    `   Not in the totals: at ${rc.concurrency} concurrent receivers on one partition, each received message cost ${num(rc.failedConditionalWritesPerMessage)} failed ` +
      `conditional writes (lost lock races, billed on AWS): +${num(rc.writeUnitsPerMessage, 1)} WCU = +${usd(rc.dollarsPerMillionMessages)} per million`,
  );
  o('');
  const idle = r.idle;
  o(
    `   IDLE deployment per month: ${usd(r.idleDollarsPerMonth)} = Lambda calls ${usd(idle.lambdaCalls)} + duration ${usd(idle.lambdaDuration)} + ` +
      `DynamoDB ${usd(idle.dynamodb)} + log ingestion ${usd(idle.logsIngest)} + fixed resources ${usd(idle.fixed ?? 0)}`,
  );
  const fixedTypes = Object.entries(idle.fixedByType ?? {});
  o(
    `      · fixed (the default template's resources, priced by type): ${fixedTypes.length === 0 ? 'nothing bills by the month' : fixedTypes.map(([t, d]) => `${t} ${usd(d)}`).join(', ')}`,
  );
  for (const [job, v] of Object.entries(idle.perJob)) {
    o(
      `      · ${job}: ${fmtUnits(v.readUnitsPerRun)} RCU and ${num(v.msPerRun, 1)} ms per run → Lambda ${usd(v.lambda)} + DynamoDB ${usd(v.dynamodb)} a month`,
    );
  }
  if (r.sweeper) {
    o(
      `   SWEEPER on a backlog of ${r.sweeper.backlog} expired messages: ${num(r.sweeper.expirationsPerSecond, 0)} expirations/s ` +
        `(${r.sweeper.runs} run(s), ${num(r.sweeper.seconds, 1)} s of sweeping)`,
    );
  }

  o('');
  const p = r.partitions;
  o(
    `6. PARTITIONS — ${p.sends} sends to a partitioned queue (${p.partitions} partition keys): busiest key ${(p.busiestShare * 100).toFixed(2)}% ` +
      `vs fair ${(p.fairShare * 100).toFixed(2)}% = ${num(p.spread)}x; writes per key ${p.writesPerKey.join(' ')}`,
  );
  for (const key of ['partitionedReceive', 'partitionedReceiveOne', 'partitionedReceiveEmpty']) {
    const c = r.capacity[key];
    if (c)
      o(
        `   ${pad(consoleLabel(key), 32)} ${num(c.readUnits)} RCU (raw ${fmtUnits(c.reported.readUnits)}), ${num(c.writeUnits)} WCU, ${num(c.requests, 1)} DynamoDB calls`,
      );
  }

  if (r.failures.length) {
    o('');
    o('NOT MEASURED (failed)');
    for (const f of r.failures) o(`   · ${f.scenario}: ${f.error}`);
  }
  o('');
  o('TARGETS');
  for (const line of table(
    ['', 'target', 'measured', 'wanted'],
    r.targets.map((x) => [x.pass ? 'PASS' : 'MISS', x.name, x.value, x.target]),
  ))
    o(`  ${line}`);

  o('');
  o('DYNAMODB LOCAL — does it report ConsumedCapacity?');
  const v = r.dynamodbLocal.verification;
  for (const [name, c] of Object.entries(v.calls)) {
    const idx = Object.entries(c.indexes)
      .map(([k, u]) => `${k} ${fmtUnits(u)}`)
      .join(', ');
    o(`   ${pad(name, 50)} ${c.reported ? 'reported' : 'NOT reported'}: total ${fmtUnits(c.total)}, table ${fmtUnits(c.table)}${idx ? `, ${idx}` : ''}`);
  }
  const cov = Object.entries(r.dynamodbLocal.coverage)
    .map(([type, c]) => `${type} ${c!.withCapacity}/${c!.calls}`)
    .join(', ');
  o(`   during the whole run, calls answered with ConsumedCapacity: ${cov}`);
  for (const a of r.dynamodbLocal.billingAdjustments) o(`   · ${a}`);
  o('');
  o('ASSUMPTIONS');
  for (const a of r.assumptions) o(`   · ${a}`);
  o('');
}

/** Scenario 3's targets: the API against bare calls, and lock races lost at 16 receivers. */
export function throughputTargets(t: BenchResults['throughput']): Target[] {
  return [
    {
      name: 'send throughput vs raw PutItem',
      value: `${num(t.send.ratio)} (${num(t.send.perSecond, 0)} vs ${num(t.send.baselinePerSecond, 0)}/s)`,
      target: '≥ 0.8',
      pass: t.send.ratio >= 0.8,
    },
    {
      name: 'receive+complete throughput vs raw calls',
      value: `${num(t.receiveComplete.ratio)} (${num(t.receiveComplete.perSecond, 0)} vs ${num(t.receiveComplete.baselinePerSecond, 0)}/s)`,
      target: '≥ 0.7',
      pass: t.receiveComplete.ratio >= 0.7,
    },
    {
      name: `lost lock races per message at ${t.concurrency} receivers`,
      value: num(t.lostRacesPerMessage),
      target: '< 0.2',
      pass: t.lostRacesPerMessage < 0.2,
    },
  ];
}

/** Each function's bundle size and cold import. */
export function bundleTargets(bundles: BenchResults['bundles']): Target[] {
  return (Object.entries(bundles) as [string, Omit<BundleResult, 'file'>][]).flatMap(([name, b]) => [
    { name: `bundle ${name}`, value: `${kb(b.bytes)} (${b.bytes} B)`, target: '< 500 KB (512,000 B)', pass: b.bytes < 500 * 1024 },
    { name: `cold import ${name}`, value: `${num(b.importMs, 1)} ms`, target: '< 150 ms', pass: b.importMs < 150 },
  ]);
}

/**
 * The backlog ratios of scenario 2: its receive behind the backlog against the same receive
 * with nothing ahead, both measured there on the default layout.
 */
export function backlogRatios(capacity: Record<string, CapacityEntry>): Pick<BenchResults['backlog'], 'readRatio' | 'writeRatio'> {
  const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? 1 : Infinity) : a / b);
  const behind = capacity.receiveWithBacklog;
  const plain = capacity.receiveWithoutBacklog;
  return { readRatio: ratio(behind?.readUnits ?? NaN, plain?.readUnits ?? NaN), writeRatio: ratio(behind?.writeUnits ?? NaN, plain?.writeUnits ?? NaN) };
}

/** The capacity scenarios' targets met on today's layout and kept on the default's: scenario 2's backlog, scenario 6's empty receive. */
export function capacityTargets(r: Pick<BenchResults, 'backlog' | 'capacity'>): Target[] {
  return [
    {
      name: 'receive with 1k locked + 1k scheduled ahead',
      value: `${num(r.backlog.readRatio)}x reads, ${num(r.backlog.writeRatio)}x writes`,
      target: '≤ 1.2x',
      pass: r.backlog.readRatio <= 1.2 && r.backlog.writeRatio <= 1.2,
    },
    ...(r.capacity.partitionedReceiveEmpty
      ? [
          {
            name: 'empty receive, 16 partitions',
            value: `${num(r.capacity.partitionedReceiveEmpty.readUnits)} RCU`,
            target: '≤ 1',
            pass: r.capacity.partitionedReceiveEmpty.readUnits <= 1 + 1e-9,
          },
        ]
      : []),
  ];
}

/**
 * Scenario 1's rows: the bench message's life measured operation by operation on the index
 * layout, against the first targets Sluice set itself (the default layout's lives have their
 * own rows, life-report.ts). Named so, so that nobody reads them as the default's.
 */
export const INDEX_LIFE_TARGETS = {
  writeUnits: 'index layout, one at a time: write units (send+lock+complete)',
  readUnits: 'index layout, one at a time: read units',
  dollars: 'index layout: $ per million bench messages (batches of 10)',
} as const;

/** Names rows had in earlier versions of the bench (scenario 1's, the JSON event's dollars), which a partial run's merge drops. */
export const RETIRED_TARGET_NAMES = [
  'lifecycle write units (send+lock+complete)',
  'lifecycle read units',
  '$ per million messages (batches of 10)',
  '$ per million 1 KB JSON events (batches of 10)',
];

/** A row whose figure, in `unit`s, passes at `most` or below. */
export const unitsAtMost = (name: string, value: number, unit: string, most: number): Target => ({
  name,
  value: `${num(value)} ${unit}`,
  target: `≤ ${most}`,
  pass: value <= most + 1e-9,
});

/**
 * The session lives' targets (the capacity scenario's rows): a message in a session of 10
 * (accept, receive, complete, release) and a session of one message with its send, all told.
 * The stream's count marker of a session message is not in the capacity rows: said in the name.
 */
export function sessionLifeTargets(capacity: Record<string, CapacityEntry | undefined>): Target[] {
  const ten = capacity.sessionLifecycle10;
  const one = capacity.sessionLifecycle;
  const send = capacity.sessionSend;
  const rows: Target[] = [];
  if (ten) rows.push(unitsAtMost('a message in a session of 10: write units', ten.writeUnits, 'WCU', 4));
  if (one && send) {
    const all = one.writeUnits + send.writeUnits;
    rows.push({
      name: 'a session of 1 message with its send: write units (requests; stream marker not included)',
      value: `${num(all)} WCU (send ${num(send.writeUnits)})`,
      target: '≤ 8',
      pass: all <= 8 + 1e-9,
    });
  }
  return rows;
}

export function buildTargets(r: Omit<BenchResults, 'targets'>): Target[] {
  // Scenario 1's life of the bench message, one at a time, on today's layout (the operations
  // are measured there one by one); the default's lives have their own targets (life-report.ts).
  const life = r.capacity.lifecycle!;
  const targets: Target[] = [
    {
      name: INDEX_LIFE_TARGETS.writeUnits,
      value: `${num(life.writeUnits)} WCU`,
      target: '≤ 3',
      pass: life.writeUnits <= 3 + 1e-9,
    },
    {
      name: INDEX_LIFE_TARGETS.readUnits,
      value: `${num(life.readUnits)} RCU`,
      target: '≤ 0.5',
      pass: life.readUnits <= 0.5 + 1e-9,
    },
    ...throughputTargets(r.throughput),
    ...capacityTargets(r),
    ...sessionLifeTargets(r.capacity),
  ];
  targets.push(...waitingTargets(r.waitingConsumer));
  targets.push(...sessionTargets(r.sessions));
  targets.push(...cliTargets(r.cli));
  targets.push(...bundleTargets(r.bundles));
  targets.push({
    name: INDEX_LIFE_TARGETS.dollars,
    value: usd(r.dollarsPerMillionMessages.sluice),
    target: `< ${usd(competitors.serviceBusStandard)} (Service Bus Standard)`,
    pass: r.dollarsPerMillionMessages.sluice < competitors.serviceBusStandard,
  });
  targets.push({ name: 'idle deployment per month', value: usd(r.idleDollarsPerMonth), target: '< $0.10', pass: r.idleDollarsPerMonth < 0.1 });
  targets.push({ name: 'partition spread (busiest / fair share)', value: `${num(r.partitions.spread)}x`, target: '≤ 1.3x', pass: r.partitions.spread <= 1.3 });
  return targets;
}

export const allAssumptions = () => [...assumptions, `Prices object: ${JSON.stringify(prices)}`];

/** Targets for the waiting path. */
export function waitingTargets(w: WaitingResult | undefined): Target[] {
  if (!w) return [];
  return [
    { name: 'one waiting consumer, per month', value: usd(w.dollarsPerMonth), target: '< $0.10', pass: w.dollarsPerMonth < 0.1 },
    { name: 'waiting path: send ack to callback, p50', value: `${num(w.p50Ms, 0)} ms`, target: '≤ 1,000 ms', pass: w.p50Ms <= 1000 },
    { name: 'waiting path: send ack to callback, p99', value: `${num(w.p99Ms, 0)} ms`, target: '≤ 2,000 ms', pass: w.p99Ms <= 2000 },
  ];
}

/** The waiting consumer's section of the report. */
export function printWaiting(w: WaitingResult | undefined, out: (line: string) => void = console.log): void {
  if (!w) return;
  const m = w.measured;
  out('');
  out(
    `WAITING CONSUMER — one consumer on an empty queue: hints over a WebSocket, a fallback poll every ${m.fallbackPollMs / 60_000} min, ` +
      `a ping every ${m.pingIntervalMs / 60_000} min; measured ${m.realSeconds} s at ${m.compression}× compressed timers (${num(m.waitedHours, 1)} h of waiting), scaled to a month`,
  );
  const rows = Object.entries(w.perMonth).map(([k, v]) => [k, num(v.count, 0), usd(v.dollars)]);
  rows.push(['total', '', usd(w.dollarsPerMonth)]);
  for (const line of table(['per month', 'count', 'dollars'], rows, [false, true, true])) out(`  ${line}`);
  out(
    `  delivery over the waiting path, send acknowledgement to consumer callback (${m.latencySends} sends): p50 ${num(w.p50Ms, 0)} ms, p99 ${num(w.p99Ms, 0)} ms, max ${num(w.maxMs, 0)} ms`,
  );
}

const ACCEPT_NEXT_TARGET = 'accept next session';
export const isSessionTarget = (t: Target) => t.name.startsWith(ACCEPT_NEXT_TARGET);

/** Target for accept next (N7). */
export function sessionTargets(s: SessionsSummary | undefined): Target[] {
  if (!s) return [];
  return [
    {
      name: `${ACCEPT_NEXT_TARGET} with ${s.lockedAhead} locked ahead (N7)`,
      value: `${num(s.readRatio)}x reads, ${num(s.writeRatio)}x writes, ${num(s.requestsRatio)}x requests`,
      target: '≤ 1.2x',
      pass: s.readRatio <= 1.2 && s.writeRatio <= 1.2 && s.requestsRatio <= 1.2,
    },
  ];
}

/** The sessions section of the report (N1-N8). */
export function printSessions(r: Pick<BenchResults, 'capacity' | 'sessions' | 'throughput'>, out: (line: string) => void = console.log): void {
  const s = r.sessions;
  const t = r.throughput?.sessionReceive;
  if (!s && !t) return;
  out('');
  out('7. SESSIONS (N1-N8) — session operations on the broker over the metered client (sends through the API handler)');
  if (s) {
    const a = r.capacity.acceptNextSession;
    const b = r.capacity.acceptNextSessionWithLocked;
    out(
      `   accept next with ${s.sessions} sessions of one message: ${num(a?.writeUnits ?? NaN)} WCU + ${num(a?.readUnits ?? NaN)} RCU, ${num(a?.requests ?? NaN, 1)} DynamoDB calls; ` +
        `with the ${s.lockedAhead} oldest locked: ${num(b?.writeUnits ?? NaN)} WCU + ${num(b?.readUnits ?? NaN)} RCU, ${num(b?.requests ?? NaN, 1)} calls ` +
        `= ${num(s.readRatio)}x reads, ${num(s.writeRatio)}x writes (setup ${num(s.setupS, 1)} s)`,
    );
    for (const { key, console: label } of capacityRows.filter((row) => row.key.startsWith('session'))) {
      const c = r.capacity[key];
      if (!c) continue;
      out(
        `   ${pad(label, 36)} per message ${num(c.writeUnits)} WCU + ${num(c.readUnits)} RCU, ${num(c.requests, 1)} DynamoDB calls, ${num(c.httpRequests, 1)} HTTP` +
          (c.failedConditions ? `, ${num(c.failedConditions, 2)} failed conditional writes (billed on AWS, not in the WCU)` : ''),
      );
    }
  }
  if (t) {
    const row = (name: string, x: SessionThroughputResult['session'] | SessionThroughputResult['plain']) => [
      name,
      num(x.perSecond, 0),
      String(x.messages),
      num(x.p50Ms, 1),
      num(x.p99Ms, 1),
      num(x.dynamoCallsPerMessage),
      num(x.failedConditionalWritesPerMessage),
      num(x.writeUnitsPerMessage),
      num(x.readUnitsPerMessage),
      String(x.errors),
    ];
    out(
      `   throughput, ${t.concurrency} concurrent loops for ${t.seconds} s, ${t.sessions} sessions of ${t.messagesPerSession}: session/plain = ${num(t.ratio)}; ` +
        `${num(t.session.sessionsPerSecond, 1)} sessions/s, ${t.session.emptyAccepts} accepts found nothing${t.session.drained ? ' (drained)' : ''}`,
    );
    for (const line of table(
      ['loops', 'msgs/s', 'msgs', 'p50 ms', 'p99 ms', 'DDB calls/msg', 'failed cond./msg', 'WCU/msg', 'RCU/msg', 'errors'],
      [row('accept+receive+complete+release', t.session), row('plain receive+complete', t.plain)],
      [false, true, true, true, true, true, true, true, true, true],
    ))
      out(`     ${line}`);
    out(`   ${t.note}`);
    if (t.firstError) out(`   FIRST ERROR: ${t.firstError}`);
  }
}
