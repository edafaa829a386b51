/**
 * H1 for sessions (N2): acceptNextSession waits for an availability hint over the client's
 * one WebSocket, not in a server long poll that keeps a Lambda running. Every accept it sends
 * asks for no wait (`PT0S`); a session becomes available to it through a send, a release of a
 * session lock with messages left, or a session lock that lapsed (the sweeper's minute). Each
 * client's operation timeout is shorter than the test's: without the hint the accept would
 * end in ServiceTimeout, so success here is the hint's doing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient } from '../../lib/client/index.js';
import { rootKeyToken } from '../support/runtime.js';
import { connectionStringFor, localClock, startRuntime } from './support.js';

let runtime: LocalRuntime;
let admin: ServiceBusAdministrationClient;
let plain: ServiceBusClient;
const clients: ServiceBusClient[] = [];

beforeAll(async () => {
  runtime = await startRuntime('sessions-waiting');
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
  plain = new ServiceBusClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await Promise.all([plain, ...clients].map((c) => c?.close()));
  await runtime?.stop();
});

/** A client whose accepts are recorded (their `maxWaitTime`, once answered), with a 15-second operation timeout. */
function recordingClient() {
  const accepts: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const answer = await fetch(input, init);
    if (String(input instanceof Request ? input.url : input).endsWith('/sessions/accept')) {
      accepts.push((JSON.parse(String(init?.body ?? '{}')) as { maxWaitTime?: string }).maxWaitTime ?? 'none');
    }
    return answer;
  };
  const client = new ServiceBusClient(connectionStringFor(runtime), { fetch: recording, retryOptions: { timeoutInMs: 15_000 } });
  clients.push(client);
  return { client, accepts };
}

/** Runs a local job (`streams`: the stream poller once, which posts the hints; `sweeper`), as the runtime's timers would. */
async function runJob(name: 'streams' | 'sweeper'): Promise<void> {
  const res = await fetch(`${runtime.url}/_local/jobs/${name}`, { method: 'POST', headers: { authorization: rootKeyToken(runtime) } });
  expect(res.status).toBe(200);
}

/** Until the waiting accept has subscribed and looked once more (its second accept answered): from then on only a hint wakes it. */
async function listening(accepts: string[]): Promise<void> {
  while (accepts.length < 2) await new Promise((r) => setTimeout(r, 20));
}

describe('H1: acceptNextSession waits for hints, not in a server long poll', () => {
  it('N2: a send to a new session wakes a waiting acceptNextSession; no accept asks the broker to wait', async () => {
    await admin.createQueue('w-send', { requiresSession: true });
    const { client, accepts } = recordingClient();
    const waiting = client.acceptNextSession('w-send');
    await listening(accepts);
    await plain.createSender('w-send').sendMessages({ body: 'hello', sessionId: 'a' });
    await runJob('streams');
    const receiver = await waiting;
    expect(receiver.sessionId).toBe('a');
    expect((await receiver.receiveMessages(1, { maxWaitTimeInMs: 0 })).map((m) => m.body)).toEqual(['hello']);
    expect(accepts.every((w) => w === 'PT0S')).toBe(true);
    expect(accepts.length).toBeLessThanOrEqual(4);
    await receiver.close();
  });

  it('N4: closing a session receiver with messages left wakes another waiting acceptNextSession at once', async () => {
    await admin.createQueue('w-release', { requiresSession: true });
    await plain.createSender('w-release').sendMessages([
      { body: 1, sessionId: 'r' },
      { body: 2, sessionId: 'r' },
    ]);
    const holder = await plain.acceptSession('w-release', 'r');
    await runJob('streams'); // the sends' records, before anyone listens
    const { client, accepts } = recordingClient();
    const waiting = client.acceptNextSession('w-release');
    await listening(accepts);
    const [first] = await holder.receiveMessages(1, { maxWaitTimeInMs: 0 });
    await holder.completeMessage(first!);
    await holder.close();
    await runJob('streams');
    const next = await waiting;
    expect(next.sessionId).toBe('r');
    expect((await next.receiveMessages(1, { maxWaitTimeInMs: 0 })).map((m) => m.body)).toEqual([2]);
    expect(accepts.every((w) => w === 'PT0S')).toBe(true);
    await next.close();
  });

  it('N2: a session lock that lapses wakes a waiting acceptNextSession when the sweeper next runs', async () => {
    await admin.createQueue('w-lapse', { requiresSession: true, lockDuration: 'PT10S' });
    await plain.createSender('w-lapse').sendMessages({ body: 'again', sessionId: 'l' });
    await plain.acceptSession('w-lapse', 'l', { maxAutoLockRenewalDurationInMs: 0 }); // not renewed, never closed: its lock lapses
    await runJob('streams');
    const { client, accepts } = recordingClient();
    const waiting = client.acceptNextSession('w-lapse');
    await listening(accepts);
    await localClock(runtime, 'PT30S');
    await runJob('sweeper');
    const next = await waiting;
    expect(next.sessionId).toBe('l');
    expect(accepts.every((w) => w === 'PT0S')).toBe(true);
    await next.close();
  });
});
