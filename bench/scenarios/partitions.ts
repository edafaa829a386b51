/**
 * Scenario 6: a partitioned queue spreads its messages over 16 partition keys. How evenly do
 * 10,000 sends land (counted from the metered client's PutItem keys), and what does a receive
 * cost when the queue is full, holds a single message, or is empty?
 *
 * On the product's default layout (ticketed positions), what a default deploy's partitioned
 * queues run: the empty receive's target (≤ 1 RU on 16 partitions) was met on today's layout
 * and must hold on the default.
 */
import { MAX_PARTITIONS } from '../../lib/store/sequence.js';
import { createEnv, type OpResult } from '../harness.js';
import { measureOp } from './measure.js';
import { complete, receive, sendBatch, sendOne, type ReceivedMessage } from './operations.js';

export interface PartitionsResult {
  partitions: number;
  sends: number;
  writesPerKey: number[];
  busiestShare: number;
  fairShare: number;
  /** busiest / fair */
  spread: number;
  sendMs: number;
  ops: { partitionedReceive: OpResult; partitionedReceiveOne: OpResult; partitionedReceiveEmpty: OpResult };
}

export async function runPartitions(endpoint: string, rootKey: string, sends = 10_000): Promise<PartitionsResult> {
  const env = await createEnv({ name: 'partitions', endpoint, tableName: 'bench_partitions', rootKey });
  try {
    await env.api('PUT', '/queues/p', { enablePartitioning: true, lockDuration: 'PT5M' }, 201);
    await env.api('PUT', '/queues/p1', { enablePartitioning: true, lockDuration: 'PT5M' }, 201);
    await env.api('PUT', '/queues/p0', { enablePartitioning: true }, 201);

    // 10,000 sends in batches of 100 (each message picks its partition on its own), two batches at a time.
    const started = performance.now();
    env.meter.writtenKeys.clear();
    env.meter.trackWrites = true;
    const batches = Math.ceil(sends / 100);
    let next = 0;
    const worker = async () => {
      for (let b = next++; b < batches; b = next++) await sendBatch(env, 'p', Math.min(100, sends - b * 100), 'x'.repeat(1022));
    };
    await Promise.all([worker(), worker()]);
    env.meter.trackWrites = false;
    const sendMs = performance.now() - started;
    // The messages' own partition keys, of either layout (`msg/{eid}/a/{p}`, `pos/{eid}/a/{p}`).
    const perKey = [...env.meter.writtenKeys].filter(([k]) => /^(msg|pos)\/[^/]+\/a\//.test(k)).map(([, n]) => n);
    while (perKey.length < MAX_PARTITIONS) perKey.push(0);
    perKey.sort((a, b) => b - a);
    const total = perKey.reduce((a, b) => a + b, 0);
    const busiestShare = (perKey[0] ?? 0) / total;
    const fairShare = 1 / MAX_PARTITIONS;

    // A first receive on each queue, unmeasured: the sends took over a minute, so the
    // once-a-minute accessedAt touch would otherwise land in the first measured receive.
    for (const name of ['p', 'p0', 'p1']) await receive(env, name, 1, 'peekLock').then((got) => Promise.all(got.map((m) => complete(env, name, m))));
    const partitionedReceive = await measureOp(env, { reps: 5, note: `${sends} messages over ${MAX_PARTITIONS} partitions` }, async () => {
      if ((await receive(env, 'p', 1)).length !== 1) throw new Error('partitioned receive got nothing');
    });
    const stash: ReceivedMessage[] = [];
    // A single message somewhere in 16 partitions: the receive walks partitions from a random one.
    const partitionedReceiveOne = await measureOp(
      env,
      { reps: 8, prepare: async () => void (await sendOne(env, 'p1')), note: 'one message in the whole queue (average over random start partitions)' },
      async () => {
        const [m] = await receive(env, 'p1', 1);
        if (!m) throw new Error('p1: the message was not found');
        stash.push(m);
      },
    );
    for (const m of stash.splice(0)) await complete(env, 'p1', m);
    const partitionedReceiveEmpty = await measureOp(env, { reps: 3, note: 'empty partitioned queue: one Query per partition' }, async () => {
      if ((await receive(env, 'p0', 1)).length !== 0) throw new Error('p0 is not empty');
    });
    return {
      partitions: MAX_PARTITIONS,
      sends: total,
      writesPerKey: perKey,
      busiestShare,
      fairShare,
      spread: busiestShare / fairShare,
      sendMs,
      ops: { partitionedReceive, partitionedReceiveOne, partitionedReceiveEmpty },
    };
  } finally {
    env.destroy();
  }
}
