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
 *   {"type":"refused","entity":"queues/orders","status":401|403|404|400,"message":"..."}
 *   {"type":"available","entity":"queues/orders"}
 *   {"type":"pong"}
 *
 * A subscription is to one incarnation of an entity, under one token (H2): `refused` comes
 * later too, and ends it, when the entity is deleted (404), or the token expires or its rule
 * or key is removed (401). A connection waits on at most 100 entities (403 past that).
 * Frames are at most 32 KB and messages 128 KB, as on API Gateway (larger: closed with 1009).
 */

/** HTTP route answering `{"url": "wss://..."}`: how a client finds the WebSocket from the HTTP endpoint. */
export const DISCOVERY_PATH = '/notifications';
/** The local runtime serves the WebSocket on its HTTP port at this path. */
export const LOCAL_WEBSOCKET_PATH = '/_websocket';

/** API Gateway's route selection: the `action` field of each JSON frame. */
export const ROUTE_SELECTION_EXPRESSION = '$request.body.action';
export const routes = { subscribe: 'subscribe', ping: 'ping', disconnect: '$disconnect' } as const;

/** API Gateway's WebSocket limits: a connection lasts at most 2 hours and idles out after 10 minutes. */
export const MAX_CONNECTION_MS = 2 * 3600_000;
export const IDLE_TIMEOUT_MS = 10 * 60_000;
/** API Gateway's WebSocket frame and message size limits; a larger one closes the connection with 1009. */
export const MAX_FRAME_BYTES = 32 * 1024;
export const MAX_MESSAGE_BYTES = 128 * 1024;
/** Clients ping well inside the idle timeout. */
export const PING_INTERVAL_MS = 5 * 60_000;

export type ClientFrame = { action: 'subscribe'; entity: string; token: string } | { action: 'ping' };

export type ServerFrame =
  | { type: 'subscribed'; entity: string }
  | { type: 'refused'; entity: string; status: number; message: string }
  | { type: 'available'; entity: string }
  | { type: 'pong' };

/** The pong API Gateway's mock integration answers (kept byte-identical locally). */
export const PONG_BODY = '{"type":"pong"}';

const SUBQUEUE_SEGMENTS = new Set(['$deadletterqueue', '$transferdeadletterqueue']);

/**
 * The canonical name of something a consumer can wait on: a queue or subscription, or one
 * of their dead-letter subqueues, as its HTTP path without slashes at either end, lower-case
 * (`queues/orders`, `topics/t/subscriptions/s/$deadletterqueue`). Undefined otherwise.
 */
export function hintPath(entityPath: string): string | undefined {
  const segments = entityPath.replace(/^\/+|\/+$/g, '').split('/');
  let decoded: string[];
  try {
    decoded = segments.map((s) => decodeURIComponent(s).toLowerCase());
  } catch {
    return undefined;
  }
  if (decoded.some((s) => s.length === 0 || s.length > 260 || /[\s?#\\]/.test(s))) return undefined;
  let base: number;
  if (decoded[0] === 'queues') base = 2;
  else if (decoded[0] === 'topics' && decoded[2] === 'subscriptions') base = 4;
  else return undefined;
  if (decoded.length === base) return decoded.join('/');
  if (decoded.length === base + 1 && SUBQUEUE_SEGMENTS.has(decoded[base]!)) return decoded.join('/');
  return undefined;
}
