import type { APIGatewayProxyWebsocketEventV2, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { createLog } from '../../lib/log.js';
import { depsFromEnv, lazy, type Deps } from '../../lib/deps.js';
import { brokerContext } from '../../lib/broker/context.js';
import { ruleStore } from '../../lib/broker/authorization.js';
import { subscribe } from '../../lib/notifications/subscribe.js';
import { disconnect, ruleCheck, type ConnectionPoster } from '../../lib/notifications/watchers.js';
import { hintsFromStream } from '../../lib/notifications/hints.js';
import { posterFromEnv } from '../../lib/notifications/poster.js';
import { routes } from '../../lib/notifications/protocol.js';

export interface WebSocketAnswer {
  statusCode: number;
  body?: string;
}

export type NotifyHandler = {
  (event: APIGatewayProxyWebsocketEventV2): Promise<WebSocketAnswer>;
  (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse>;
};

const log = createLog('sluice-notify');

const isStreamEvent = (event: object): event is DynamoDBStreamEvent => Array.isArray((event as DynamoDBStreamEvent).Records);

/**
 * Waiting consumers (H1), one small function for two event sources:
 * - the WebSocket API's `$disconnect` and `subscribe` routes (lib/notifications/watchers.ts, subscribe.ts);
 *   the `subscribe` answer is the route response, so answering costs no ManageConnections;
 * - the table's stream, unbatched, posting availability hints (lib/notifications/hints.ts).
 *   A hint that fails is only logged: hints are hints, the batch never fails over one.
 */
export function createNotifyHandler(deps: Deps, options: { poster?: ConnectionPoster } = {}): NotifyHandler {
  const ctx = brokerContext(deps);
  const auth = ruleStore(ctx);
  const poster = options.poster;
  const check = ruleCheck(auth.findRule);
  const onStream = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    if (poster) {
      try {
        await hintsFromStream(ctx, poster, event.Records ?? [], check);
      } catch (error) {
        log.warn('hints failed', { error });
      }
    }
    return { batchItemFailures: [] };
  };
  const onRoute = async (event: APIGatewayProxyWebsocketEventV2): Promise<WebSocketAnswer> => {
    const { routeKey, connectionId, connectedAt } = event.requestContext;
    if (routeKey === routes.disconnect) {
      await disconnect(ctx, connectionId);
      return { statusCode: 200 };
    }
    if (routeKey === routes.subscribe) {
      let body: unknown;
      try {
        body = JSON.parse(event.body ?? '{}');
      } catch {
        body = {};
      }
      const frame = await subscribe(ctx, auth.findRule, { connectionId, connectedAt }, body, auth.isCurrent);
      return { statusCode: 200, body: JSON.stringify(frame) };
    }
    return { statusCode: 400, body: JSON.stringify({ type: 'refused', entity: '', status: 400, message: `unknown route ${routeKey}` }) };
  };
  return ((event: APIGatewayProxyWebsocketEventV2 | DynamoDBStreamEvent) => (isStreamEvent(event) ? onStream(event) : onRoute(event))) as NotifyHandler;
}

const real = lazy(() => createNotifyHandler(depsFromEnv(), { poster: posterFromEnv() }));
export const handler = ((event: APIGatewayProxyWebsocketEventV2 | DynamoDBStreamEvent) =>
  (real() as (e: typeof event) => Promise<unknown>)(event)) as NotifyHandler;
