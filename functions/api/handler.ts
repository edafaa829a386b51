import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';

export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** STUB: replaced by the real router. */
export function createApiHandler(_deps: Deps): ApiHandler {
  return async () => ({ statusCode: 501, headers: { 'content-type': 'application/json' }, body: '{}' });
}

const real = lazy(() => createApiHandler(depsFromEnv()));
export const handler: ApiHandler = (event, context) => real()(event, context);
