import { fileURLToPath } from 'node:url';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { depsFromEnv, lazy, wallSeconds, type Deps } from '../../lib/deps.js';
import { createApiBroker } from '../../lib/broker/index.js';
import { errorShape, jsonBody, jsonHeaders, sharedAccessSignature, type Event } from './http.js';
import { route } from './router.js';
import { explorerAnswer, isExplorerPath, readExplorerAssets, type ExplorerAssets } from '../../lib/explorer/serve.js';
import { createLog } from '../../lib/log.js';
import { protocolOfEvent } from '../../lib/protocols/dispatch.js';
import type { ProtocolAnswer } from '../../lib/protocols/serve.js';

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

export interface ApiOptions {
  /** Pins the RootManageSharedAccessKey primary key (SLUICE_ROOT_KEY); otherwise one is generated once. */
  rootKey?: string;
}

const log = createLog('sluice-api');

/** The HTTP API (docs/http-api.md): authorize, parse, route to the broker, shape the answer. */
export function createApiHandler(deps: Deps, options: ApiOptions = {}): ApiHandler {
  const broker = createApiBroker(deps);
  const rootReady = lazy(() => broker.auth.ensureRoot(options.rootKey));
  const nowSeconds = () => wallSeconds(deps);
  const core = async (event: Event): Promise<APIGatewayProxyStructuredResultV2> => {
    const result = await route(broker, {
      method: event.requestContext.http.method,
      path: event.rawPath,
      query: { ...(event.queryStringParameters ?? {}) },
      body: event.parsedBody,
      ...(event.grant ? { grant: event.grant } : {}),
    });
    return result.body === undefined
      ? { statusCode: result.status, headers: jsonHeaders, body: '' }
      : { statusCode: result.status, headers: jsonHeaders, body: JSON.stringify(result.body) };
  };
  const handler = middy<Event, APIGatewayProxyStructuredResultV2>()
    .use(errorShape((message, error) => log.error(message, error)))
    .use(sharedAccessSignature({ findRule: broker.auth.findRule, isCurrent: broker.auth.isCurrent, ready: rootReady, nowSeconds }))
    .use(jsonBody())
    .handler(core);
  const serviceBus = {
    nowSeconds,
    findRule: broker.auth.findRule,
    isCurrent: broker.auth.isCurrent,
    log: (message: string, error: unknown) => log.error(message, error),
  };
  return async (event, context) => {
    // Service Bus's own protocols (lib/protocols/dispatch.ts) share the host root with Sluice's API.
    const protocol = protocolOfEvent(event);
    if (protocol === 'sluice') return handler(event as Event, context) as Promise<APIGatewayProxyStructuredResultV2>;
    await rootReady();
    const { serveServiceBus } = await serviceBusProtocols();
    const answer = await serveServiceBus(
      broker,
      protocol,
      {
        method: event.requestContext.http.method,
        rawPath: event.rawPath,
        query: event.queryStringParameters ?? {},
        headers: event.headers ?? {},
        body: event.body,
        isBase64Encoded: event.isBase64Encoded,
        requestId: event.requestContext.requestId,
        domainName: event.requestContext.domainName,
      },
      serviceBus,
    );
    return toLambdaResult(answer);
  };
}

/**
 * Service Bus's own protocols and their XML reader, loaded by the first request that speaks one:
 * a chunk of their own in the bundle (infra/bundling.ts `functionBundleOptions`), which a cold
 * start for Sluice's own API does not load.
 */
const serviceBusProtocols = lazy(() => import('../../lib/protocols/serve.js'));

/** Bytes go back base64, as API Gateway wants a binary body. */
function toLambdaResult(answer: ProtocolAnswer): APIGatewayProxyStructuredResultV2 {
  const { status, headers = {}, body } = answer;
  if (Buffer.isBuffer(body)) return { statusCode: status, headers, body: body.toString('base64'), isBase64Encoded: true };
  return { statusCode: status, headers, body: body ?? '' };
}

const real = lazy(() => createApiHandler(depsFromEnv(), process.env.SLUICE_ROOT_KEY ? { rootKey: process.env.SLUICE_ROOT_KEY } : {}));
// Sluice Explorer: its files are copied beside the bundle at deploy (infra/constructs/api.ts).
const explorerAssets = lazy((): ExplorerAssets => {
  try {
    return readExplorerAssets(fileURLToPath(new URL('./explorer/', import.meta.url)));
  } catch {
    return new Map();
  }
});
export const handler: ApiHandler = async (event, context) =>
  isExplorerPath(event.rawPath, event.headers?.accept) && protocolOfEvent(event) === 'sluice'
    ? explorerAnswer(event.requestContext.http.method, event.rawPath, explorerAssets())
    : real()(event, context);
