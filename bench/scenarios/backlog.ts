/**
 * Scenario 2: the same peek-lock receive, with 1,000 locked and 1,000 scheduled messages
 * sent before the available ones, against the same receive on a queue with nothing ahead.
 * Its cost must not grow with them (the target, ≤ 1.2x, met on today's layout, where locked
 * and scheduled messages sort past now in the `ready` index). Measured on the product's
 * default layout (ticketed positions: a receive takes its head by ticket, past the locked
 * positions, and scheduled messages wait off the positions), since that is what a default
 * deploy's queues run; the receive without a backlog is measured here, on the same layout,
 * so the ratio compares like with like.
 */
import { createEnv, type OpResult } from '../harness.js';
import { measureOp } from './measure.js';
import { receive, sendBatch } from './operations.js';

export interface BacklogResult {
  locked: number;
  scheduled: number;
  ops: { receiveWithBacklog: OpResult; receive10WithBacklog: OpResult; receiveWithoutBacklog: OpResult; receive10WithoutBacklog: OpResult };
  setupMs: number;
}

export async function runBacklog(endpoint: string, rootKey: string, counts = { locked: 1000, scheduled: 1000 }): Promise<BacklogResult> {
  const env = await createEnv({ name: 'backlog', endpoint, tableName: 'bench_backlog', rootKey });
  try {
    // The same receives with nothing ahead, first, on a queue of their own.
    const plain = 'plain';
    await env.api('PUT', `/queues/${plain}`, { lockDuration: 'PT5M' }, 201);
    await sendBatch(env, plain, 40);
    if ((await receive(env, plain, 1)).length !== 1) throw new Error('backlog: no message to warm with');
    const receiveWithoutBacklog = await measureOp(env, { reps: 5, note: 'nothing locked or scheduled ahead' }, async () => {
      if ((await receive(env, plain, 1)).length !== 1) throw new Error('backlog: no available message without a backlog');
    });
    const receive10WithoutBacklog = await measureOp(env, { reps: 3, perMessages: 10, note: 'nothing locked or scheduled ahead' }, async () => {
      if ((await receive(env, plain, 10)).length !== 10) throw new Error('backlog: fewer than 10 available without a backlog');
    });
    const started = performance.now();
    const q = 'backlog';
    await env.api('PUT', `/queues/${q}`, { lockDuration: 'PT5M' }, 201);
    // 1,000 sent and locked.
    for (let n = 0; n < counts.locked; n += 100) await sendBatch(env, q, Math.min(100, counts.locked - n));
    let locked = 0;
    while (locked < counts.locked) {
      const got = await receive(env, q, Math.min(100, counts.locked - locked));
      if (got.length === 0) throw new Error(`backlog: only ${locked} messages could be locked`);
      locked += got.length;
    }
    // 1,000 scheduled an hour ahead.
    const at = new Date(env.clock.now() + 3_600_000).toISOString();
    for (let n = 0; n < counts.scheduled; n += 100) {
      await sendBatch(env, q, Math.min(100, counts.scheduled - n), undefined, { scheduledEnqueueTime: at });
    }
    // Then the available ones, and one receive to warm with, as on the plain queue: a process's
    // first receive of a batch sent as one request reads the request whole (S1), its later ones
    // only what they take (store/tickets.ts `wholeRequests`), on both queues alike.
    await sendBatch(env, q, 40);
    if ((await receive(env, q, 1)).length !== 1) throw new Error('backlog: no message to warm with');
    const setupMs = performance.now() - started;

    const receiveWithBacklog = await measureOp(env, { reps: 5, note: `${counts.locked} locked + ${counts.scheduled} scheduled ahead` }, async () => {
      if ((await receive(env, q, 1)).length !== 1) throw new Error('backlog: no available message');
    });
    const receive10WithBacklog = await measureOp(env, { reps: 3, perMessages: 10 }, async () => {
      if ((await receive(env, q, 10)).length !== 10) throw new Error('backlog: fewer than 10 available');
    });
    return { locked, scheduled: counts.scheduled, ops: { receiveWithBacklog, receive10WithBacklog, receiveWithoutBacklog, receive10WithoutBacklog }, setupMs };
  } finally {
    env.destroy();
  }
}
