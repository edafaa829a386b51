/**
 * The local runtime: Sluice's own handlers, run on this machine as they run on AWS.
 *
 * - DynamoDB Local (started here, or one given by `dynamoEndpoint`) with the one table
 *   definition, TTL on;
 * - an HTTP server standing in for API Gateway (payload 2.0 events to the api handler),
 *   plus the local-only routes `/_local/clock` and `/_local/jobs/{name}`;
 * - a stream poller standing in for Lambda's event source mapping;
 * - timers standing in for the EventBridge schedules of the sweeper and the reaper.
 *
 * Every handler and job reads the same OffsetClock, which `/_local/clock` moves forward.
 * The local routes take the root key like any management route.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { authorize } from '../../lib/auth/index.js';
import { routesAt, routeTable, type Operation } from '../../lib/api/routes.js';
import { OffsetClock } from '../../lib/clock.js';
import { MAX_SEQUENCE_TIME_MS } from '../../lib/store/sequence.js';
import { documentClient, type Deps } from '../../lib/deps.js';
import { createKeysTableInput, createTableInput, keysTableNameOf, tableDefinition } from '../../lib/store/table.js';
import { createApiHandler, type ApiHandler } from '../../functions/api/handler.js';
import { createBroker } from '../../lib/broker/index.js';
import { createStreamHandler, type StreamHandler } from '../../functions/stream/handler.js';
import { createSweeperHandler, type JobHandler } from '../../functions/sweeper/handler.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { localCredentials, localRegion, startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.js';
import { durationToMs } from './duration.js';
import { decodeUtf8, parseJsonText } from '../../lib/json.js';
import {
  errorAnswer,
  eventRefused,
  jsonAnswer,
  lambdaContext,
  maxRequestBodyBytes,
  resultRefused,
  splitTarget,
  toApiGatewayEvent,
  toHttpAnswer,
  type HttpAnswer,
} from './http-events.js';
import { Serial } from './serial.js';
import { explorerAnswer, isExplorerPath, type ExplorerAssets } from '../../lib/explorer/serve.js';
import { buildExplorer } from '../explorer/build.js';
import { writeConnectionFile } from './connection-file.js';
import { StreamPoller } from './stream-poller.js';
import { LocalWebSocket } from './websocket.js';
import { createNotifyHandler, type NotifyHandler } from '../../functions/notify/handler.js';
import { LOCAL_WEBSOCKET_PATH } from '../../lib/notifications/protocol.js';
import { protocolOfEvent } from '../../lib/protocols/dispatch.js';
import { localCertificate } from './tls.js';

/** The routes only the local runtime serves (`/_local/...`), from the route table. */
const localRoutes = routeTable.filter((r) => r.localOnly);

export type JobName = 'sweeper' | 'reaper' | 'streams';
export const jobNames: readonly JobName[] = ['sweeper', 'reaper', 'streams'];

export interface LocalHandlers {
  api: ApiHandler;
  stream: StreamHandler;
  sweeper: JobHandler;
  reaper: JobHandler;
  notify: NotifyHandler;
}

export interface LocalLogger {
  info(message: string): void;
  error(message: string, error?: unknown): void;
}

export interface LocalRuntimeOptions {
  /** HTTP port; 0 picks a free one. Default 4280. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Where DynamoDB Local's data, the clock offset and the stream checkpoint are kept. */
  dataDir?: string;
  /** Keep nothing on disk, even with `dataDir`. */
  inMemory?: boolean;
  /** Use this DynamoDB Local instead of starting one (it is not stopped by `stop()`). */
  dynamoEndpoint?: string;
  /** Default `sluice`. */
  tableName?: string;
  /** The broker's clock; a saved offset in `dataDir` moves it forward on start. */
  clock?: OffsetClock;
  /** Run the sweeper and the reaper every `jobIntervalMs` (default true, 60 s). */
  timers?: boolean;
  jobIntervalMs?: number;
  /** Stream poll interval (default 250 ms); 0 turns the background poller off (drain with runJob). */
  streamPollMs?: number;
  /** Replace handlers built from the factories (tests). */
  handlers?: Partial<LocalHandlers>;
  logger?: LocalLogger;
  /** RootManageSharedAccessKey's primary key; default SLUICE_ROOT_KEY, else generated once and kept with the data. */
  rootKey?: string;
  /**
   * Tests: gives each handler a DynamoDB client of its own and hands it here first, so the
   * calls a function makes can be told apart (and checked against its IAM role).
   */
  instrumentClient?: (fn: keyof LocalHandlers, client: DynamoDBClient) => void;
  /** The WebSocket stand-in's idle and lifetime limits (API Gateway's 10 minutes and 2 hours by default). */
  websocket?: { idleTimeoutMs?: number; maxConnectionMs?: number };
  /**
   * Serve HTTPS (and WSS) instead of HTTP, with a self-signed certificate generated once and
   * kept in `dataDir/tls/` (infra/local/tls.ts), for clients that speak only HTTPS.
   */
  tls?: boolean;
}

export interface LocalRuntime {
  /** `http://host:port` (`https://` with `tls`), no trailing slash. */
  url: string;
  /** With `tls`: the certificate clients must trust (PEM), and the file it is kept in (null in memory). */
  certificate: { pem: string; file: string | null } | null;
  port: number;
  clock: OffsetClock;
  deps: Deps;
  /** The DynamoDB endpoint in use, and the Java process's id when this runtime started it. */
  dynamoEndpoint: string;
  dynamoPid: number | undefined;
  /** Where data is kept; null in memory (or when only an external DynamoDB keeps it). */
  dataDir: string | null;
  /** Runs a job once to completion (serialized with the timers and the poller) and returns its report. */
  runJob(name: JobName): Promise<Record<string, unknown>>;
  /** Stops everything this runtime started. Idempotent. */
  stop(): Promise<void>;
  /** `Endpoint=...;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=...` (A1). */
  connectionString: string;
  rootKey: string;
  /** Waiting consumers' WebSocket (H1): `ws://host:port/_websocket`, and its stand-in for tests. */
  websocketUrl: string;
  websocket: LocalWebSocket;
}

const consoleLogger: LocalLogger = {
  info: (message) => console.log(`[sluice] ${message}`),
  error: (message, error) => (error === undefined ? console.error(`[sluice] ${message}`) : console.error(`[sluice] ${message}`, error)),
};

const errorName = (error: unknown) => (error as { name?: string } | null)?.name ?? '';

/**
 * Creates the table and its keys table (`keysTableNameOf`) from the one definitions where
 * missing, and turns the table's TTL on.
 */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await ensureActive(client, tableName, createTableInput(tableName));
  await ensureActive(client, keysTableNameOf(tableName), createKeysTableInput(keysTableNameOf(tableName)));
  const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
  if (status !== 'ENABLED' && status !== 'ENABLING') {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { Enabled: true, AttributeName: tableDefinition.ttlAttribute },
      }),
    );
  }
}

async function ensureActive(client: DynamoDBClient, tableName: string, input: CreateTableCommandInput): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (error) {
    if (errorName(error) !== 'ResourceNotFoundException') throw error;
    try {
      await client.send(new CreateTableCommand(input));
    } catch (createError) {
      if (errorName(createError) !== 'ResourceInUseException') throw createError;
    }
  }
  for (const deadline = Date.now() + 30_000; ;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') break;
    if (Date.now() > deadline) throw new Error(`table ${tableName} is not ACTIVE after 30s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface ClockFile {
  offsetMs: number;
}

function readClockOffset(file: string | null): number {
  if (!file) return 0;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as ClockFile;
    return Number.isFinite(parsed.offsetMs) && parsed.offsetMs > 0 ? parsed.offsetMs : 0;
  } catch {
    return 0;
  }
}

function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, file);
}

function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const logger = options.logger ?? consoleLogger;
  const tableName = options.tableName ?? 'sluice';
  const host = options.host ?? '127.0.0.1';
  const persistent = !options.inMemory && options.dataDir !== undefined;
  const dataDir = persistent ? resolve(options.dataDir!) : null;
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const clockFile = dataDir ? join(dataDir, 'clock.json') : null;
  const checkpointFile = dataDir ? join(dataDir, 'stream-checkpoint.json') : undefined;

  // The broker's time survives a restart with its data: never behind what it was.
  const clock = options.clock ?? new OffsetClock();
  const savedOffset = readClockOffset(clockFile);
  if (savedOffset > clock.offset) clock.advance(savedOffset - clock.offset);
  const saveClock = () => {
    if (clockFile) writeJsonAtomic(clockFile, { offsetMs: clock.offset } satisfies ClockFile);
  };

  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        logger.error('error while stopping', error);
      }
    }
  };

  try {
    let dynamo: DynamoDbLocal | null = null;
    let endpoint = options.dynamoEndpoint;
    if (!endpoint) {
      dynamo = await startDynamoDbLocal(dataDir ? { dataDir } : {});
      endpoint = dynamo.endpoint;
      const started = dynamo;
      cleanups.push(() => started.stop());
    }

    const clientConfig = { endpoint, region: localRegion, credentials: localCredentials };
    const client = new DynamoDBClient(clientConfig);
    const streamsClient = new DynamoDBStreamsClient(clientConfig);
    cleanups.push(() => {
      client.destroy();
      streamsClient.destroy();
    });
    await ensureTable(client, tableName);

    let websocketUrl = '';
    const deps: Deps = { clock, db: documentClient(client), tableName, notificationsUrl: () => websocketUrl };
    const websocket = new LocalWebSocket({ ...options.websocket, log: (message, error) => logger.error(message, error) });
    // The root rule lives in the table, so a generated key is kept in the data folder with it.
    const rules = createBroker(deps).auth;
    // Data kept by a runtime from before the keys table: its rules move there, as on AWS.
    await rules.adoptLegacyRules();
    const root = await rules.ensureRoot(options.rootKey ?? (process.env.SLUICE_ROOT_KEY || undefined));
    const depsOf = (fn: keyof LocalHandlers): Deps => {
      if (!options.instrumentClient) return deps;
      const own = new DynamoDBClient(clientConfig);
      cleanups.push(() => own.destroy());
      options.instrumentClient(fn, own);
      return { ...deps, db: documentClient(own) };
    };
    const handlers: LocalHandlers = {
      api: options.handlers?.api ?? createApiHandler(depsOf('api'), { rootKey: root.primaryKey }),
      stream: options.handlers?.stream ?? createStreamHandler(depsOf('stream')),
      sweeper: options.handlers?.sweeper ?? createSweeperHandler(depsOf('sweeper'), { poster: websocket.poster }),
      reaper: options.handlers?.reaper ?? createReaperHandler(depsOf('reaper')),
      notify: options.handlers?.notify ?? createNotifyHandler(depsOf('notify'), { poster: websocket.poster }),
    };

    const poller = new StreamPoller({
      ddb: client,
      streams: streamsClient,
      tableName,
      handler: websocket.withHints(handlers.stream),
      checkpointFile,
      log: (message, error) => logger.error(message, error),
    });
    cleanups.push(() => poller.stop());

    let stopping = false;
    const jobSerials: Record<'sweeper' | 'reaper', Serial> = { sweeper: new Serial(), reaper: new Serial() };
    cleanups.push(async () => {
      await jobSerials.sweeper.idle();
      await jobSerials.reaper.idle();
    });

    const runJob = async (name: JobName): Promise<Record<string, unknown>> => {
      if (stopping) throw new Error('the local runtime is stopping');
      if (name === 'streams') {
        const report = await poller.drain();
        return { ...report };
      }
      if (name !== 'sweeper' && name !== 'reaper') throw new RangeError(`unknown job ${String(name)}`);
      const job = handlers[name];
      const result = await jobSerials[name].run(() => job());
      return result && typeof result === 'object' ? result : { result };
    };

    // EventBridge's every-minute schedules. A tick while the job is still busy is skipped.
    if (options.timers ?? true) {
      const interval = options.jobIntervalMs ?? 60_000;
      for (const name of ['sweeper', 'reaper'] as const) {
        const timer = setInterval(() => {
          if (stopping || jobSerials[name].pending > 0) return;
          runJob(name).catch((error) => {
            if (!stopping) logger.error(`${name} failed`, error);
          });
        }, interval);
        cleanups.push(() => clearInterval(timer));
      }
    }

    const streamPollMs = options.streamPollMs ?? 250;
    if (streamPollMs > 0) poller.start(streamPollMs);

    const certificate = options.tls ? await localCertificate(dataDir, host) : null;
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      handleRequest(req, res).catch((error) => {
        logger.error('request failed', error);
        if (!res.headersSent) {
          send(res, errorAnswer(500, 'InternalError', 'the local server failed', randomUUID()));
        } else {
          res.destroy();
        }
      });
    };
    const server: Server = certificate ? createHttpsServer({ key: certificate.key, cert: certificate.cert }, onRequest) : createServer(onRequest);
    let localPort = 0;
    let explorerBuild: Promise<ExplorerAssets> | undefined;
    websocket.attach(server, handlers.notify);

    async function handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
      const requestId = randomUUID();
      const now = Date.now();
      const read = await readBody(req);
      if (read === 'aborted') return;
      if (read === 'tooLarge') {
        send(res, jsonAnswer(413, { message: 'Request Entity Too Large' }, requestId));
        return;
      }

      const { rawPath } = splitTarget(req.url ?? '/');
      let path = rawPath;
      try {
        path = decodeURIComponent(rawPath);
      } catch {
        // leave it as sent
      }
      if (path === '/_local' || path.startsWith('/_local/')) {
        const method = req.method ?? 'GET';
        send(res, (await refuseLocal(method, rawPath, req.headers.authorization, requestId)) ?? (await localRoute(method, path, read, requestId)));
        return;
      }
      const event = toApiGatewayEvent(
        {
          method: req.method ?? 'GET',
          url: req.url ?? '/',
          httpVersion: req.httpVersion,
          rawHeaders: req.rawHeaders,
          remoteAddress: req.socket.remoteAddress,
          body: read,
        },
        { requestId, now, localPort },
      );
      // API Gateway says how the client came in; handlers write absolute URLs with it.
      if (certificate) event.headers['x-forwarded-proto'] = 'https';
      // Sluice Explorer: the page the deployed api function serves, built on first use.
      if (isExplorerPath(path, req.headers.accept) && protocolOfEvent(event) === 'sluice') {
        explorerBuild ??= buildExplorer();
        send(res, toHttpAnswer(explorerAnswer(req.method ?? 'GET', path, await explorerBuild), requestId));
        return;
      }
      const refused = eventRefused(event, requestId);
      if (refused) {
        send(res, refused);
        return;
      }
      const context = lambdaContext('sluice-api', { timeoutMs: 29_000 });
      let result: unknown;
      try {
        result = await handlers.api(event, context);
      } catch (error) {
        logger.error(`api handler threw on ${event.requestContext.http.method} ${rawPath}`, error);
        send(res, errorAnswer(500, 'InternalError', 'the handler failed', requestId));
        return;
      }
      let answer: HttpAnswer;
      try {
        const tooLarge = resultRefused(result, requestId);
        if (tooLarge) {
          logger.error(`api handler returned ${tooLarge.size} bytes on ${rawPath}, more than Lambda's 6 MB response limit`);
          send(res, tooLarge);
          return;
        }
        answer = toHttpAnswer(result, requestId);
      } catch (error) {
        logger.error('could not read the api handler result', error);
        send(res, errorAnswer(500, 'InternalError', 'the handler returned an unreadable result', requestId));
        return;
      }
      send(res, answer);
    }

    /**
     * Moving the clock and running jobs is management of the whole namespace, so these
     * routes want what the API wants for it: a token of a namespace rule with Manage (the
     * root key). Otherwise `--host 0.0.0.0` would let anyone on the network use them.
     */
    async function refuseLocal(method: string, rawPath: string, header: string | undefined, requestId: string): Promise<HttpAnswer | undefined> {
      const decision = await authorize({ method, path: rawPath }, header, Math.floor(Date.now() / 1000), rules.findRule, rules.isCurrent);
      if (decision.ok) return undefined;
      if (decision.status === 401) return errorAnswer(401, 'Unauthorized', 'a valid SharedAccessSignature is required', requestId);
      if (decision.status === 400) return errorAnswer(400, 'BadRequest', `path segment ${decision.badName}: is not a name`, requestId);
      return errorAnswer(403, 'Forbidden', 'the token does not grant this operation on this resource', requestId);
    }

    /** The local runtime's own routes, matched in the route table (lib/api/routes.ts) like the API's. */
    async function localRoute(method: string, path: string, body: Buffer, requestId: string): Promise<HttpAnswer> {
      const matches = routesAt(path.split('/').slice(1), localRoutes);
      const job = matches[0]?.params.job;
      if (matches.length === 0 || (job !== undefined && !(jobNames as readonly string[]).includes(job))) {
        return job === undefined
          ? errorAnswer(404, 'EntityNotFound', `no local route ${path}`, requestId)
          : errorAnswer(404, 'EntityNotFound', `no job ${job}; jobs are ${jobNames.join(', ')}`, requestId);
      }
      const wanted = method === 'HEAD' ? 'get' : method.toLowerCase();
      const hit = matches.find((x) => x.route.method === wanted);
      if (!hit) {
        const allowed = matches.map((x) => x.route.method.toUpperCase()).join(', ');
        const answer = errorAnswer(405, 'BadRequest', `${method} is not allowed on ${path}; use ${allowed}`, requestId);
        answer.headers.allow = allowed;
        return answer;
      }
      return localOperations[hit.route.operation as LocalOperation](body, requestId, job as JobName);
    }

    type LocalOperation = Extract<Operation, `local.${string}`>;
    const localOperations: Record<LocalOperation, (body: Buffer, requestId: string, job: JobName) => Promise<HttpAnswer>> = {
      'local.getClock': async (_body, requestId) => jsonAnswer(200, { now: new Date(clock.now()).toISOString() }, requestId),
      'local.advanceClock': async (body, requestId) => {
        let input: unknown;
        try {
          // The API's own body reader: bytes that are not UTF-8 are refused, not replaced (B2).
          input = body.length > 0 ? parseJsonText(decodeUtf8(body)) : {};
        } catch (error) {
          return errorAnswer(400, 'BadRequest', (error as Error).message, requestId);
        }
        const advance = (input as { advance?: unknown } | null)?.advance;
        if (typeof input !== 'object' || input === null || Array.isArray(input)) {
          return errorAnswer(400, 'BadRequest', 'the body must be an object such as {"advance": "PT6M"}', requestId);
        }
        const unknownFields = Object.keys(input).filter((k) => k !== 'advance');
        if (unknownFields.length > 0) {
          return errorAnswer(400, 'BadRequest', `unknown field ${unknownFields[0]}; only advance is accepted`, requestId);
        }
        if (typeof advance !== 'string') {
          return errorAnswer(400, 'BadRequest', 'advance is required: an ISO 8601 duration such as PT6M', requestId);
        }
        let ms: number;
        try {
          ms = durationToMs(advance, clock.now());
        } catch (error) {
          return errorAnswer(400, 'BadRequest', `advance: ${(error as Error).message}`, requestId);
        }
        // Sequence numbers carry the time (S2): a clock past their layout would stop the broker.
        if (clock.now() + ms > MAX_SEQUENCE_TIME_MS) {
          return errorAnswer(
            400,
            'BadRequest',
            `advance: the clock may not pass ${new Date(MAX_SEQUENCE_TIME_MS).toISOString()}, the last time a sequence number can hold`,
            requestId,
          );
        }
        clock.advance(ms);
        saveClock();
        return jsonAnswer(200, { now: new Date(clock.now()).toISOString() }, requestId);
      },
      'local.runJob': async (_body, requestId, job) => {
        try {
          return jsonAnswer(200, await runJob(job), requestId);
        } catch (error) {
          logger.error(`job ${job} failed`, error);
          return errorAnswer(500, 'InternalError', `job ${job} failed: ${(error as Error)?.message ?? String(error)}`, requestId);
        }
      },
    };

    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 4280, host, () => {
        server.off('error', reject);
        resolveListen();
      });
    });
    server.on('error', (error) => logger.error('HTTP server error', error));
    localPort = (server.address() as AddressInfo).port;
    cleanups.push(() => closeServer(server));
    cleanups.push(() => websocket.close());
    // Runs first on stop: no new work is accepted while the rest shuts down.
    cleanups.push(() => {
      stopping = true;
    });

    const url = `${certificate ? 'https' : 'http'}://${urlHost(host)}:${localPort}`;
    const connectionString = `Endpoint=${url}/;SharedAccessKeyName=${root.keyName};SharedAccessKey=${root.primaryKey}`;
    // The CLI finds the broker through this file when given no connection string.
    if (dataDir) writeConnectionFile(dataDir, connectionString);
    websocketUrl = `${certificate ? 'wss' : 'ws'}://${urlHost(host)}:${localPort}${LOCAL_WEBSOCKET_PATH}`;
    let stopped: Promise<void> | null = null;
    return {
      url,
      port: localPort,
      clock,
      deps,
      dynamoEndpoint: endpoint,
      dynamoPid: dynamo?.pid,
      dataDir,
      runJob,
      stop: () => (stopped ??= cleanup()),
      rootKey: root.primaryKey,
      connectionString,
      certificate: certificate ? { pem: certificate.cert, file: certificate.certFile } : null,
      websocketUrl,
      websocket,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** Reads the body, refusing (but draining) anything past API Gateway's own limit. */
function readBody(req: IncomingMessage): Promise<Buffer | 'tooLarge' | 'aborted'> {
  return new Promise((resolveBody) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(req.headers['content-length'] ?? 0) > maxRequestBodyBytes;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxRequestBodyBytes) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on('end', () => resolveBody(tooLarge ? 'tooLarge' : Buffer.concat(chunks, size)));
    req.on('error', () => resolveBody('aborted'));
    // After 'end' this changes nothing; before it, the client went away.
    req.on('close', () => resolveBody('aborted'));
  });
}

function send(res: ServerResponse, answer: HttpAnswer): void {
  if (res.destroyed) return;
  res.writeHead(answer.statusCode, { ...answer.headers, 'content-length': answer.body.length });
  res.end(answer.body);
}

/** Closes the server; open keep-alive connections are closed, requests in flight get a moment to finish. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolveClose) => {
    server.close(() => resolveClose());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 2_000).unref();
  });
}
