import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { Logger } from '@aws-lambda-powertools/logger';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { createBroker } from '../../lib/broker/index.js';
import { errorShape, jsonBody, jsonHeaders, type Event } from './http.js';
import { route } from './router.js';

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

const logger = new Logger({ serviceName: 'sluice-api' });

/** The HTTP API (API.md): parse, route to the broker, shape the answer. */
export function createApiHandler(deps: Deps): ApiHandler {
  const broker = createBroker(deps);
  const core = async (event: Event): Promise<APIGatewayProxyStructuredResultV2> => {
    const query: Record<string, string | undefined> = { ...(event.queryStringParameters ?? {}) };
    const result = await route(broker, {
      method: event.requestContext.http.method,
      path: event.rawPath,
      query,
      body: event.parsedBody,
    });
    return result.body === undefined
      ? { statusCode: result.status, headers: jsonHeaders, body: '' }
      : { statusCode: result.status, headers: jsonHeaders, body: JSON.stringify(result.body) };
  };
  const handler = middy<Event, APIGatewayProxyStructuredResultV2>()
    .use(errorShape((message, error) => logger.error(message, error as Error)))
    .use(jsonBody())
    .handler(core);
  return (event, context) => handler(event as Event, context) as Promise<APIGatewayProxyStructuredResultV2>;
}

const real = lazy(() => createApiHandler(depsFromEnv()));
export const handler: ApiHandler = (event, context) => real()(event, context);
