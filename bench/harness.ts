/**
 * A bench environment: one table (from lib/store/table.ts), one clock, a metered client, and
 * Sluice's own handlers built on them (functions/*), called directly as Lambda would call
 * them: the API with API Gateway payload 2.0 events, the jobs with nothing.
 */
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { OffsetClock } from '../lib/clock.js';
import { keysTableNameOf, type Deps, type NewEntityLayout } from '../lib/deps.js';
import { signToken } from '../lib/auth/index.js';
import { createKeysTableInput, createTableInput } from '../lib/store/table.js';
import { createApiHandler, type ApiHandler } from '../functions/api/handler.js';
import { createSweeperHandler } from '../functions/sweeper/handler.js';
import { createReaperHandler } from '../functions/reaper/handler.js';
import { createStreamHandler, type StreamHandler } from '../functions/stream/handler.js';
import type { JobHandler } from '../functions/sweeper/handler.js';
import { directApiEvent, lambdaContext } from '../infra/local/http-events.js';
import { localCredentials, localRegion } from '../infra/local/dynamodb-local.js';
import { meteredClient, type CapacityMeter, type Tally, type ReadWriteUnits } from './capacity.js';
import { incompressibleBody } from './payloads.js';
import { positionedPassDue } from '../lib/broker/positioned-expiry.js';

export const ROOT_KEY_NAME = 'RootManageSharedAccessKey';

/**
 * A 1 KB message: its body is stored as JSON text, so 1,022 characters make 1,024 bytes.
 * Random base64, which compression cannot shrink by a write unit: the per-operation
 * figures measure a body stored as it is sent; payloads.ts has the JSON event that compresses.
 */
export const bodyOfBytes = (bytes: number) => incompressibleBody(Math.max(2, bytes));
export const KB_BODY = bodyOfBytes(1024);

export interface ApiReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  ms: number;
}

export type ApiCall = (method: string, path: string, body?: unknown, expect?: number | number[]) => Promise<ApiReply>;

export interface BenchEnv {
  name: string;
  tableName: string;
  clock: OffsetClock;
  deps: Deps;
  meter: CapacityMeter;
  api: ApiCall;
  /** The API handler itself (for the local runtime's HTTP server). */
  handler: ApiHandler;
  sweeper: JobHandler;
  reaper: JobHandler;
  stream: StreamHandler;
  destroy(): void;
}

export const token = (resourceUri: string, rootKey: string, seconds = 3600) =>
  signToken({ resourceUri, keyName: ROOT_KEY_NAME, key: rootKey, expiresAt: Math.floor(Date.now() / 1000) + seconds });

export async function createTable(endpoint: string, tableName: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: localRegion, credentials: localCredentials });
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
    await client.send(new CreateTableCommand(createKeysTableInput(keysTableNameOf(tableName))));
  } finally {
    client.destroy();
  }
}

/** Every environment created in this process, for the coverage report. */
/**
 * Moves `clock` out of a minute in which the sweeper's positioned pass is due (every quarter
 * hour: lib/broker/positioned-expiry.ts), so a measured sweeper run is the every-minute one,
 * whatever real time the bench runs at. The pass on an idle table is one Query of the entities
 * (half a read unit a quarter hour, under $0.001 a month), left out of the idle figures.
 */
export function offThePositionedPass(clock: OffsetClock): void {
  while (positionedPassDue(clock.now())) clock.advance(60_000 - (clock.now() % 60_000) + 1);
}

export const allEnvs: BenchEnv[] = [];

export async function createEnv(options: {
  name: string;
  endpoint: string;
  tableName: string;
  rootKey: string;
  /** Create the table (false: it exists, e.g. the runtime's). */
  createTable?: boolean;
  clock?: OffsetClock;
  /**
   * The layout new queues and subscriptions without sessions get (lib/deps.ts
   * `Deps.newEntityLayout`); none: the product's default (`DEFAULT_NEW_ENTITY_LAYOUT`, ticketed
   * positions), what a default deploy runs. A scenario that reads today's items or relies on
   * their mechanism (the `ready` index, lock reminders, `msg/` items) names 'index'.
   */
  newEntityLayout?: NewEntityLayout;
}): Promise<BenchEnv> {
  if (options.createTable ?? true) await createTable(options.endpoint, options.tableName);
  const clock = options.clock ?? new OffsetClock();
  const { db, meter, destroy } = meteredClient(options.endpoint);
  const deps: Deps = { clock, db, tableName: options.tableName, ...(options.newEntityLayout ? { newEntityLayout: options.newEntityLayout } : {}) };
  const handler = createApiHandler(deps, { rootKey: options.rootKey });
  const authorization = token('http://localhost/', options.rootKey);
  const api: ApiCall = async (method, path, body, expect) => {
    const event = directApiEvent(method, path, {
      headers: { authorization, host: 'localhost' },
      body: body === undefined ? undefined : JSON.stringify(body),
      userAgent: 'sluice-bench',
    });
    const started = performance.now();
    const res = await handler(event, lambdaContext('sluice-api', { timeoutMs: 29_000 }));
    const ms = performance.now() - started;
    const text = res.body ?? '';
    const reply: ApiReply = { status: res.statusCode ?? 200, body: text ? JSON.parse(text) : undefined, ms };
    const expected = expect === undefined ? undefined : Array.isArray(expect) ? expect : [expect];
    if (expected ? !expected.includes(reply.status) : reply.status >= 400) {
      throw new Error(`${options.name}: ${method} ${path} answered ${reply.status}: ${text.slice(0, 300)}`);
    }
    return reply;
  };
  const env: BenchEnv = {
    name: options.name,
    tableName: options.tableName,
    clock,
    deps,
    meter,
    api,
    handler,
    sweeper: createSweeperHandler(deps),
    reaper: createReaperHandler(deps),
    stream: createStreamHandler(deps),
    destroy,
  };
  allEnvs.push(env);
  return env;
}

/** One measured operation: totals per message over every repetition. */
export interface OpResult {
  /** Messages the figures are per (1, or 10 for a batch). */
  perMessages: number;
  reps: number;
  tally: Tally;
  /** Total units of each repetition (so a one-off touch or cache miss shows). */
  repTotals: ReadWriteUnits[];
  /** Handler (or job) wall time per call, milliseconds, median over repetitions. */
  handlerMs: number;
  /** HTTP requests per message. */
  httpRequests: number;
  calls: string[];
  note?: string;
}

export const median = (xs: number[]) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
