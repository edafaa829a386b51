/**
 * Handler time per API call, for the Lambda duration in the dollars: the calls of a message's
 * life (one at a time, and in batches of 10), many times over on the runtime's table, the first
 * rounds only warming the code paths, as a busy Lambda's are. Medians, milliseconds. The full
 * bench runs it on a fresh DynamoDB Local: a worn one's calls wait many times longer.
 */
import { median, type BenchEnv } from '../harness.js';
import { complete, completeBatch, receiveExactly, sendBatch, sendOne } from './operations.js';

export interface Durations {
  reps: number;
  send: number;
  receive: number;
  complete: number;
  sendBatch10: number;
  receive10: number;
  completeBatch10: number;
}

export async function runDurations(env: BenchEnv, reps = 20): Promise<Durations> {
  const q = 'durations';
  await env.api('PUT', `/queues/${q}`, { lockDuration: 'PT5M' }, 201);
  const ms: Record<Exclude<keyof Durations, 'reps'>, number[]> = { send: [], receive: [], complete: [], sendBatch10: [], receive10: [], completeBatch10: [] };
  for (let rep = 0; rep < reps + 3; rep++) {
    const warm = rep < 3; // the first rounds only warm the code paths
    const s = await sendOne(env, q);
    const [m] = await receiveExactly(env, q, 1);
    const c = await complete(env, q, m!);
    const t0 = performance.now();
    await sendBatch(env, q, 10);
    const t1 = performance.now();
    const got = await receiveExactly(env, q, 10);
    const t2 = performance.now();
    await completeBatch(env, q, got);
    const t3 = performance.now();
    if (warm) continue;
    ms.send.push(s.ms);
    ms.complete.push(c.ms);
    ms.sendBatch10.push(t1 - t0);
    ms.receive10.push(t2 - t1);
    ms.completeBatch10.push(t3 - t2);
  }
  // A single receive's own time (receiveExactly hides the reply).
  for (let rep = 0; rep < reps; rep++) {
    await sendOne(env, q);
    const r = await env.api('POST', `/queues/${q}/messages/receive`, { maxMessages: 1 }, 200);
    ms.receive.push(r.ms);
    await complete(env, q, r.body.messages[0]);
  }
  return {
    reps,
    send: median(ms.send),
    receive: median(ms.receive),
    complete: median(ms.complete),
    sendBatch10: median(ms.sendBatch10),
    receive10: median(ms.receive10),
    completeBatch10: median(ms.completeBatch10),
  };
}
