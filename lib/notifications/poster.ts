/** Posting frames to API Gateway WebSocket connections (`execute-api:ManageConnections`). */
import { ApiGatewayManagementApiClient, GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { ConnectionPoster } from './watchers.js';

/** `endpoint` is the stage's callback URL, `https://{api}.execute-api.{region}.amazonaws.com/{stage}`. */
export function managementApiPoster(endpoint: string): ConnectionPoster {
  const client = new ApiGatewayManagementApiClient({ endpoint });
  return {
    post: async (connectionId, frame) => {
      try {
        await client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: new TextEncoder().encode(JSON.stringify(frame)) }));
        return true;
      } catch (e) {
        if (e instanceof GoneException || (e as { name?: string }).name === 'GoneException') return false;
        throw e;
      }
    },
  };
}

/** The poster a function gets from its environment (NOTIFICATIONS_ENDPOINT), if the stack has the WebSocket API. */
export function posterFromEnv(env: NodeJS.ProcessEnv = process.env): ConnectionPoster | undefined {
  return env.NOTIFICATIONS_ENDPOINT ? managementApiPoster(env.NOTIFICATIONS_ENDPOINT) : undefined;
}
