/**
 * The local runtime for client tests (real handlers over HTTP on the run's DynamoDB Local),
 * and a fault proxy in front of it for the retry tests.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LocalRuntime, LocalRuntimeOptions } from '../../infra/local/runtime.js';
import type { ClientClock } from '../../lib/client/clock.js';
import type { OffsetClock } from '../../lib/clock.js';
import { rootKeyToken, startTestRuntime } from '../support/runtime.js';

export function startRuntime(name: string, options: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  return startTestRuntime(`client-${name}`, { inMemory: true, ...options });
}

/** The broker's clock (`/_local/clock`, which takes the root key): moved by `advance` when given. */
export async function localClock(runtime: LocalRuntime, advance?: string): Promise<Date> {
  const authorization = rootKeyToken(runtime);
  const res = await fetch(`${runtime.url}/_local/clock`, {
    method: advance === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization },
    ...(advance === undefined ? {} : { body: JSON.stringify({ advance }) }),
  });
  if (!res.ok) throw new Error(`/_local/clock answered ${res.status}`);
  return new Date(((await res.json()) as { now: string }).now);
}

/**
 * A client clock on the broker's time (ServiceBusClientOptions.clock): `advance` moves the
 * runtime's clock and runs the timers that became due, so lock renewal (N4) is tested across
 * lock durations without sleeping through them. A timer also runs once its time has passed in
 * real time, as the broker's clock moves with real time too.
 */
interface Timer {
  at: number;
  fn: () => void;
  timer: ReturnType<typeof setTimeout>;
}

export class BrokerTimeClock implements ClientClock {
  private readonly timers = new Set<Timer>();

  constructor(private readonly broker: OffsetClock) {}

  now(): number {
    return this.broker.now();
  }

  after(ms: number, fn: () => void): () => void {
    const entry: Timer = { at: this.now() + ms, fn, timer: setTimeout(() => this.run(entry), ms) };
    entry.timer.unref();
    this.timers.add(entry);
    return () => {
      clearTimeout(entry.timer);
      this.timers.delete(entry);
    };
  }

  advance(ms: number): void {
    this.broker.advance(ms);
    const now = this.now();
    for (const entry of [...this.timers]) if (entry.at <= now) this.run(entry);
  }

  private run(entry: Timer): void {
    if (!this.timers.delete(entry)) return;
    clearTimeout(entry.timer);
    entry.fn();
  }
}

/** Polls `check` every 20 ms (real time: what a client does in the background) until it holds; throws after `ms`. */
export async function until(check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A connection string for `url` with the runtime's root key. */
export const connectionStringFor = (runtime: LocalRuntime, url = runtime.url) =>
  `Endpoint=${url}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${runtime.rootKey}`;

export type Fault = '503' | '429' | 'reset' | 'reset-after-forward' | 'gateway-503-after-forward' | { delayMs: number } | 'pass';

/**
 * Forwards to `target`, first applying the queued faults one per request: answer 503/429
 * without forwarding, drop the connection before forwarding (`reset`) or after the target
 * answered (`reset-after-forward`: the request was applied, the client never hears), or hold
 * the answer for a while. `gateway-503-after-forward` is API Gateway's answer to an
 * integration that ran past its timeout: the function stored the message, the client gets a
 * 503 without the broker's error body.
 */
export class FaultProxy {
  readonly faults: Fault[] = [];
  readonly seen: string[] = [];
  private server!: Server;
  url = '';

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const fault = this.faults.shift() ?? 'pass';
      this.seen.push(`${req.method} ${req.url} ${typeof fault === 'string' ? fault : `delay ${fault.delayMs}`}`);
      if (fault === '503' || fault === '429') {
        req.resume();
        res.writeHead(Number(fault), { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(JSON.stringify({ error: { code: 'Throttled', message: 'injected', retryable: true, requestId: 'proxy' } }));
        return;
      }
      if (fault === 'reset') {
        req.socket.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const out = httpRequest(`${this.target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (c: Buffer) => body.push(c));
          answer.on('end', () => {
            if (fault === 'reset-after-forward') {
              req.socket.destroy();
              return;
            }
            if (fault === 'gateway-503-after-forward') {
              res.writeHead(503, { 'content-type': 'application/json' });
              res.end(JSON.stringify({ message: 'Service Unavailable' }));
              return;
            }
            const reply = () => {
              if (res.destroyed) return;
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              res.end(Buffer.concat(body));
            };
            if (typeof fault === 'object') setTimeout(reply, fault.delayMs);
            else reply();
          });
        });
        out.on('error', () => req.socket.destroy());
        out.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
