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
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { OffsetClock } from '../../lib/clock.js';
import { documentClient, layoutFromEnv, type Deps, type NewEntityLayout } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';
import { LOCAL_WEBSOCKET_PATH } from '../../lib/notifications/protocol.js';
import { restoreClock } from './clock-file.js';
import { writeConnectionFile } from './connection-file.js';
import { buildHandlers, type LocalHandlers } from './handlers.js';
import { HttpStandIn } from './http-server.js';
import { LocalJobs, type JobName } from './jobs.js';
import { createLocalRoutes } from './local-routes.js';
import { consoleLogger, type LocalLogger } from './logger.js';
import { ShutdownSteps } from './shutdown.js';
import { openLocalStorage } from './storage.js';
import { StreamPoller } from './stream-poller.js';
import { localCertificate } from './tls.js';
import { LocalWebSocket } from './websocket.js';

export { jobNames, type JobName } from './jobs.js';
export type { LocalHandlers } from './handlers.js';
export type { LocalLogger } from './logger.js';

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
  /** The layout new queues and subscriptions get (lib/deps.ts `Deps.newEntityLayout`); default SLUICE_NEW_ENTITY_LAYOUT, else the deployment default. */
  newEntityLayout?: NewEntityLayout;
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
  /** How long the api may take before the answer is API Gateway's 503 (INTEGRATION_TIMEOUT_MS, 30 s, by default; tests shorten it). */
  integrationTimeoutMs?: number;
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

function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Starts the parts in the order they depend on one another (storage, the root rule, the
 * handlers, the stream poller and the jobs, then the server); `stop` (or a failed start)
 * stops them in reverse.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const logger = options.logger ?? consoleLogger;
  const tableName = options.tableName ?? 'sluice';
  const host = options.host ?? '127.0.0.1';
  const persistent = !options.inMemory && options.dataDir !== undefined;
  const dataDir = persistent ? resolve(options.dataDir!) : null;
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const clock = options.clock ?? new OffsetClock();
  const saveClock = restoreClock(clock, dataDir);
  const shutdown = new ShutdownSteps(logger);

  try {
    const storage = await openLocalStorage({ dynamoEndpoint: options.dynamoEndpoint, dataDir, tableName }, shutdown);
    let websocketUrl = '';
    const deps: Deps = {
      clock,
      db: documentClient(storage.client),
      tableName,
      notificationsUrl: () => websocketUrl,
      ...(options.newEntityLayout ? { newEntityLayout: options.newEntityLayout } : layoutFromEnv()),
    };
    const websocket = new LocalWebSocket({ ...options.websocket, log: (message, error) => logger.error(message, error) });
    // The root rule lives in the table, so a generated key is kept in the data folder with it.
    const rules = createBroker(deps).auth;
    // Data kept by a runtime from before the keys table: its rules move there, as on AWS.
    await rules.adoptLegacyRules();
    const root = await rules.ensureRoot(options.rootKey ?? (process.env.SLUICE_ROOT_KEY || undefined));
    const handlers = buildHandlers({
      deps,
      rootKey: root.primaryKey,
      poster: websocket.poster,
      given: options.handlers,
      instrumentClient: options.instrumentClient,
      clientConfig: storage.clientConfig,
      shutdown,
    });

    const poller = new StreamPoller({
      ddb: storage.client,
      streams: storage.streamsClient,
      tableName,
      handler: websocket.withHints(handlers.stream),
      checkpointFile: dataDir ? join(dataDir, 'stream-checkpoint.json') : undefined,
      log: (message, error) => logger.error(message, error),
    });
    shutdown.add(() => poller.stop());
    const jobs = new LocalJobs(handlers, poller, logger);
    shutdown.add(() => jobs.idle());
    if (options.timers ?? true) shutdown.add(jobs.schedule(options.jobIntervalMs ?? 60_000));
    const streamPollMs = options.streamPollMs ?? 250;
    if (streamPollMs > 0) poller.start(streamPollMs);

    const certificate = options.tls ? await localCertificate(dataDir, host) : null;
    const http = new HttpStandIn({
      api: handlers.api,
      localRoutes: createLocalRoutes({ clock, saveClock, jobs, rules, logger }),
      certificate,
      logger,
      integrationTimeoutMs: options.integrationTimeoutMs,
    });
    websocket.attach(http.server, handlers.notify);
    const port = await http.listen(options.port ?? 4280, host);
    shutdown.add(() => http.close());
    shutdown.add(() => websocket.close());
    // Runs first on stop: no new work is accepted while the rest shuts down.
    shutdown.add(() => jobs.refuseNew());

    const url = `${certificate ? 'https' : 'http'}://${urlHost(host)}:${port}`;
    const connectionString = `Endpoint=${url}/;SharedAccessKeyName=${root.keyName};SharedAccessKey=${root.primaryKey}`;
    // The CLI finds the broker through this file when given no connection string.
    if (dataDir) writeConnectionFile(dataDir, connectionString);
    websocketUrl = `${certificate ? 'wss' : 'ws'}://${urlHost(host)}:${port}${LOCAL_WEBSOCKET_PATH}`;
    let stopped: Promise<void> | null = null;
    return {
      url,
      port,
      clock,
      deps,
      dynamoEndpoint: storage.endpoint,
      dynamoPid: storage.dynamoPid,
      dataDir,
      runJob: (name) => jobs.run(name),
      stop: () => (stopped ??= shutdown.run()),
      rootKey: root.primaryKey,
      connectionString,
      certificate: certificate ? { pem: certificate.cert, file: certificate.certFile } : null,
      websocketUrl,
      websocket,
    };
  } catch (error) {
    await shutdown.run();
    throw error;
  }
}
