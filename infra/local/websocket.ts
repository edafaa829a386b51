/**
 * The local stand-in for API Gateway's WebSocket API: the same routes and frames, on
 * the local HTTP server's port at LOCAL_WEBSOCKET_PATH, hooked into its `upgrade` event.
 *
 * As on AWS: frames route on their `action`; `ping` is answered without any handler (the
 * mock integration); `subscribe` invokes the notify handler and sends its answer back (the
 * route response); a closed socket invokes `$disconnect`; an unknown action gets API
 * Gateway's `Forbidden` frame. Connections close after 10 idle minutes or 2 hours (both
 * shorter in tests). `poster` is the ManageConnections stand-in handlers post hints with.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomBytes, randomUUID } from 'node:crypto';
import { WebSocketServer, WebSocket } from 'ws';
import type { APIGatewayProxyWebsocketEventV2, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import type { ConnectionPoster } from '../../lib/notifications/watchers.js';
import {
  IDLE_TIMEOUT_MS,
  LOCAL_WEBSOCKET_PATH,
  MAX_CONNECTION_MS,
  MAX_FRAME_BYTES,
  MAX_MESSAGE_BYTES,
  PONG_BODY,
  routes,
} from '../../lib/notifications/protocol.js';
import type { NotifyHandler } from '../../functions/notify/handler.js';
import { hintFilterPatterns } from '../../lib/store/stream-filter.js';
import { passesFilters } from './event-filter.js';

export interface LocalWebSocketOptions {
  idleTimeoutMs?: number;
  maxConnectionMs?: number;
  log: (message: string, error?: unknown) => void;
}

export interface LocalWebSocketStats {
  connections: number;
  /** Frames from clients, and frames to them (answers, pongs and hints). */
  framesIn: number;
  framesOut: number;
  /** Summed connected time of closed and open connections, ms. */
  connectedMs: number;
}

export class LocalWebSocket {
  readonly poster: ConnectionPoster;
  // API Gateway's limits (128 KB a message, 32 KB a frame): larger closes the connection with 1009.
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  private readonly sockets = new Map<string, { ws: WebSocket; connectedAt: number }>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private handler: NotifyHandler | undefined;
  private closedMs = 0;
  private counts = { connections: 0, framesIn: 0, framesOut: 0 };

  constructor(private readonly options: LocalWebSocketOptions) {
    this.poster = {
      post: async (connectionId, frame) => {
        const socket = this.sockets.get(connectionId);
        if (!socket || socket.ws.readyState !== WebSocket.OPEN) return false;
        this.sendFrame(socket.ws, JSON.stringify(frame));
        return true;
      },
    };
  }

  /** Serves upgrades to LOCAL_WEBSOCKET_PATH on `server` with `handler`; others are refused. */
  attach(server: Server, handler: NotifyHandler): void {
    this.handler = handler;
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== LOCAL_WEBSOCKET_PATH) {
        socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        limitFrames(ws);
        this.onConnection(ws, req);
      });
    });
  }

  /**
   * Runs the notify handler after the stream handler on each batch (AWS: a second event source
   * mapping), with only the records that mapping's filter lets through.
   */
  withHints(stream: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>) {
    return async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
      const result = await stream(event);
      const Records = (event.Records ?? []).filter((record) => passesFilters(hintFilterPatterns, record));
      if (this.handler && Records.length > 0) await this.track(this.handler({ Records })).catch((e: unknown) => this.options.log('hints failed', e));
      return result;
    };
  }

  stats(): LocalWebSocketStats {
    const now = Date.now();
    let open = 0;
    for (const s of this.sockets.values()) open += now - s.connectedAt;
    return { ...this.counts, connectedMs: this.closedMs + open };
  }

  /** Drops every connection as a network failure would (no close handshake); `$disconnect` still runs. */
  dropAll(): void {
    for (const { ws } of this.sockets.values()) ws.terminate();
  }

  get openConnections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => {});
    return p;
  }

  private sendFrame(ws: WebSocket, text: string) {
    this.counts.framesOut++;
    ws.send(text);
  }

  private onConnection(ws: WebSocket, req: IncomingMessage) {
    // API Gateway's ids look like `L0SM9cOFvHcCIhw=`.
    const connectionId = randomBytes(10).toString('base64');
    const connectedAt = Date.now();
    this.sockets.set(connectionId, { ws, connectedAt });
    this.counts.connections++;
    const idleMs = this.options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
    let idle = setTimeout(() => ws.close(1001, 'Going away'), idleMs);
    idle.unref();
    const max = setTimeout(() => ws.close(1001, 'Going away'), this.options.maxConnectionMs ?? MAX_CONNECTION_MS);
    max.unref();

    const event = (routeKey: string, body?: string) =>
      ({
        requestContext: {
          routeKey,
          eventType: routeKey === routes.disconnect ? 'DISCONNECT' : 'MESSAGE',
          connectionId,
          connectedAt,
          requestId: randomUUID(),
          requestTimeEpoch: Date.now(),
          domainName: req.headers.host ?? 'localhost',
          stage: 'local',
          apiId: 'local',
          extendedRequestId: randomUUID(),
          messageDirection: 'IN',
        },
        body,
        isBase64Encoded: false,
      }) as unknown as APIGatewayProxyWebsocketEventV2;

    ws.on('message', (data, isBinary) => {
      this.counts.framesIn++;
      clearTimeout(idle);
      idle = setTimeout(() => ws.close(1001, 'Going away'), idleMs);
      idle.unref();
      const text = isBinary ? '' : data.toString();
      let action: unknown;
      try {
        action = (JSON.parse(text) as { action?: unknown }).action;
      } catch {
        action = undefined;
      }
      if (action === routes.ping) {
        this.sendFrame(ws, PONG_BODY);
        return;
      }
      if (action !== routes.subscribe || !this.handler) {
        this.sendFrame(ws, JSON.stringify({ message: 'Forbidden', connectionId, requestId: randomUUID() }));
        return;
      }
      const handler = this.handler;
      void this.track(handler(event(routes.subscribe, text)))
        .then((answer) => {
          if (answer.body !== undefined && ws.readyState === WebSocket.OPEN) this.sendFrame(ws, answer.body);
        })
        .catch((e: unknown) => {
          this.options.log('subscribe failed', e);
          if (ws.readyState === WebSocket.OPEN) this.sendFrame(ws, JSON.stringify({ message: 'Internal server error', connectionId, requestId: randomUUID() }));
        });
    });

    ws.on('close', () => {
      clearTimeout(idle);
      clearTimeout(max);
      this.sockets.delete(connectionId);
      this.closedMs += Date.now() - connectedAt;
      if (this.handler) void this.track(this.handler(event(routes.disconnect))).catch((e: unknown) => this.options.log('$disconnect failed', e));
    });
    ws.on('error', () => ws.terminate());
  }
}

/** The receiver state `limitFrames` reads: ws's own (8.x), which has no per-frame limit. */
interface FrameReceiver {
  _payloadLength: number;
  _opcode: number;
  haveLength(cb: (error?: Error) => void): void;
  createError(kind: typeof RangeError, message: string, prefix: boolean, status: number, code: string): Error;
}

/**
 * API Gateway closes a connection on a frame over 32 KB, however small the message it is
 * part of; ws limits only messages (maxPayload). So each data frame's length is checked as
 * ws reads it, and refused the way ws refuses an oversized message (close code 1009).
 */
function limitFrames(ws: WebSocket) {
  const receiver = (ws as unknown as { _receiver?: FrameReceiver })._receiver;
  if (!receiver) return;
  const haveLength = receiver.haveLength.bind(receiver);
  receiver.haveLength = (cb) => {
    if (receiver._opcode < 0x08 && receiver._payloadLength > MAX_FRAME_BYTES) {
      return cb(receiver.createError(RangeError, 'Max frame size exceeded', false, 1009, 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'));
    }
    return haveLength(cb);
  };
}
