/**
 * Availability hints for waiting consumers (H1): instead of long-polling, a consumer waits
 * on a WebSocket for a hint that messages may be available on an entity, then receives
 * over HTTP as usual. Browser- and Node-compatible: the global WebSocket in a browser, the
 * `ws` package (imported on demand) in Node, where the socket and every timer are unref'd
 * so a waiting consumer never keeps a process alive on its own.
 *
 * Hints may be lost (a dropped socket, a redeploy): `wait` also returns after `fallbackMs`,
 * and after every (re)subscription it returns once at once, so a consumer re-polls whatever
 * arrived while it was not listening. A message is never lost, at worst delayed by the
 * fallback.
 */
import { hintPath, PING_INTERVAL_MS, type ClientFrame, type ServerFrame } from '../notifications/protocol.js';

/**
 * Availability hints of one deployment, over one WebSocket: Sluice's own addition (not in
 * @azure/service-bus). A hint says "a message may have become available on this entity", so a
 * consumer can wait without polling; `subscribe` uses them by default (`hintsWaiter`). A hint can be
 * lost (a dropped socket), so a wait always ends after its fallback too.
 */
export interface AvailabilityHints {
  /**
   * Waits for a hint about one entity: resolves when a hint for `entityPath` arrives (or arrived since
   * the last `wait` for it returned), after `fallbackMs`, or when `signal` aborts.
   *
   * @param entityPath - The entity's HTTP path: `queues/orders`, `topics/t/subscriptions/s`, optionally
   * ending in `/$deadletterqueue`.
   * @param fallbackMs - The longest wait, in ms, in case a hint was lost.
   * @param signal - Ends the wait early (resolving, not rejecting).
   */
  wait(entityPath: string, fallbackMs: number, signal?: AbortSignal): Promise<void>;
  /** Closes the socket; pending waits resolve. */
  close(): void;
}

/** Where `openAvailabilityHints` connects, how it signs, and how it keeps the socket alive. */
export interface AvailabilityHintsOptions {
  /** The HTTP endpoint, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com/` or `http://127.0.0.1:4280`. */
  endpoint: string;
  /**
   * A `SharedAccessSignature ...` header value for `audience`, which is the entity's URI
   * (`{endpoint}/queues/orders`); it needs Listen on the entity.
   */
  token: (audience: string) => Promise<string>;
  /** How often to ping (API Gateway drops a connection idle for 10 minutes). */
  pingIntervalMs?: number;
  /** Reconnect backoff after a dropped socket: the first wait, in ms (250 by default), doubling up to `reconnectMaxMs`. */
  reconnectMinMs?: number;
  /** The longest reconnect backoff, in ms (30,000 by default). */
  reconnectMaxMs?: number;
}

/** The few members of a WebSocket used here, common to the browser's and `ws`'s. */
interface Socket {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}
type SocketConstructor = new (url: string) => Socket;

const OPEN = 1;
const SUBSCRIBE_ANSWER_MS = 15_000;
const NOT_FOUND_RETRY_MS = 5 * 60_000;
const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

/** `ws` in Node (its socket can be unref'd), the global WebSocket elsewhere. */
async function socketConstructor(): Promise<SocketConstructor> {
  if (isNode) {
    try {
      const mod = (await import('ws')) as unknown as { WebSocket?: SocketConstructor; default?: SocketConstructor };
      const ctor = mod.WebSocket ?? mod.default;
      if (ctor) return ctor;
    } catch {
      // fall through to a global WebSocket (Node 22+)
    }
  }
  const global = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (!global) throw new Error('no WebSocket available: install the ws package');
  return global;
}

type Timer = ReturnType<typeof setTimeout>;
const unref = (t: Timer) => {
  (t as { unref?: () => void }).unref?.();
  return t;
};

interface EntityState {
  waiters: Set<() => void>;
  /** A hint came while nobody waited: the next wait returns at once. */
  pending: boolean;
  subscription: 'none' | 'sent' | 'subscribed' | 'refused';
}

/**
 * Opens the deployment's availability-hint WebSocket (Sluice's own, not in @azure/service-bus). It
 * connects lazily, subscribes to each entity something waits on, pings to keep API Gateway from
 * dropping it, and reconnects with backoff. Node uses the `ws` package; browsers their `WebSocket`.
 *
 * @param options - The endpoint, how to sign for an entity, and the socket's timings.
 * @returns The hints, to `wait` on and `close`.
 * @throws Error when no WebSocket implementation is available (install `ws` in Node).
 */
export function openAvailabilityHints(options: AvailabilityHintsOptions): AvailabilityHints {
  const base = options.endpoint.replace(/\/+$/, '');
  const pingMs = options.pingIntervalMs ?? PING_INTERVAL_MS;
  const minBackoff = options.reconnectMinMs ?? 250;
  const maxBackoff = options.reconnectMaxMs ?? 30_000;
  const entities = new Map<string, EntityState>();
  let socket: Socket | null = null;
  let connecting = false;
  let closed = false;
  let unavailableUntil = 0;
  let url: string | undefined;
  let backoff = minBackoff;
  let reconnectTimer: Timer | undefined;
  let pingTimer: ReturnType<typeof setInterval> | undefined;
  let awaitingPong = false;

  const wake = (path: string) => {
    const state = entities.get(path);
    if (!state) return;
    if (state.waiters.size === 0) {
      state.pending = true;
      return;
    }
    for (const resolve of [...state.waiters]) resolve();
  };

  const send = (frame: ClientFrame) => {
    if (socket?.readyState === OPEN) socket.send(JSON.stringify(frame));
  };

  const subscribe = async (path: string, state: EntityState) => {
    if (state.subscription !== 'none' || socket?.readyState !== OPEN) return;
    state.subscription = 'sent';
    // No answer (the function failed: API Gateway's answer names no entity): ask again.
    unref(
      setTimeout(() => {
        if (state.subscription !== 'sent') return;
        state.subscription = 'none';
        if (state.waiters.size > 0) void subscribe(path, state);
      }, SUBSCRIBE_ANSWER_MS),
    );
    try {
      send({ action: 'subscribe', entity: path, token: await options.token(`${base}/${path}`) });
    } catch {
      state.subscription = 'none'; // no token now: the fallback poll still runs
    }
  };

  const discover = async (path: string): Promise<string> => {
    const response = await fetch(`${base}/${path}/messages/notifications`, {
      headers: { authorization: await options.token(`${base}/${path}`) },
    });
    // 404: no such entity (yet), or a deployment without the WebSocket API. Waiting is the
    // fallback poll alone until a later wait tries again, at most every NOT_FOUND_RETRY_MS.
    if (response.status === 404) unavailableUntil = Date.now() + NOT_FOUND_RETRY_MS;
    if (!response.ok) throw new Error(`notifications endpoint: HTTP ${response.status}`);
    return ((await response.json()) as { url: string }).url;
  };

  const scheduleReconnect = () => {
    if (closed || Date.now() < unavailableUntil || reconnectTimer || entities.size === 0) return;
    const delay = backoff * (0.8 + Math.random() * 0.4);
    backoff = Math.min(maxBackoff, backoff * 2);
    reconnectTimer = unref(
      setTimeout(() => {
        reconnectTimer = undefined;
        void connect();
      }, delay),
    );
  };

  const onFrame = (data: unknown) => {
    let frame: ServerFrame;
    try {
      frame = JSON.parse(typeof data === 'string' ? data : String(data)) as ServerFrame;
    } catch {
      return;
    }
    if (frame.type === 'pong') {
      awaitingPong = false;
      return;
    }
    if (frame.type === 'available') return wake(frame.entity);
    const state = entities.get(frame.entity);
    if (!state) return;
    if (frame.type === 'subscribed') {
      state.subscription = 'subscribed';
      // Hints sent before the subscription (or while disconnected) were missed: look once.
      wake(frame.entity);
    } else if (frame.type === 'refused') {
      state.subscription = 'refused';
      wake(frame.entity); // the receive will say what is wrong
    }
  };

  async function connect(preferred?: string): Promise<void> {
    if (closed || Date.now() < unavailableUntil || connecting || socket) return;
    const path = preferred ?? entities.keys().next().value;
    if (path === undefined) return;
    connecting = true;
    try {
      url ??= await discover(path);
      const Ctor = await socketConstructor();
      const ws = new Ctor(url);
      socket = ws;
      ws.onopen = () => {
        (ws as { _socket?: { unref?: () => void } })._socket?.unref?.();
        backoff = minBackoff;
        awaitingPong = false;
        pingTimer = setInterval(() => {
          // No pong since the last ping: the connection is half-open; start over.
          if (awaitingPong) return ws.close();
          awaitingPong = true;
          send({ action: 'ping' });
        }, pingMs);
        unref(pingTimer as unknown as Timer);
        for (const [path, state] of entities) void subscribe(path, state);
      };
      ws.onmessage = (ev) => onFrame(ev.data);
      ws.onerror = () => {};
      ws.onclose = () => {
        if (socket === ws) socket = null;
        clearInterval(pingTimer);
        for (const state of entities.values()) if (state.subscription !== 'refused') state.subscription = 'none';
        scheduleReconnect();
      };
    } catch {
      url = undefined; // discover again next time: the endpoint may have moved
      socket = null;
      scheduleReconnect();
    } finally {
      connecting = false;
    }
  }

  return {
    wait(entityPath, fallbackMs, signal) {
      const path = hintPath(entityPath);
      return new Promise<void>((resolve) => {
        if (closed || signal?.aborted) return resolve();
        let fallback: Timer | undefined;
        if (path === undefined) {
          fallback = unref(setTimeout(resolve, fallbackMs));
          return;
        }
        let state = entities.get(path);
        if (!state) {
          state = { waiters: new Set(), pending: false, subscription: 'none' };
          entities.set(path, state);
        }
        if (state.pending) {
          state.pending = false;
          return resolve();
        }
        const entity = state;
        const done = () => {
          entity.waiters.delete(done);
          if (fallback) clearTimeout(fallback);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        entity.waiters.add(done);
        fallback = unref(setTimeout(done, fallbackMs));
        signal?.addEventListener('abort', done, { once: true });
        if (entity.subscription === 'refused') entity.subscription = 'none'; // try again: keys change
        if (socket) void subscribe(path, entity);
        else void connect(path);
      });
    },
    close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      clearInterval(pingTimer);
      const ws = socket;
      socket = null;
      ws?.close();
      for (const state of entities.values()) for (const resolve of [...state.waiters]) resolve();
      entities.clear();
    },
  };
}
