/**
 * Scenario 1: the capacity of each broker operation on a 1 KB message, through the API
 * handler with a metered client. Each operation is measured a few times on a warm function
 * (auth rule cached, entity used within the last minute), as it runs in steady state; the
 * once-a-minute `accessedAt` touch and the expiry path are measured on their own.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { entityKey, messageKey, positionedPk, positionKey } from '../../lib/store/keys.js';
import { isPositionedSeq, partitionOfSeq, positionOfSeq } from '../../lib/store/sequence.js';
import { bodyOfBytes, createEnv, KB_BODY, offThePositionedPass, type BenchEnv, type OpResult } from '../harness.js';
import { itemBytes, measureOp } from './measure.js';

export interface ReceivedMessage {
  sequenceNumber: string;
  lockToken: string;
}

const REPS = 3;

export const sendOne = (env: BenchEnv, queue: string, body = KB_BODY) => env.api('POST', `/queues/${queue}/messages`, { body }, 201);
export const sendBatch = (env: BenchEnv, queue: string, n: number, body = KB_BODY, extra: Record<string, unknown> = {}) =>
  env.api('POST', `/queues/${queue}/messages/batch`, { messages: Array.from({ length: n }, () => ({ body, ...extra })) }, 201);
export async function receive(env: BenchEnv, queue: string, maxMessages: number, mode: 'peekLock' | 'receiveAndDelete' = 'peekLock', subqueue = '') {
  const reply = await env.api('POST', `/queues/${queue}${subqueue}/messages/receive`, { mode, maxMessages }, 200);
  return reply.body.messages as ReceivedMessage[];
}
export async function receiveExactly(env: BenchEnv, queue: string, n: number): Promise<ReceivedMessage[]> {
  const got = await receive(env, queue, n);
  if (got.length !== n) throw new Error(`${env.name}: expected ${n} messages from ${queue}, got ${got.length}`);
  return got;
}
export const complete = (env: BenchEnv, queue: string, m: ReceivedMessage) =>
  env.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken }, 204);
export async function completeBatch(env: BenchEnv, queue: string, ms: ReceivedMessage[]) {
  const reply = await env.api('POST', `/queues/${queue}/messages/complete`, { lockTokens: ms.map((m) => m.lockToken) }, 200);
  const failed = (reply.body.results as { ok?: boolean }[]).filter((r) => !r.ok);
  if (failed.length) throw new Error(`${env.name}: batch complete failed for ${failed.length} tokens`);
}

/** The stored item of a message of `queue` (read with the meter's client, outside any window). */
export async function messageItem(env: BenchEnv, queue: string, seq: string): Promise<Record<string, unknown>> {
  const entity = await env.deps.db.send(new GetCommand({ TableName: env.tableName, Key: entityKey('queue', queue), ConsistentRead: true }));
  const eid = entity.Item?.eid as string;
  // A positioned queue's message (the default's ticketed layout) sits at its position; today's at its sequence number.
  const n = BigInt(seq);
  const key = isPositionedSeq(n)
    ? positionKey(positionedPk(eid, 'active', partitionOfSeq(n)), positionOfSeq(n))
    : messageKey(eid, 'active', partitionOfSeq(n), seq);
  const got = await env.deps.db.send(new GetCommand({ TableName: env.tableName, Key: key, ConsistentRead: true }));
  if (!got.Item) throw new Error(`message ${seq} of ${queue} not found`);
  return got.Item;
}

export interface OperationsResult {
  ops: Record<string, OpResult>;
  /** Stored size of a 1 KB message's item, bytes (approximate, DynamoDB's sizing). */
  itemBytes: { sent: number; locked: number };
  lifecycleByBodySize: { bodyBytes: number; itemBytes: number; writeUnits: number; readUnits: number }[];
  /** Scenarios that could not be measured, and why. */
  failures: { scenario: string; error: string }[];
}

export async function runOperations(endpoint: string, rootKey: string): Promise<OperationsResult> {
  // Today's layout, named: these rows are its operations one by one (the `ready` index, lock
  // reminders, the expiry path of `msg/` items, whose stored sizes are read), the per-operation
  // figures the docs explain it by. A default deploy's queues are ticketed: their lives are
  // the message-life figures (scenarios/lifecycle.ts).
  const env = await createEnv({ name: 'operations', endpoint, tableName: 'bench_ops', rootKey, newEntityLayout: 'index' });
  const expiryEnv = await createEnv({ name: 'expiry', endpoint, tableName: 'bench_expiry', rootKey, newEntityLayout: 'index' });
  try {
    const ops: Record<string, OpResult> = {};
    const q = 'ops';
    // Also warms the function: the root rule is read once and cached, as on a warm Lambda.
    await env.api('PUT', `/queues/${q}`, { lockDuration: 'PT5M' }, 201);
    await env.api('PUT', '/queues/life', { lockDuration: 'PT5M' }, 201);
    await env.api('PUT', '/queues/empty', {}, 201);

    ops.send = await measureOp(env, { reps: REPS }, async () => void (await sendOne(env, q)));
    ops.sendBatch10 = await measureOp(env, { reps: REPS, perMessages: 10 }, async () => void (await sendBatch(env, q, 10)));
    // 33 messages are waiting now.
    const single: ReceivedMessage[] = [];
    ops.receive = await measureOp(env, { reps: REPS }, async () => void single.push(...(await receiveExactly(env, q, 1))));
    ops.complete = await measureOp(env, { reps: REPS }, async (i) => void (await complete(env, q, single[i]!)));
    const tens: ReceivedMessage[][] = [];
    ops.receive10 = await measureOp(
      env,
      {
        reps: REPS,
        perMessages: 10,
        note: 'writes the batch lock reminder; a receive after the locks lapse reads and deletes it (lifecycleBatch10 carries both)',
      },
      async () => void tens.push(await receiveExactly(env, q, 10)),
    );
    ops.completeBatch10 = await measureOp(env, { reps: REPS, perMessages: 10 }, async (i) => void (await completeBatch(env, q, tens[i]!)));

    await sendBatch(env, q, 30);
    ops.receiveAndDelete = await measureOp(env, { reps: REPS }, async () => {
      const got = await receive(env, q, 1, 'receiveAndDelete');
      if (got.length !== 1) throw new Error('receiveAndDelete got nothing');
    });
    const held = await receiveExactly(env, q, REPS);
    ops.renewLock = await measureOp(env, { reps: REPS }, async (i) => {
      const m = held[i]!;
      await env.api('POST', `/queues/${q}/messages/${m.sequenceNumber}/renew-lock`, { lockToken: m.lockToken }, 200);
    });
    ops.abandon = await measureOp(env, { reps: REPS }, async (i) => {
      const m = held[i]!;
      await env.api('POST', `/queues/${q}/messages/${m.sequenceNumber}/abandon`, { lockToken: m.lockToken }, 204);
    });
    let toDeadLetter: ReceivedMessage | undefined;
    ops.deadLetter = await measureOp(env, { reps: REPS, prepare: async () => void ([toDeadLetter] = await receiveExactly(env, q, 1)) }, async () => {
      const m = toDeadLetter!;
      await env.api('POST', `/queues/${q}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken, deadLetterReason: 'bench' }, 204);
    });
    // One dead-lettered message at a time goes back.
    ops.resubmit = await measureOp(
      env,
      {
        reps: REPS,
        prepare: async (rep) => {
          if (rep === 0) {
            // The deadLetter scenario left REPS messages in the subqueue: bring all but one back first.
            const r = await env.api('POST', `/queues/${q}/$deadletterqueue/resubmit`, { maxMessages: REPS - 1 }, 200);
            if (r.body.resubmitted !== REPS - 1) throw new Error('resubmit preparation failed');
            return;
          }
          const [m] = await receiveExactly(env, q, 1);
          await env.api('POST', `/queues/${q}/messages/${m!.sequenceNumber}/deadletter`, { lockToken: m!.lockToken }, 204);
        },
        note: 'one message in the dead-letter subqueue, POST {dlq}/resubmit {}',
      },
      async () => {
        const r = await env.api('POST', `/queues/${q}/$deadletterqueue/resubmit`, {}, 200);
        if (r.body.resubmitted !== 1) throw new Error(`resubmit moved ${r.body.resubmitted}`);
      },
    );
    ops.receiveEmpty = await measureOp(env, { reps: REPS, note: 'peek-lock receive of 1 on an empty queue' }, async () => {
      if ((await receive(env, 'empty', 1)).length !== 0) throw new Error('empty queue is not empty');
    });

    // The life of one message, and of ten in batches, on a queue holding nothing else.
    ops.lifecycle = await measureOp(env, { reps: REPS, requestsPerRep: 3, note: 'send + peek-lock receive + complete, one message' }, async () => {
      await sendOne(env, 'life');
      const [m] = await receiveExactly(env, 'life', 1);
      await complete(env, 'life', m!);
    });
    // A batch's receive leaves a lock reminder that the next receive after its lapse deals
    // with (5 s locks, the clock moved past them before each life): one warm life leaves the
    // first, so each measured life pays for one reminder's write and one's removal.
    await env.api('PUT', '/queues/lifebatch', { lockDuration: 'PT5S' }, 201);
    const batchLife = async () => {
      await sendBatch(env, 'lifebatch', 10);
      const got = await receiveExactly(env, 'lifebatch', 10);
      await completeBatch(env, 'lifebatch', got);
    };
    await batchLife();
    ops.lifecycleBatch10 = await measureOp(
      env,
      {
        reps: REPS,
        perMessages: 10,
        requestsPerRep: 3,
        prepare: async () => void env.clock.advance(5_001),
        note: 'batch send of 10 + receive of 10 (which removes the lapsed lock reminder of the life before) + batch complete of 10, per message',
      },
      batchLife,
    );

    // Item sizes: the 1 KB body is not the whole item.
    const sent = await sendOne(env, 'life');
    const sentItem = await messageItem(env, 'life', sent.body.sequenceNumber as string);
    const [lockedMsg] = await receiveExactly(env, 'life', 1);
    const lockedItem = await messageItem(env, 'life', lockedMsg!.sequenceNumber);
    await complete(env, 'life', lockedMsg!);

    const lifecycleByBodySize: OperationsResult['lifecycleByBodySize'] = [];
    for (const bytes of [128, 512, 700, 1024, 2048]) {
      const body = bodyOfBytes(bytes);
      const r = await measureOp(env, { reps: 2, requestsPerRep: 3 }, async () => {
        await sendOne(env, 'life', body);
        const [m] = await receiveExactly(env, 'life', 1);
        await complete(env, 'life', m!);
      });
      // Sized outside the meter, in its locked form (the largest it gets).
      await sendOne(env, 'life', body);
      const [m] = await receiveExactly(env, 'life', 1);
      const size = itemBytes(await messageItem(env, 'life', m!.sequenceNumber));
      await complete(env, 'life', m!);
      lifecycleByBodySize.push({ bodyBytes: bytes, itemBytes: size, writeUnits: r.tally.writeUnits, readUnits: r.tally.readUnits });
    }

    // Once a minute per entity, the first use writes `accessedAt` (I2).
    ops.sendWithTouch = await measureOp(
      env,
      { reps: 2, prepare: async () => void env.clock.advance(61_000), note: 'a send more than a minute after the entity was last used: the accessedAt touch' },
      async () => void (await sendOne(env, q)),
    );

    // Expiry to the dead-letter subqueue: by the sweeper (the timely path), and by a receive
    // that meets the expired message first.
    const failures: OperationsResult['failures'] = [];
    await expiryEnv.api('PUT', '/queues/exp', { deadLetteringOnMessageExpiration: true, lockDuration: 'PT5M' }, 201);
    await expiryEnv.api('PUT', '/queues/exprecv', { deadLetteringOnMessageExpiration: true, lockDuration: 'PT5M' }, 201);
    // One message with a minute to live, then the clock past its expiry.
    const sendExpired = async (queue: string) => {
      await expiryEnv.api('POST', `/queues/${queue}/messages`, { body: KB_BODY, timeToLive: 'PT1M' }, 201);
      expiryEnv.clock.advance(120_000);
      offThePositionedPass(expiryEnv.clock);
    };
    try {
      ops.expiryToDeadLetter = await measureOp(
        expiryEnv,
        {
          reps: REPS,
          prepare: () => sendExpired('exp'),
          note: 'queue with deadLetteringOnMessageExpiration; clock moved past expiry; one sweeper run per expired message',
        },
        async () => {
          // An expiry the entity dead-letters counts as `expired` in the sweeper's report.
          const report = (await expiryEnv.sweeper()) as { expired?: number; deadLettered?: number };
          const moved = (report.expired ?? 0) + (report.deadLettered ?? 0);
          if (moved !== 1) throw new Error(`the sweeper moved ${moved} messages, expected 1: ${JSON.stringify(report)}`);
        },
      );
      const swept = await receive(expiryEnv, 'exp', 10, 'receiveAndDelete', '/$deadletterqueue');
      if (swept.length !== REPS)
        failures.push({ scenario: 'expiryToDeadLetter', error: `expected ${REPS} messages in the dead-letter subqueue, found ${swept.length}` });
    } catch (e) {
      failures.push({ scenario: 'expiryToDeadLetter', error: `${(e as Error).name}: ${(e as Error).message}` });
    }
    ops.expiryOnReceive = await measureOp(
      expiryEnv,
      {
        reps: REPS,
        prepare: async () => {
          await sendExpired('exprecv');
          await expiryEnv.api('GET', '/queues/exprecv/messages', undefined, 200); // the once-a-minute touch, outside the figure
        },
        note: 'a peek-lock receive finds only an expired message: it moves it to the dead-letter subqueue and returns nothing',
      },
      async () => {
        if ((await receive(expiryEnv, 'exprecv', 1)).length !== 0) throw new Error('an expired message was delivered');
      },
    );
    const dead = await receive(expiryEnv, 'exprecv', 10, 'receiveAndDelete', '/$deadletterqueue');
    if (dead.length !== REPS) failures.push({ scenario: 'expiryOnReceive', error: `expected ${REPS} dead-lettered messages, found ${dead.length}` });
    ops.sendWithTtl = await measureOp(expiryEnv, { reps: REPS, note: 'a send with timeToLive: also on the sweeper agenda (due index)' }, async () => {
      await expiryEnv.api('POST', '/queues/exprecv/messages', { body: KB_BODY, timeToLive: 'PT1H' }, 201);
    });

    return { ops, itemBytes: { sent: itemBytes(sentItem), locked: itemBytes(lockedItem) }, lifecycleByBodySize, failures };
  } finally {
    env.destroy();
    expiryEnv.destroy();
  }
}
