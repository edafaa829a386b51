/**
 * Receive and complete of the 1 KB JSON event (bench/payloads.ts `jsonEvent`) through the API,
 * on a positioned queue (lib/broker/positioned-receive.ts) and on today's layout, metered call
 * by call: peek-lock receives of 10 with one batch complete, and of 1 with a single complete,
 * and each life's share of the empty receive after the locks' end that cleans up what the
 * lives left (settled leases, lock reminders). Entity reads included, as a client's requests
 * make them; the send is not metered (today's through the API, the positioned one put at
 * positions as its send will, the send not being positioned yet), nor the stream.
 */
import type { Tally } from '../capacity.js';
import { createEnv, type BenchEnv } from '../harness.js';
import { jsonEvent } from '../payloads.js';
import { createApiHandler } from '../../functions/api/handler.js';
import { directApiEvent, lambdaContext } from '../../infra/local/http-events.js';
import { brokerContext } from '../../lib/broker/context.js';
import { buildMessageItem } from '../../lib/broker/message-items.js';
import { signToken } from '../../lib/auth/index.js';
import { entityKey, padPosition, positionedPk } from '../../lib/store/keys.js';
import { getEntity } from '../../lib/store/entities.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import type { MessageInput } from '../../lib/messages/schema.js';

const LIVES = 100;
const LOCK = 'PT30S';

export interface ReceiveLife {
  writeUnits: number;
  readUnits: number;
  calls: number;
}

export interface PositionedReceiveResult {
  positioned: { batch10: ReceiveLife; single: ReceiveLife };
  today: { batch10: ReceiveLife; single: ReceiveLife };
}

const plus = (a: Tally, b: Tally): Tally => ({
  ...a,
  writeUnits: a.writeUnits + b.writeUnits,
  readUnits: a.readUnits + b.readUnits,
  requests: a.requests + b.requests,
});

/** Sends `n` events into the queue, unmetered: positioned as its send will put them, or through today's API. */
async function send(env: BenchEnv, queue: string, n: number, positioned: boolean, from: number): Promise<void> {
  env.meter.paused = true;
  try {
    if (!positioned) {
      await env.api('POST', `/queues/${queue}/messages/batch`, { messages: Array.from({ length: n }, (_, i) => ({ body: jsonEvent(from + i) })) }, 201);
      return;
    }
    const entity = (await getEntity(env.deps, entityKey('queue', queue), true))!;
    const ctx = brokerContext(env.deps);
    const pk = positionedPk(entity.eid, 'active', 0);
    const draw = await drawPositions(ctx, pk, n);
    const payloads = Array.from({ length: n }, (_, i) => {
      const built = buildMessageItem(ctx, entity, { body: jsonEvent(from + i) } as MessageInput);
      const {
        rpk: _rpk,
        rsk: _rsk,
        ...rest
      } = storedMessage({
        ...built,
        pk,
        sk: padPosition(draw.first + i),
        seq: positionedSeq(draw.first + i, 0).toString(),
      });
      return rest;
    });
    if ((await putAtPositions(ctx, pk, draw, payloads)) !== 'written') throw new Error('positioned-receive: a put failed');
  } finally {
    env.meter.paused = false;
  }
}

async function lives(env: BenchEnv, queue: string, positioned: boolean, perRequest: number): Promise<ReceiveLife> {
  let total: Tally | undefined;
  const add = (t: Tally) => (total = total ? plus(total, t) : t);
  for (let done = 0; done < LIVES; done += perRequest) {
    await send(env, queue, perRequest, positioned, done);
    const measured = await env.meter.measure(async () => {
      const got = (await env.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: perRequest, maxWaitTime: 'PT0S' }, 200)).body.messages as {
        sequenceNumber: string;
        lockToken: string;
      }[];
      if (got.length !== perRequest) throw new Error(`positioned-receive: received ${got.length} of ${perRequest}`);
      if (perRequest === 1) await env.api('POST', `/queues/${queue}/messages/${got[0]!.sequenceNumber}/complete`, { lockToken: got[0]!.lockToken }, 204);
      else await env.api('POST', `/queues/${queue}/messages/complete`, { lockTokens: got.map((m) => m.lockToken) }, 200);
    });
    add(measured.tally);
  }
  // The locks end: the next receive cleans up after the lives (settled leases, reminders).
  env.clock.advance(31_000);
  add((await env.meter.measure(() => env.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: perRequest, maxWaitTime: 'PT0S' }, 200))).tally);
  return { writeUnits: total!.writeUnits / LIVES, readUnits: total!.readUnits / LIVES, calls: total!.requests / LIVES };
}

export async function runPositionedReceive(endpoint: string, rootKey: string, log: (line: string) => void): Promise<PositionedReceiveResult> {
  // Today's layout, named, for the queues compared with the positioned ones (their `ready` index receive).
  const env = await createEnv({ name: 'positioned-receive', endpoint, tableName: 'bench_positioned_receive', rootKey, newEntityLayout: 'index' });
  try {
    // The queues are made by a deployment that gives new queues the positioned layout, or not.
    const positionedHandler = createApiHandler({ ...env.deps, newEntityLayout: 'positions' }, { rootKey });
    const authorization = signToken({
      resourceUri: 'http://localhost/',
      keyName: 'RootManageSharedAccessKey',
      key: rootKey,
      expiresAt: Math.floor(Date.now() / 1000) + 3600,
    });
    for (const name of ['pos10', 'pos1']) {
      const event = directApiEvent('PUT', `/queues/${name}`, {
        headers: { authorization, host: 'localhost' },
        body: JSON.stringify({ lockDuration: LOCK }),
        userAgent: 'bench',
      });
      const res = await positionedHandler(event, lambdaContext('sluice-api', { timeoutMs: 29_000 }));
      if (res.statusCode !== 201) throw new Error(`positioned-receive: PUT ${name} answered ${res.statusCode}`);
    }
    for (const name of ['today10', 'today1']) await env.api('PUT', `/queues/${name}`, { lockDuration: LOCK }, 201);
    const result = {
      positioned: { batch10: await lives(env, 'pos10', true, 10), single: await lives(env, 'pos1', true, 1) },
      today: { batch10: await lives(env, 'today10', false, 10), single: await lives(env, 'today1', false, 1) },
    };
    log('positioned-receive: measured');
    return result;
  } finally {
    env.destroy();
  }
}
