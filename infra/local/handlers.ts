/** The Lambda functions the local runtime runs: built from their factories, as on AWS, unless a test gives its own. */
import type { DynamoDBClient, DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { createApiHandler, type ApiHandler } from '../../functions/api/handler.js';
import { createNotifyHandler, type NotifyHandler } from '../../functions/notify/handler.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { createStreamHandler, type StreamHandler } from '../../functions/stream/handler.js';
import { createSweeperHandler, type JobHandler } from '../../functions/sweeper/handler.js';
import { documentClient, dynamoDbClient, type Deps } from '../../lib/deps.js';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';
import type { ShutdownSteps } from './shutdown.js';

export interface LocalHandlers {
  api: ApiHandler;
  stream: StreamHandler;
  sweeper: JobHandler;
  reaper: JobHandler;
  notify: NotifyHandler;
}

export interface HandlerOptions {
  deps: Deps;
  /** The root rule's key: the api handler checks tokens of the root rule against it. */
  rootKey: string;
  /** The WebSocket stand-in's ManageConnections, that the sweeper and notify post hints with. */
  poster: ConnectionPoster;
  /** Replace handlers built from the factories (tests). */
  given?: Partial<LocalHandlers>;
  /**
   * Tests: gives each handler a DynamoDB client of its own (made with `clientConfig`, destroyed
   * on stop) and hands it here first, so the calls a function makes can be told apart.
   */
  instrumentClient?: (fn: keyof LocalHandlers, client: DynamoDBClient) => void;
  clientConfig: DynamoDBClientConfig;
  shutdown: ShutdownSteps;
}

export function buildHandlers(options: HandlerOptions): LocalHandlers {
  const { deps, given, poster } = options;
  const depsOf = (fn: keyof LocalHandlers): Deps => {
    if (!options.instrumentClient) return deps;
    const own = dynamoDbClient(options.clientConfig);
    options.shutdown.add(() => own.destroy());
    options.instrumentClient(fn, own);
    return { ...deps, db: documentClient(own) };
  };
  return {
    api: given?.api ?? createApiHandler(depsOf('api'), { rootKey: options.rootKey }),
    stream: given?.stream ?? createStreamHandler(depsOf('stream')),
    sweeper: given?.sweeper ?? createSweeperHandler(depsOf('sweeper'), { poster }),
    reaper: given?.reaper ?? createReaperHandler(depsOf('reaper')),
    notify: given?.notify ?? createNotifyHandler(depsOf('notify'), { poster }),
  };
}
