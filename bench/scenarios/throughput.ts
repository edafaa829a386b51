/**
 * Scenario 3: throughput through the local HTTP API at 16 concurrent clients, each next to
 * a baseline measured in the same run on the same DynamoDB Local: the raw calls the
 * operation cannot do without, at the same concurrency.
 *
 * - send: autocannon POSTs 1 KB messages; baseline: one conditional PutItem of an item of
 *   the same shape and size (copied from a message the API stored), into the same table
 *   (same indexes, same state), under a partition key of its own.
 * - receive + complete: 16 loops (fetch) of a peek-lock receive of one message, then its
 *   complete; baseline: one Query of the ready index, one conditional UpdateItem (the lock,
 *   which moves the index key) and one DeleteItem. Each baseline loop tries the candidates
 *   from its own offset, so the loops do not all race for the head message: the baseline is
 *   the work a receive cannot avoid, not the contention of a naive loop.
 *
 * The machine is shared (other test runs come and go), so API and baseline are measured in
 * alternating slices (A B B A A B B A), each side getting the same mix of quiet and busy
 * moments; the rates are totals over all slices. The runtime's API handler runs on a metered
 * client, so the API phases also say how many DynamoDB calls, and how many failed
 * conditional writes (lost lock races, each billed on AWS), one operation took.
 */
import autocannon from 'autocannon';
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, dynamoDbClient } from '../../lib/deps.js';
import { entityKey, messageKey, padSeq, positionedPk, readySortKey, readyUpperBound } from '../../lib/store/keys.js';
import { partitionOfSeq } from '../../lib/store/sequence.js';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { localCredentials, localRegion } from '../../infra/local/dynamodb-local.js';
import { tallyOf, type CapacityMeter, type Tally } from '../capacity.js';
import { KB_BODY, percentile } from '../harness.js';
import { token } from '../harness.js';

export interface PhaseResult {
  perSecond: number;
  completed: number;
  errors: number;
  durationS: number;
  p50Ms: number;
  p99Ms: number;
  /** Slices that ran out of messages before their time was up. */
  drainedSlices?: number;
  /** API: empty receives while messages were waiting (every candidate lost to another receiver). */
  emptyReceives?: number;
  /** Baseline: conditional lock updates that lost a race. */
  lostRaces?: number;
  /** Operations per second of each slice, in the order run: how steady the machine was. */
  sliceRates: number[];
  /** API: DynamoDB calls per operation and failed conditional writes per operation (metered). */
  dynamoCallsPerOp?: number;
  failedConditionalWritesPerOp?: number;
  /** API: each kind of DynamoDB call (type, what it touched, failed or not) per operation, most frequent first. */
  callsPerOp?: Record<string, number>;
}

export interface Comparison {
  api: PhaseResult;
  baseline: PhaseResult;
  /** api / baseline operations per second. */
  ratio: number;
}

export interface ThroughputResult {
  concurrency: number;
  sliceSeconds: number;
  rounds: number;
  send: Comparison;
  receiveComplete: Comparison;
  baselineCalls: { send: string; receiveComplete: string };
}

export interface ThroughputOptions {
  concurrency?: number;
  /** Seconds of each slice; each side gets `rounds` × 2 slices... see `rounds`. */
  sliceSeconds?: number;
  /** Rounds of (A B) or (B A): each side runs `rounds` slices. */
  rounds?: number;
  warmupSeconds?: number;
  /** false: no send comparison (its figures come out empty), the receive side alone, as `focus.ts races-http` measures it. */
  send?: boolean;
  log?: (line: string) => void;
}

const RAW_PK = 'bench-raw/0';

interface Sample {
  latencies: number[];
  errors: number;
  durationS: number;
  drained: boolean;
}

type Outcome = 'done' | 'empty' | 'retry' | 'error';

/** Runs `worker` on `concurrency` loops until `seconds` pass or one finds the work gone. */
async function loops(concurrency: number, seconds: number, worker: (id: number) => Promise<Outcome>): Promise<Sample> {
  const latencies: number[] = [];
  let errors = 0;
  let drained = false;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, id) => {
      while (!drained && performance.now() < deadline) {
        const t = performance.now();
        const outcome = await worker(id);
        if (outcome === 'done') latencies.push(performance.now() - t);
        else if (outcome === 'error') errors++;
        else if (outcome === 'empty') drained = true;
      }
    }),
  );
  return { latencies, errors, durationS: (performance.now() - started) / 1000, drained };
}

/** autocannon for `seconds`, with every response's latency. */
function cannon(url: string, headers: Record<string, string>, body: string, concurrency: number, seconds: number): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    let errors = 0;
    const started = performance.now();
    const instance = autocannon({ url, method: 'POST', connections: concurrency, duration: seconds, headers, body }, (err, result) => {
      if (err) return reject(err);
      resolve({ latencies, errors: errors + result.errors, durationS: (performance.now() - started) / 1000, drained: false });
    });
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode === 201) latencies.push(responseTime);
      else errors++;
    });
  });
}

function merge(samples: Sample[]): PhaseResult {
  const latencies = samples.flatMap((s) => s.latencies);
  const durationS = samples.reduce((n, s) => n + s.durationS, 0);
  const drained = samples.filter((s) => s.drained).length;
  return {
    perSecond: latencies.length / durationS,
    completed: latencies.length,
    errors: samples.reduce((n, s) => n + s.errors, 0),
    durationS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    sliceRates: samples.map((s) => Math.round(s.latencies.length / s.durationS)),
    ...(drained ? { drainedSlices: drained } : {}),
  };
}

/** A B B A ...: each side gets `rounds` slices, alternately first. */
async function alternate(rounds: number, a: () => Promise<Sample>, b: () => Promise<Sample>) {
  const as: Sample[] = [];
  const bs: Sample[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      as.push(await a());
      bs.push(await b());
    } else {
      bs.push(await b());
      as.push(await a());
    }
  }
  return { a: as, b: bs };
}

export async function runThroughput(runtime: LocalRuntime, meter: CapacityMeter, endpoint: string, options: ThroughputOptions = {}): Promise<ThroughputResult> {
  const concurrency = options.concurrency ?? 16;
  const slice = options.sliceSeconds ?? 3;
  const rounds = options.rounds ?? 4;
  const warmup = options.warmupSeconds ?? 2;
  const log = options.log ?? (() => {});
  const url = runtime.url;
  const headers = { authorization: token(`${url}/`, runtime.rootKey), 'content-type': 'application/json' };
  const queue = 'tput';
  const sendBody = JSON.stringify({ body: KB_BODY });

  const put = await fetch(`${url}/queues/${queue}`, { method: 'PUT', headers, body: JSON.stringify({ lockDuration: 'PT5M' }) });
  if (put.status !== 201) throw new Error(`throughput: creating the queue answered ${put.status}`);

  // A message as the API stores it: the template of the baseline's items.
  const first = await fetch(`${url}/queues/${queue}/messages`, { method: 'POST', headers, body: sendBody });
  const seq = ((await first.json()) as { sequenceNumber: string }).sequenceNumber;
  const entity = await runtime.deps.db.send(new GetCommand({ TableName: runtime.deps.tableName, Key: entityKey('queue', queue) }));
  const eid = entity.Item!.eid as string;
  const stored = await runtime.deps.db.send(
    new GetCommand({ TableName: runtime.deps.tableName, Key: messageKey(eid, 'active', partitionOfSeq(BigInt(seq)), seq) }),
  );
  // A positioned queue's message (bench/focus.ts throughput-positioned) sits at its position; the
  // baseline stays the bare calls of today's layout, on an item of the positioned message's shape.
  const template = stored.Item ?? {
    deliveryCount: 0,
    ...(
      await runtime.deps.db.send(
        new QueryCommand({
          TableName: runtime.deps.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': positionedPk(eid, 'active', 0) },
          Limit: 1,
        }),
      )
    ).Items![0]!,
  };

  const RAW_TABLE = runtime.deps.tableName;
  // The client the handlers use (lib/deps.ts), so the ratio compares our work with the bare
  // call's and not two client configurations.
  const client = dynamoDbClient({ endpoint, region: localRegion, credentials: localCredentials });
  const db = documentClient(client);
  let counter = 0;
  const rawItem = () => {
    const n = BigInt(Date.now()) * 1_000_000n + BigInt(counter++ % 1_000_000);
    const now = Date.now();
    return { ...template, pk: RAW_PK, sk: padSeq(n), seq: n.toString(), rpk: RAW_PK, rsk: readySortKey(now, n), enqueuedAt: now };
  };
  try {
    // --- send -------------------------------------------------------------------------------
    const apiSendSlice = () => cannon(`${url}/queues/${queue}/messages`, headers, sendBody, concurrency, slice);
    const rawPut = async (): Promise<Outcome> => {
      try {
        await db.send(new PutCommand({ TableName: RAW_TABLE, Item: rawItem(), ConditionExpression: 'attribute_not_exists(pk)' }));
        return 'done';
      } catch {
        return 'error';
      }
    };
    const sendWindow =
      options.send === false
        ? { result: { a: [] as Sample[], b: [] as Sample[] }, tally: tallyOf([]) }
        : await (async () => {
            log(`throughput: warm-up (${warmup}s API send, ${warmup}s raw PutItem)`);
            await cannon(`${url}/queues/${queue}/messages`, headers, sendBody, concurrency, warmup);
            await loops(concurrency, warmup, rawPut);
            log(`throughput: send, ${rounds} × ${slice}s slices each side, alternating`);
            return meter.measure(() => alternate(rounds, apiSendSlice, () => loops(concurrency, slice, rawPut)));
          })();
    const sends = sendWindow.result;

    // --- receive + complete ------------------------------------------------------------------
    // Enough waiting on both sides that no slice runs dry.
    const waiting = async () => {
      const q = await db.send(
        new QueryCommand({
          TableName: RAW_TABLE,
          IndexName: 'ready',
          KeyConditionExpression: 'rpk = :pk',
          ExpressionAttributeValues: { ':pk': RAW_PK },
          Select: 'COUNT',
        }),
      );
      return q.Count ?? 0;
    };
    const rawWaiting = await waiting();
    for (let n = rawWaiting; n < 4000; n += 25) {
      await db.send(new BatchWriteCommand({ RequestItems: { [RAW_TABLE]: Array.from({ length: 25 }, () => ({ PutRequest: { Item: rawItem() } })) } }));
    }
    const apiWaiting = sends.a.reduce((n, s) => n + s.latencies.length, 0);
    for (let n = apiWaiting; n < 4000; n += 100) {
      const r = await fetch(`${url}/queues/${queue}/messages/batch`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ messages: Array.from({ length: 100 }, () => ({ body: KB_BODY })) }),
      });
      await r.arrayBuffer();
    }

    let emptyReceives = 0;
    const apiPair = async (): Promise<Outcome> => {
      const r = await fetch(`${url}/queues/${queue}/messages/receive`, { method: 'POST', headers, body: '{"maxMessages":1}' });
      if (r.status !== 200) {
        await r.arrayBuffer();
        return 'error';
      }
      const got = ((await r.json()) as { messages: { sequenceNumber: string; lockToken: string }[] }).messages[0];
      if (!got) {
        // Thousands are waiting: an empty answer means every candidate went to another receiver.
        emptyReceives++;
        return 'retry';
      }
      const c = await fetch(`${url}/queues/${queue}/messages/${got.sequenceNumber}/complete`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ lockToken: got.lockToken }),
      });
      await c.arrayBuffer();
      return c.status === 204 ? 'done' : 'error';
    };
    let lostRaces = 0;
    const rawPair = async (id: number): Promise<Outcome> => {
      for (let attempt = 0; attempt < 20; attempt++) {
        const now = Date.now();
        const q = await db.send(
          new QueryCommand({
            TableName: RAW_TABLE,
            IndexName: 'ready',
            KeyConditionExpression: 'rpk = :pk AND rsk <= :upper',
            ExpressionAttributeValues: { ':pk': RAW_PK, ':upper': readyUpperBound(now) },
            Limit: concurrency + 4,
          }),
        );
        const items = (q.Items ?? []) as { pk: string; sk: string; deliveryCount?: number }[];
        if (items.length === 0) return 'empty';
        for (let k = 0; k < items.length; k++) {
          const c = items[(id + k) % items.length]!;
          const lockedUntil = now + 300_000;
          const lockToken = `${c.sk}-${id}-${attempt}`;
          try {
            await db.send(
              new UpdateCommand({
                TableName: RAW_TABLE,
                Key: { pk: c.pk, sk: c.sk },
                ConditionExpression: 'rpk = :pk AND rsk <= :upper AND deliveryCount = :dc',
                UpdateExpression: 'SET lockToken = :t, lockedUntil = :until, deliveryCount = :next, rsk = :locked',
                ExpressionAttributeValues: {
                  ':pk': RAW_PK,
                  ':upper': readyUpperBound(now),
                  ':dc': c.deliveryCount ?? 0,
                  ':t': lockToken,
                  ':until': lockedUntil,
                  ':next': (c.deliveryCount ?? 0) + 1,
                  ':locked': readySortKey(lockedUntil, BigInt(c.sk)),
                },
                ReturnValues: 'ALL_NEW',
              }),
            );
          } catch (e) {
            if ((e as Error).name === 'ConditionalCheckFailedException') {
              lostRaces++;
              continue;
            }
            return 'error';
          }
          await db.send(
            new DeleteCommand({
              TableName: RAW_TABLE,
              Key: { pk: c.pk, sk: c.sk },
              ConditionExpression: 'lockToken = :t AND lockedUntil > :now',
              ExpressionAttributeValues: { ':t': lockToken, ':now': Date.now() },
            }),
          );
          return 'done';
        }
      }
      return 'error';
    };

    log(`throughput: warm-up (${warmup}s API receive+complete, ${warmup}s raw)`);
    await loops(concurrency, warmup, apiPair);
    await loops(concurrency, warmup, rawPair);
    emptyReceives = 0;
    lostRaces = 0;
    log(`throughput: receive+complete, ${rounds} × ${slice}s slices each side, alternating`);
    const recvWindow = await meter.measure(() =>
      alternate(
        rounds,
        () => loops(concurrency, slice, apiPair),
        () => loops(concurrency, slice, rawPair),
      ),
    );
    const recvs = recvWindow.result;

    const apiSend = merge(sends.a);
    Object.assign(apiSend, perOp(sendWindow.tally, apiSend.completed));
    const apiRecv = merge(recvs.a);
    Object.assign(apiRecv, perOp(recvWindow.tally, apiRecv.completed), { emptyReceives });
    const baseSend = merge(sends.b);
    const baseRecv = { ...merge(recvs.b), lostRaces };
    return {
      concurrency,
      sliceSeconds: slice,
      rounds,
      send: { api: apiSend, baseline: baseSend, ratio: apiSend.perSecond / baseSend.perSecond },
      receiveComplete: { api: apiRecv, baseline: baseRecv, ratio: apiRecv.perSecond / baseRecv.perSecond },
      baselineCalls: {
        send: 'PutItem (conditional) of a 1 KB message item with its ready-index keys',
        receiveComplete: `Query ready index (Limit ${concurrency + 4}, each loop from its own offset) + conditional UpdateItem (lock, index key moves) + conditional DeleteItem`,
      },
    };
  } finally {
    client.destroy();
  }
}

/** The metered API side of a window: DynamoDB calls and failed conditional writes per completed operation. */
function perOp(t: Tally, completed: number) {
  const kinds = new Map<string, number>();
  for (const c of t.calls) {
    const kind = `${c.type} ${c.label}${c.consistent ? ' (consistent)' : ''}${c.ok ? '' : ` (failed: ${c.errorName ?? ''})`}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    dynamoCallsPerOp: completed ? t.requests / completed : NaN,
    failedConditionalWritesPerOp: completed ? t.calls.filter((c) => !c.ok && c.kind === 'write').length / completed : NaN,
    callsPerOp: Object.fromEntries([...kinds].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, completed ? round(n / completed) : NaN])),
  };
}
