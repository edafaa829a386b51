/**
 * Sends of the 1 KB JSON event (bench/payloads.ts `jsonEvent`) through the API handler, into a
 * queue of today's layout and into a positioned one (lib/broker/positioned-send.ts), metered
 * call by call: write and read units per message of a single send and of a batch of 10, on a
 * warm function (entity read cached, use recorded, ready marks written), as at a steady flow.
 * The send only: no receive, no stream, no counts.
 */
import { createEnv, type BenchEnv, type OpResult } from '../harness.js';
import { jsonEvent } from '../payloads.js';
import { measureOp } from './measure.js';

const REPS = 5;

export interface PositionedSendResult {
  today: { single: OpResult; batch10: OpResult };
  positioned: { single: OpResult; batch10: OpResult };
}

async function sends(env: BenchEnv): Promise<{ single: OpResult; batch10: OpResult }> {
  await env.api('PUT', '/queues/q', { lockDuration: 'PT5M' }, 201);
  let n = 0;
  const one = () => env.api('POST', '/queues/q/messages', { body: jsonEvent(n++) }, 201);
  await one(); // warm: the entity read, its use, the partition's mark
  const single = await measureOp(env, { reps: REPS }, async () => void (await one()));
  const batch10 = await measureOp(env, { reps: REPS, perMessages: 10 }, async () => {
    await env.api('POST', '/queues/q/messages/batch', { messages: Array.from({ length: 10 }, () => ({ body: jsonEvent(n++) })) }, 201);
  });
  return { single, batch10 };
}

export async function runPositionedSend(endpoint: string, rootKey: string): Promise<PositionedSendResult> {
  const today = await createEnv({ name: 'send-today', endpoint, tableName: 'bench_send_today', rootKey, newEntityLayout: 'index' });
  const positioned = await createEnv({ name: 'send-positioned', endpoint, tableName: 'bench_send_positioned', rootKey, newEntityLayout: 'positions' });
  try {
    return { today: await sends(today), positioned: await sends(positioned) };
  } finally {
    today.destroy();
    positioned.destroy();
  }
}
