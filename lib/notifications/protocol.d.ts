/**
 * The availability-hint protocol (H1), shared by the server side, the local runtime
 * and the client. Pure: no Node-only imports, so the browser client can use it.
 *
 * A consumer opens one WebSocket, subscribes to entities with a SAS token that has Listen on
 * each, and receives over HTTP as usual whenever a hint says messages may be available.
 * Hints carry no message data and may be lost: a consumer also polls slowly as a fallback.
 *
 * Client → server (API Gateway routes on `action`):
 *   {"action":"subscribe","entity":"queues/orders","token":"SharedAccessSignature ..."}
 *   {"action":"ping"}
 * Server → client:
 *   {"type":"subscribed","entity":"queues/orders"}
 *   {"type":"refused","entity":"queues/orders","status":401|403|400,"message":"..."}
 *   {"type":"available","entity":"queues/orders"}
 *   {"type":"pong"}
 */
/** HTTP route answering `{"url": "wss://..."}`: how a client finds the WebSocket from the HTTP endpoint. */
export declare const DISCOVERY_PATH = '/notifications';
/** The local runtime serves the WebSocket on its HTTP port at this path. */
export declare const LOCAL_WEBSOCKET_PATH = '/_websocket';
/** API Gateway's route selection: the `action` field of each JSON frame. */
export declare const ROUTE_SELECTION_EXPRESSION = '$request.body.action';
export declare const routes: {
  readonly subscribe: 'subscribe';
  readonly ping: 'ping';
  readonly disconnect: '$disconnect';
};
/** API Gateway's WebSocket limits: a connection lasts at most 2 hours and idles out after 10 minutes. */
export declare const MAX_CONNECTION_MS: number;
export declare const IDLE_TIMEOUT_MS: number;
/** Clients ping well inside the idle timeout. */
export declare const PING_INTERVAL_MS: number;
export type ClientFrame =
  | {
      action: 'subscribe';
      entity: string;
      token: string;
    }
  | {
      action: 'ping';
    };
export type ServerFrame =
  | {
      type: 'subscribed';
      entity: string;
    }
  | {
      type: 'refused';
      entity: string;
      status: number;
      message: string;
    }
  | {
      type: 'available';
      entity: string;
    }
  | {
      type: 'pong';
    };
/** The pong API Gateway's mock integration answers (kept byte-identical locally). */
export declare const PONG_BODY = '{"type":"pong"}';
/**
 * The canonical name of something a consumer can wait on: a queue or subscription, or one
 * of their dead-letter subqueues, as its HTTP path without slashes at either end, lower-case
 * (`queues/orders`, `topics/t/subscriptions/s/$deadletterqueue`). Undefined otherwise.
 */
export declare function hintPath(entityPath: string): string | undefined;
