/**
 * "A message's life" in figures: the capacity entries, the dollars of a million lives
 * (JSON event and incompressible body), the price by body size next to Service Bus Standard
 * and SQS, the hottest partition key's ceiling of lives a second, what a small user pays a
 * month, and the targets. `npm run bench` and `npm run bench -- --only=lifecycle` both build
 * them here, from the lifecycle scenario alone, so they cannot differ. The stable figures are
 * of the default layout (ticketed positions); today's layout's and the cursor-claimed
 * positioned layout's lives stand beside them under keys of their own.
 */
import { capacityEntry, unitsAtMost, type CapacityEntry, type HotKey, type PriceRow, type SmallUser, type Target } from './report.js';
import type { ReadWriteUnits } from './capacity.js';
import { competitorsBySize, perMillion, prices, type DollarBreakdown, type PerMessageInputs } from './prices.js';
import type { LifecycleResult, LifeRun, LifeStream, PositionedLifecycleResult } from './scenarios/lifecycle.js';

export interface LifeEntry extends CapacityEntry {
  bodyBytes: number;
  itemBytes: { sent: number; locked: number };
  compressed: boolean;
  /** Write units the `ready` index took per message life (none on a positioned queue, the default's). */
  readyIndexWriteUnits: number;
  /** The stream consumer's units per message life (E6 count markers and count updates). */
  stream: ReadWriteUnits;
  /** A life's units all told: the requests' (the entry's own figures) and the stream consumer's. */
  allTold: ReadWriteUnits;
  /** Handler time of each call of a life, ms, median (the Lambda duration in the dollars). */
  msPerCall: LifeRun['ms'];
}

export interface LifeFigures {
  capacity: { lifecycleJson: LifeEntry; lifecycleSingle: LifeEntry; lifecycleIncompressible: LifeEntry };
  dollars: { sluiceJson: number; sluiceIncompressible: number; breakdown: { json: DollarBreakdown; incompressible: DollarBreakdown } };
  priceBySize: PriceRow[];
  hotKey: HotKey;
  /** The stream consumer over the lives' records. */
  stream: LifeStream;
  /** The machine's 1-minute load average while the lives ran: handler times (Lambda duration) grow with it. */
  loadAverage: number;
}

/** DynamoDB's write throughput per partition key, a second. */
const KEY_WRITE_UNITS_PER_SECOND = 1000;

const plus = (a: ReadWriteUnits, b: ReadWriteUnits): ReadWriteUnits => ({ readUnits: a.readUnits + b.readUnits, writeUnits: a.writeUnits + b.writeUnits });

export function lifeEntry(run: LifeRun, stream: LifeStream): LifeEntry {
  const entry = capacityEntry(run.op);
  const streamUnits = { readUnits: stream.readUnits, writeUnits: stream.writeUnits };
  return {
    ...entry,
    bodyBytes: run.bodyBytes,
    itemBytes: run.itemBytes,
    compressed: run.compressed,
    readyIndexWriteUnits: run.op.tally.byTarget.ready?.writeUnits ?? 0,
    stream: streamUnits,
    allTold: plus(entry, streamUnits),
    msPerCall: run.ms,
  };
}

/** The stream consumer's share of a life's dollars. */
const streamShareOf = (s: LifeStream): PerMessageInputs['stream'] => ({
  invocationsPerMessage: s.invocationsPerMessage,
  ms: s.handlerMs,
  writeUnits: s.writeUnits,
  readUnits: s.readUnits,
});

/** Dollars of a million lives: DynamoDB, HTTP API, Lambda calls and time, stream consumer. */
export function lifeDollars(run: LifeRun, stream: LifeStream): DollarBreakdown {
  const perMessage = 1 / run.batch;
  return perMillion({
    writeUnits: run.op.tally.writeUnits,
    readUnits: run.op.tally.readUnits,
    httpRequests: run.op.httpRequests,
    apiCalls: [
      { perMessage, ms: run.ms.send },
      { perMessage, ms: run.ms.receive },
      { perMessage, ms: run.ms.complete },
    ],
    stream: streamShareOf(stream),
  });
}

/** A key with its entity id (and a stream record's id) written as a placeholder, so figures of different runs compare. */
const keyName = (key: string) =>
  key
    .replace(/(^|[\s/])(msg|stats|sess|ready|pos)\/[^/\s]+/g, '$1$2/{eid}')
    .replace(/counted\/\S+/, 'counted/{record}')
    .replace(/handled\/\S+/, 'handled/{record}');

export function hotKeyOf(writeUnitsByKey: Record<string, number>, of: string): HotKey {
  const ranked = Object.entries(writeUnitsByKey).sort(([, a], [, b]) => b - a);
  const [key, units] = ranked[0] ?? ['none', NaN];
  return {
    writeUnitsPerSecondPerKey: KEY_WRITE_UNITS_PER_SECOND,
    livesPerSecond: KEY_WRITE_UNITS_PER_SECOND / units,
    writeUnitsPerLife: units,
    key: keyName(key),
    keys: ranked.filter(([, u]) => u >= 0.1).map(([k, u]) => ({ key: keyName(k), writeUnitsPerLife: u })),
    of,
  };
}

/** `queue`: the queue the hottest key's lives ran on, for the figure's `of`. */
export function lifeFigures(r: LifecycleResult, queue = 'one queue of the default (ticketed) layout'): LifeFigures {
  const stream = r.stream;
  const json = lifeDollars(r.json, stream);
  const incompressible = lifeDollars(r.incompressible, stream);
  const sizes = [...new Set(r.bySize.map((b) => b.bodyBytes))];
  const priceBySize = sizes.map((bodyBytes): PriceRow => {
    const j = r.bySize.find((b) => b.bodyBytes === bodyBytes && b.payload === 'json')!;
    const i = r.bySize.find((b) => b.bodyBytes === bodyBytes && b.payload === 'incompressible')!;
    const facts = (b: LifeRun) => ({
      writeUnits: b.op.tally.writeUnits,
      readUnits: b.op.tally.readUnits,
      itemBytesLocked: b.itemBytes.locked,
      compressed: b.compressed,
    });
    return {
      bodyBytes,
      sluiceJson: lifeDollars(j, stream).total,
      sluiceIncompressible: lifeDollars(i, stream).total,
      ...competitorsBySize(bodyBytes),
      json: facts(j),
      incompressible: facts(i),
    };
  });
  return {
    capacity: {
      lifecycleJson: lifeEntry(r.json, stream),
      lifecycleSingle: lifeEntry(r.single, stream),
      lifecycleIncompressible: lifeEntry(r.incompressible, stream),
    },
    dollars: { sluiceJson: json.total, sluiceIncompressible: incompressible.total, breakdown: { json, incompressible } },
    priceBySize,
    hotKey: hotKeyOf(
      r.writeUnitsByKey,
      `1 KB JSON events in batches of 10 on ${queue}, ${stream.messages} lives: requests and stream consumer, write units by partition key (table and indexes)`,
    ),
    stream,
    loadAverage: r.loadAverage,
  };
}

/**
 * The lives on a queue of today's layout (the `ready` index, `newEntityLayout: 'index'`), under
 * keys of their own beside the default's: new queues are ticketed unless the deployment names
 * 'index', so the stable keys (`lifecycleJson`, `hotKey`, ...) measure the ticketed lives a
 * default deploy runs, and these keep today's layout's figures for the docs to compare.
 */
export interface IndexLifeFigures {
  capacity: { lifecycleJsonIndex: LifeEntry; lifecycleSingleIndex: LifeEntry; lifecycleIncompressibleIndex: LifeEntry };
  dollars: { sluiceJsonIndex: number; sluiceIncompressibleIndex: number };
  hotKey: HotKey;
}

export function indexLifeFigures(r: LifecycleResult): IndexLifeFigures {
  const f = lifeFigures(r, "one queue of today's layout");
  return {
    capacity: {
      lifecycleJsonIndex: f.capacity.lifecycleJson,
      lifecycleSingleIndex: f.capacity.lifecycleSingle,
      lifecycleIncompressibleIndex: f.capacity.lifecycleIncompressible,
    },
    dollars: { sluiceJsonIndex: f.dollars.sluiceJson, sluiceIncompressibleIndex: f.dollars.sluiceIncompressible },
    hotKey: f.hotKey,
  };
}

/**
 * The request path's lives on a queue of the positioned layout with heads claimed by cursor
 * (`newEntityLayout: 'positions'`, design.md steps 1b-4), under keys of their own beside the
 * default's (ticketed) and today's layout's: a deployment's choice, not the default.
 */
export interface PositionedLifeFigures {
  capacity: { lifecycleJsonPositioned: CapacityEntry; lifecycleSinglePositioned: CapacityEntry; lifecycleIncompressiblePositioned: CapacityEntry };
  dollars: { sluiceJsonPositioned: number; sluiceIncompressiblePositioned: number };
  hotKey: HotKey;
}

/** The stream's event filter drops positioned items, so their lives have no stream share: the figures are all told. */
const noStream: LifeStream = {
  messages: 1,
  records: 0,
  invocations: 0,
  invocationsPerMessage: 0,
  readUnits: 0,
  writeUnits: 0,
  requests: 0,
  handlerMs: 0,
  calls: [],
};

export function positionedLifeFigures(r: PositionedLifecycleResult): PositionedLifeFigures {
  // Item sizes are not measured on positions; the dollars do not read them.
  const sized = (run: PositionedLifecycleResult['json']): LifeRun => ({ ...run, itemBytes: { sent: 0, locked: 0 }, compressed: false });
  return {
    capacity: {
      lifecycleJsonPositioned: capacityEntry(r.json.op),
      lifecycleSinglePositioned: capacityEntry(r.single.op),
      lifecycleIncompressiblePositioned: capacityEntry(r.incompressible.op),
    },
    dollars: {
      sluiceJsonPositioned: lifeDollars(sized(r.json), noStream).total,
      sluiceIncompressiblePositioned: lifeDollars(sized(r.incompressible), noStream).total,
    },
    hotKey: hotKeyOf(r.writeUnitsByKey, '1 KB JSON events in batches of 10 on one positioned queue, 100 lives: write units by partition key'),
  };
}

/**
 * A small user's month, all told: three services each waiting on one entity (two queues and
 * a topic's subscription), 100,000 messages a month through them (1 KB JSON events, batches of
 * 10), and the deployment's scheduled jobs. Free tiers left out on every side.
 */
export function smallUser(f: LifeFigures, waitingPerMonth: number | undefined, idlePerMonth: number | undefined): SmallUser {
  const messagesPerMonth = 100_000;
  const waitingConsumers = 3;
  const messages = (messagesPerMonth / 1e6) * f.dollars.sluiceJson;
  const waiting = waitingConsumers * (waitingPerMonth ?? NaN);
  const idleDeployment = idlePerMonth ?? NaN;
  // SQS: the consumers long-poll (20 s, one request each), the messages cost 3 requests each (0.3 batched).
  const sqsPolls = waitingConsumers * ((30 * 24 * 3600) / 20);
  const sqsMessages = (messagesPerMonth * 0.3 * prices.sqsPerMillionRequests) / 1e6;
  const sqsWaiting = (sqsPolls * prices.sqsPerMillionRequests) / 1e6;
  return {
    description: 'three services, two queues and a topic with a subscription, each service waiting on one; 100,000 1 KB JSON messages a month in batches of 10',
    messagesPerMonth,
    waitingConsumers,
    sluice: { messages, waiting, idleDeployment, total: messages + waiting + idleDeployment },
    // The Standard tier's base charge includes the first 13 million operations a month.
    serviceBusStandard: prices.serviceBusBaseMonthly,
    sqs: { messages: sqsMessages, waiting: sqsWaiting, total: sqsMessages + sqsWaiting },
    notes: [
      'Sluice: messages at the measured price of a 1 KB JSON event life; waiting = 3 × the measured waiting consumer; idle = sweeper and reaper every minute (measured).',
      'Service Bus Standard: $10/month base, which includes 13 million operations a month (300,000 here).',
      `SQS: 0.3 requests per message batched, plus ${sqsPolls.toLocaleString('en-US')} 20-second long polls a month for three waiting consumers (an SNS topic's fan-out to SQS adds $0.50 per million publishes).`,
      'Free tiers (SQS 1 million requests, Lambda 1 million calls and 400,000 GB-s a month, DynamoDB 25 GB of storage) are left out on every side; with them the small user pays about nothing on AWS.',
    ],
  };
}

const usd = (n: number) => (n >= 0.01 ? `$${n.toFixed(3)}` : `$${n.toFixed(5)}`);
const num = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/**
 * The message life's targets: a 1 KB JSON event in batches of 10 at DynamoDB's floor (about 2.2
 * write units), under $2.00 a million all told, and the same message one at a time and an
 * incompressible body close to it; the hottest key's ceiling from the units a life puts on it.
 */
export const LIFE_TARGETS = {
  jsonWriteUnits: 2.5,
  jsonReadUnits: 0.3,
  jsonDollars: 2,
  singleWriteUnits: 3.5,
  incompressibleWriteUnits: 4.5,
  livesPerSecond: 400,
} as const;

export function lifeTargets(f: LifeFigures): Target[] {
  const j = f.capacity.lifecycleJson;
  const s = f.capacity.lifecycleSingle;
  const i = f.capacity.lifecycleIncompressible;
  const t = LIFE_TARGETS;
  return [
    unitsAtMost('life of a 1 KB JSON event (batches of 10): write units', j.writeUnits, 'WCU', t.jsonWriteUnits),
    unitsAtMost('life of a 1 KB JSON event (batches of 10): read units', j.readUnits, 'RCU', t.jsonReadUnits),
    {
      name: '$ per million 1 KB JSON events (batches of 10), all told',
      value: usd(f.dollars.sluiceJson),
      target: `< ${usd(t.jsonDollars)} (Service Bus Standard: ${usd(3 * prices.serviceBusPerMillionOps)})`,
      pass: f.dollars.sluiceJson < t.jsonDollars,
    },
    unitsAtMost('life of a 1 KB JSON event, one message a request: write units', s.writeUnits, 'WCU', t.singleWriteUnits),
    unitsAtMost('life of a 1 KB incompressible body: write units', i.writeUnits, 'WCU', t.incompressibleWriteUnits),
    {
      name: 'message lives a second on the hottest partition key',
      value: `${num(f.hotKey.livesPerSecond, 0)} (${num(f.hotKey.writeUnitsPerLife)} WCU per life on ${f.hotKey.key})`,
      target: `≥ ${t.livesPerSecond}`,
      pass: f.hotKey.livesPerSecond >= t.livesPerSecond,
    },
  ];
}

const kb = (bytes: number) => (bytes >= 1024 ? `${bytes / 1024} KB` : `${bytes} B`);

export function printLife(f: LifeFigures, user: SmallUser | undefined, out: (line: string) => void = console.log): void {
  out('');
  out('MESSAGE LIFE — send + peek-lock receive + complete, per message (batches of 10 unless one at a time)');
  for (const [name, e] of [
    ['1 KB JSON event', f.capacity.lifecycleJson],
    ['1 KB incompressible', f.capacity.lifecycleIncompressible],
    ['1 KB JSON event, one at a time', f.capacity.lifecycleSingle],
  ] as const) {
    out(
      `   ${name}: item ${e.itemBytes.sent} B sent, ${e.itemBytes.locked} B locked (${e.compressed ? 'body compressed' : 'body as text'}); ` +
        `${num(e.writeUnits)} WCU (ready index ${num(e.readyIndexWriteUnits)}) + ${num(e.readUnits)} RCU; ` +
        `all told with the stream consumer ${num(e.allTold.writeUnits)} WCU + ${num(e.allTold.readUnits)} RCU; handler ms: send ${num(e.msPerCall.send, 0)}, ` +
        `receive ${num(e.msPerCall.receive, 0)}, complete ${num(e.msPerCall.complete, 0)} (load average ${num(f.loadAverage, 1)})`,
    );
    for (const call of e.calls) out(`      · ${call}`);
  }
  const s = f.stream;
  out(
    `   stream consumer over ${s.messages} batched lives: ${s.records} records in ${s.invocations} invocations with message records; ` +
      `per message ${num(s.writeUnits, 3)} WCU + ${num(s.readUnits, 3)} RCU, ${num(s.requests, 3)} DynamoDB calls, ${num(s.handlerMs, 1)} ms/invocation`,
  );
  for (const call of s.calls) out(`      · ${call}`);
  const h = f.hotKey;
  out(
    `   hottest partition key: ${h.key}, ${num(h.writeUnitsPerLife)} WCU per life = ${num(h.livesPerSecond, 0)} lives/s at ${h.writeUnitsPerSecondPerKey} WCU/s per key; ` +
      `keys: ${h.keys.map((k) => `${k.key} ${num(k.writeUnitsPerLife)}`).join(', ')}`,
  );
  const b = f.dollars.breakdown;
  out(
    `   a million JSON events: ${usd(f.dollars.sluiceJson)} (DynamoDB ${usd(b.json.dynamodb)}, HTTP API ${usd(b.json.httpApi)}, Lambda ${usd(b.json.lambdaCalls + b.json.lambdaDuration)}, stream ${usd(b.json.streamConsumer)}); ` +
      `incompressible: ${usd(f.dollars.sluiceIncompressible)}`,
  );
  out('   price of a million messages by body size (Sluice in batches of 10; Service Bus Standard and SQS charge per 64 KB chunk):');
  out('     body     Sluice JSON (WCU)     Sluice incompressible (WCU)   Service Bus Std   SQS     SQS batched');
  for (const p of f.priceBySize) {
    out(
      `     ${kb(p.bodyBytes).padEnd(8)} ${`${usd(p.sluiceJson)} (${num(p.json.writeUnits, 1)})`.padEnd(21)} ${`${usd(p.sluiceIncompressible)} (${num(p.incompressible.writeUnits, 1)})`.padEnd(29)} ` +
        `${usd(p.serviceBusStandard).padEnd(17)} ${usd(p.sqs).padEnd(7)} ${usd(p.sqsBatched)}`,
    );
  }
  if (user) {
    out(
      `   a small user's month (${user.description}): Sluice ${usd(user.sluice.total)} (messages ${usd(user.sluice.messages)}, waiting ${usd(user.sluice.waiting)}, idle ${usd(user.sluice.idleDeployment)}); ` +
        `Service Bus Standard ${usd(user.serviceBusStandard)}; SQS ${usd(user.sqs.total)}`,
    );
  }
}
