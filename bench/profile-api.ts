/**
 * `npx tsx bench/profile-api.ts [index|tickets|positions] [seconds=6] [save=DIR]`: where the
 * local runtime's CPU goes per request, through the throughput scenario's two API phases
 * (scenarios/throughput.ts): 16 autocannon connections sending 1 KB messages, then 16 loops
 * of receive + complete. Each phase runs under the inspector's CPU profiler, in the same
 * process as the runtime (as the bench runs it), with the handler on the metered client.
 *
 * Prints, per phase: operations, the process's CPU per operation, and the profile's samples
 * per operation by what they were doing — each sample is charged to the first frame of its
 * stack, leaf upwards, that belongs to the project or a package (a built-in's time goes to
 * whoever called it); the clients' own samples (autocannon, fetch) are counted apart — and
 * the functions with the most self time on the server's side. `save=DIR` writes the
 * `.cpuprofile` files for a viewer.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import autocannon from 'autocannon';
import { OffsetClock } from '../lib/clock.js';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, dynamoDbClient, isNewEntityLayout, type NewEntityLayout } from '../lib/deps.js';
import { entityKey, messageKey, padSeq, positionedPk, readySortKey } from '../lib/store/keys.js';
import { partitionOfSeq } from '../lib/store/sequence.js';
import { localCredentials, localRegion, startDynamoDbLocal } from '../infra/local/dynamodb-local.js';
import { startLocalRuntime } from '../infra/local/runtime.js';
import { createEnv, KB_BODY, token } from './harness.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const layoutArg = args.find((a) => isNewEntityLayout(a)) as NewEntityLayout | undefined;
const layout: NewEntityLayout = layoutArg ?? 'index';
const seconds = Number(args.find((a) => a.startsWith('seconds='))?.slice(8) ?? 6);
const saveDir = args.find((a) => a.startsWith('save='))?.slice(5);
const root = new URL('..', import.meta.url).pathname;

/** What a frame belongs to: a package, a project folder, or '' for built-ins and V8's own. */
function ownerOf(url: string): string {
  if (url === '' || url.startsWith('node:')) return '';
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1]!;
  if (path.startsWith(root)) {
    const rel = path.slice(root.length);
    const parts = rel.split('/');
    if (parts[0] === 'lib' && parts.length > 2) return `lib/${parts[1]}`;
    if (parts[0] === 'lib') return rel;
    if (parts[0] === 'bench') return rel;
    return parts.slice(0, 2).join('/');
  }
  return '';
}

const clientOwners = new Set(['autocannon', 'undici', 'bench/profile-api.ts', 'hdr-histogram-js', 'hyperid', 'reinterval', 'retimer']);

function summarize(profile: Profile, ops: number) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owners = new Map<string, number>();
  const selfTime = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const frameName = (f: ProfileNode['callFrame']) => {
    const where = f.url ? `${f.url.replace(/^file:\/\//, '').replace(root, '')}:${f.lineNumber + 1}` : '';
    return `${f.functionName || '(anonymous)'} ${where}`.trim();
  };
  let client = 0;
  let total = 0;
  const chargeCache = new Map<number, { owner: string; isClient: boolean }>();
  const chargeOf = (id: number) => {
    const cached = chargeCache.get(id);
    if (cached) return cached;
    let owner = '';
    let isClient = false;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const o = ownerOf(byId.get(at)!.callFrame.url);
      if (clientOwners.has(o)) isClient = true;
      if (owner === '' && o !== '') owner = o;
    }
    const leaf = byId.get(id)!.callFrame;
    if (owner === '') owner = leaf.functionName ? `(${leaf.functionName})` : '(native)';
    const made = { owner, isClient };
    chargeCache.set(id, made);
    return made;
  };
  // Each sample is one sampling interval of running: the deltas between samples also hold the
  // time the thread waited for a core, which on a shared machine is most of it.
  profile.samples.forEach((id) => {
    const ms = intervalUs / 1000;
    const leaf = byId.get(id)!.callFrame;
    if (leaf.functionName === '(idle)') return;
    total += ms;
    const { owner, isClient } = chargeOf(id);
    if (isClient) {
      client += ms;
      return;
    }
    owners.set(owner, (owners.get(owner) ?? 0) + ms);
    const name = frameName(leaf);
    selfTime.set(name, (selfTime.get(name) ?? 0) + ms);
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) onStack.add(frameName(byId.get(at)!.callFrame));
    for (const frame of onStack) inclusive.set(frame, (inclusive.get(frame) ?? 0) + ms);
  });
  const perOp = (ms: number) => Math.round((ms / ops) * 1000) / 1000;
  const top = (m: Map<string, number>, n: number) =>
    Object.fromEntries(
      [...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, v]) => [k, perOp(v)]),
    );
  return {
    busyMsPerOp: perOp(total),
    clientMsPerOp: perOp(client),
    serverMsPerOp: perOp(total - client),
    serverByOwner: top(owners, 25),
    serverTopSelf: top(selfTime, 30),
    serverTopInclusive: top(inclusive, 60),
  };
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
const intervalUs = 500;
await session.post('Profiler.setSamplingInterval', { interval: intervalUs });

async function profiled<T>(name: string, run: () => Promise<T & { ops: number }>) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await session.post('Profiler.start');
  const result = await run();
  const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
  const used = process.cpuUsage(cpu);
  const wallS = (performance.now() - started) / 1000;
  if (saveDir) {
    mkdirSync(saveDir, { recursive: true });
    writeFileSync(join(saveDir, `${name}-${layout}.cpuprofile`), JSON.stringify(profile));
  }
  return {
    ops: result.ops,
    perSecond: Math.round(result.ops / wallS),
    processCpuMsPerOp: Math.round(((used.user + used.system) / 1000 / result.ops) * 1000) / 1000,
    ...summarize(profile, result.ops),
  };
}

const dynamo = await startDynamoDbLocal();
const rootKey = randomBytes(32).toString('base64');
const clock = new OffsetClock();
const env = await createEnv({ name: 'profile', endpoint: dynamo.endpoint, tableName: 'sluice_prof', rootKey, clock, newEntityLayout: layout });
const runtime = await startLocalRuntime({
  port: 0,
  inMemory: true,
  dynamoEndpoint: dynamo.endpoint,
  tableName: 'sluice_prof',
  timers: false,
  streamPollMs: 0,
  rootKey,
  clock,
  handlers: { api: env.handler, stream: env.stream },
  logger: { info: () => {}, error: (m, e) => console.error(`[runtime] ${m}`, e ?? '') },
});
try {
  const url = runtime.url;
  const headers = { authorization: token(`${url}/`, rootKey), 'content-type': 'application/json' };
  const sendBody = JSON.stringify({ body: KB_BODY });
  const put = await fetch(`${url}/queues/p`, { method: 'PUT', headers, body: JSON.stringify({ lockDuration: 'PT5M' }) });
  if (put.status !== 201) throw new Error(`creating the queue answered ${put.status}`);

  const cannon = (s: number) =>
    new Promise<{ ops: number }>((resolve, reject) => {
      let ops = 0;
      const instance = autocannon({ url: `${url}/queues/p/messages`, method: 'POST', connections: 16, duration: s, headers, body: sendBody }, (err) =>
        err ? reject(err) : resolve({ ops }),
      );
      instance.on('response', (_c: unknown, status: number) => {
        if (status === 201) ops++;
      });
    });
  await cannon(2);
  const send = await profiled('send', () => cannon(seconds));

  // The bare PutItem of the throughput scenario's baseline, on the client config the handlers use.
  const client = dynamoDbClient({ endpoint: dynamo.endpoint, region: localRegion, credentials: localCredentials });
  const db = documentClient(client);
  let counter = 0;
  const rawItem = (template: Record<string, unknown>) => {
    const n = BigInt(Date.now()) * 1_000_000n + BigInt(counter++ % 1_000_000);
    const now = Date.now();
    return { ...template, pk: 'bench-raw/0', sk: padSeq(n), seq: n.toString(), rpk: 'bench-raw/0', rsk: readySortKey(now, n), enqueuedAt: now };
  };
  // A message as the API stored it, as the throughput scenario's baseline copies it.
  const first = await fetch(`${url}/queues/p/messages`, { method: 'POST', headers, body: sendBody });
  const seq = ((await first.json()) as { sequenceNumber: string }).sequenceNumber;
  const eid = (await db.send(new GetCommand({ TableName: 'sluice_prof', Key: entityKey('queue', 'p') }))).Item!.eid as string;
  const storedItem = (await db.send(new GetCommand({ TableName: 'sluice_prof', Key: messageKey(eid, 'active', partitionOfSeq(BigInt(seq)), seq) }))).Item;
  const template = storedItem ?? {
    deliveryCount: 0,
    ...(
      await db.send(
        new QueryCommand({
          TableName: 'sluice_prof',
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': positionedPk(eid, 'active', 0) },
          Limit: 1,
        }),
      )
    ).Items![0]!,
  };
  const loops = async (s: number, one: () => Promise<void>) => {
    let ops = 0;
    const deadline = performance.now() + s * 1000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < deadline) {
          await one();
          ops++;
        }
      }),
    );
    return { ops };
  };
  const rawPut = async () => {
    await db.send(new PutCommand({ TableName: 'sluice_prof', Item: rawItem(template), ConditionExpression: 'attribute_not_exists(pk)' }));
  };
  await loops(2, rawPut);
  const sendBaseline = await profiled('send-baseline', () => loops(seconds, rawPut));

  for (let n = 0; n < 4000; n += 100) {
    const r = await fetch(`${url}/queues/p/messages/batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ messages: Array.from({ length: 100 }, () => ({ body: KB_BODY })) }),
    });
    await r.arrayBuffer();
  }
  const pairs = async (s: number) => {
    let ops = 0;
    const deadline = performance.now() + s * 1000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < deadline) {
          const r = await fetch(`${url}/queues/p/messages/receive`, { method: 'POST', headers, body: '{"maxMessages":1}' });
          const got = ((await r.json()) as { messages?: { sequenceNumber: string; lockToken: string }[] }).messages?.[0];
          if (!got) continue;
          const c = await fetch(`${url}/queues/p/messages/${got.sequenceNumber}/complete`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ lockToken: got.lockToken }),
          });
          await c.arrayBuffer();
          if (c.status === 204) ops++;
        }
      }),
    );
    return { ops };
  };
  await pairs(2);
  const receiveComplete = await profiled('receive', () => pairs(seconds));
  client.destroy();
  console.log(JSON.stringify({ layout, seconds, send, sendBaseline, receiveComplete }, null, 2));
} finally {
  session.disconnect();
  await runtime.stop();
  env.destroy();
  await dynamo.stop();
}
