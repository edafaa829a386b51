/**
 * D7: resubmit (redrive) dead-lettered messages, and purge, through the API handler.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { brokerContext } from '../../lib/broker/context.js';
import { buildMessageItem } from '../../lib/broker/send.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { ManualClock, testDeps } from '../support/table.js';
import { queueHelpers, type Msg } from '../support/queue-helpers.js';
import { refusingWrites, seededRandom } from '../support/dynamo-faults.js';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { messageItems, queueItem } from '../support/stream.js';
import { messageOfStored } from '../../lib/store/message-layout.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
/** Creates queues in today's layout: the test that counts a queue's msg/ items after resubmit. */
let indexApi: ReturnType<typeof apiClient>;

beforeAll(async () => {
  deps = await testDeps(clock, 'dlq-resubmit');
  api = apiClient(deps);
  indexApi = apiClient({ ...deps, ...indexLayout });
});

const { createQueue, receive, peek, dlq } = queueHelpers(() => api);
const { createQueue: createIndexQueue } = queueHelpers(() => indexApi);

/** Sends `n` messages (ids `<queue>-<i>`) and dead-letters them all. */
async function deadLettered(queue: string, n: number): Promise<void> {
  await createQueue(queue);
  for (let start = 0; start < n; start += 100) {
    const size = Math.min(100, n - start);
    const batch = await api('POST', `/queues/${queue}/messages/batch`, {
      messages: Array.from({ length: size }, (_, k) => ({
        body: { i: start + k },
        messageId: `${queue}-${start + k}`,
        subject: 'resubmit-me',
        applicationProperties: { i: start + k },
      })),
    });
    expect(batch.status).toBe(201);
    const locked = await receive(`/queues/${queue}`, { maxMessages: size });
    expect(locked).toHaveLength(size);
    const results = await Promise.all(
      locked.map((m) =>
        api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/deadletter`, {
          lockToken: m.lockToken,
          deadLetterReason: 'Broken',
          deadLetterErrorDescription: 'try again later',
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(results.map(() => 204));
  }
}

/**
 * Puts `n` dead-lettered messages straight into the queue's DLQ, built by the broker's own
 * item builder (as a dead-letter move builds them). Dead-lettering 250 messages through the
 * API costs about ten seconds on DynamoDB Local; this costs ten BatchWriteItem calls. The queue
 * is today's layout: its test counts the resubmitted messages' msg/ items.
 */
async function seedDeadLetters(queue: string, n: number): Promise<void> {
  await createIndexQueue(queue);
  const entity = (await queueItem(deps, queue))!;
  const ctx = brokerContext(deps);
  const items = Array.from({ length: n }, (_, i) =>
    buildMessageItem(
      ctx,
      entity,
      { body: { i }, messageId: `${queue}-${i}`, applicationProperties: { i } },
      {
        subqueue: 'deadletter',
        deadLetter: { reason: 'Broken', description: 'seeded', source: `queues/${queue}`, enqueuedSequenceNumber: String(1000 + i) },
      },
    ),
  );
  for (let i = 0; i < items.length; i += 25) {
    let request: Record<string, unknown[]> | undefined = { [deps.tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) };
    while (request && Object.keys(request).length) {
      const out = await deps.db.send(new BatchWriteCommand({ RequestItems: request as never }));
      request = out.UnprocessedItems as typeof request;
    }
  }
}

describe('D7: resubmit dead-lettered messages', () => {
  it('D7: resubmit all moves every DLQ message back to the queue as a new message with the dead-letter fields cleared', async () => {
    // prepare
    await deadLettered('d7-all', 3);
    const before = await peek(dlq('d7-all'));
    const originalSeqs = before.map((m) => m.enqueuedSequenceNumber);
    // act
    const res = await api('POST', `${dlq('d7-all')}/resubmit`, {});
    // assess
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resubmitted: 3 });
    expect(await peek(dlq('d7-all'))).toEqual([]);
    const got = await receive('/queues/d7-all', { maxMessages: 10 });
    expect(got.map((m) => m.messageId).sort()).toEqual(['d7-all-0', 'd7-all-1', 'd7-all-2']);
    for (const m of got) {
      expect(m).toMatchObject({ subject: 'resubmit-me', deliveryCount: 1, state: 'Active' });
      expect(m.body).toEqual({ i: m.applicationProperties.i });
      expect(m).not.toHaveProperty('deadLetterReason');
      expect(m).not.toHaveProperty('deadLetterErrorDescription');
      expect(m).not.toHaveProperty('deadLetterSource');
      expect(m).not.toHaveProperty('enqueuedSequenceNumber');
      expect(originalSeqs).not.toContain(m.sequenceNumber);
      expect(before.map((b) => b.sequenceNumber)).not.toContain(m.sequenceNumber);
    }
    const stored = await messageItems(deps, 'd7-all', 'active');
    for (const item of stored) {
      expect(item.deadLetterReason).toBeUndefined();
      expect(item.deadLetterErrorDescription).toBeUndefined();
      expect(item.deadLetterSource).toBeUndefined();
      expect(item.enqueuedSequenceNumber).toBeUndefined();
      expect(messageOfStored(item).subqueue).toBe('active');
    }
  });

  it('D7: resubmit chosen sequence numbers moves only those', async () => {
    // prepare
    await deadLettered('d7-chosen', 4);
    const dead = await peek(dlq('d7-chosen'));
    const chosen = [dead[1], dead[3]];
    // act
    const res = await api('POST', `${dlq('d7-chosen')}/resubmit`, { sequenceNumbers: chosen.map((m) => m.sequenceNumber) });
    // assess
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resubmitted: 2 });
    expect((await peek(dlq('d7-chosen'))).map((m) => m.messageId)).toEqual([dead[0].messageId, dead[2].messageId]);
    expect((await peek('/queues/d7-chosen')).map((m) => m.messageId).sort()).toEqual(chosen.map((m) => m.messageId).sort());
  });

  it('D7: resubmit with `to: "queues/other"` moves the messages to the other queue, none back to the source', async () => {
    // prepare
    await deadLettered('d7-source', 3);
    await createQueue('d7-other');
    // act
    const res = await api('POST', `${dlq('d7-source')}/resubmit`, { to: 'queues/d7-other' });
    // assess
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resubmitted: 3 });
    expect(await peek(dlq('d7-source'))).toEqual([]);
    expect(await peek('/queues/d7-source')).toEqual([]);
    const arrived = await receive('/queues/d7-other', { mode: 'receiveAndDelete', maxMessages: 10 });
    expect(arrived.map((m) => m.messageId).sort()).toEqual(['d7-source-0', 'd7-source-1', 'd7-source-2']);
    expect(arrived.every((m) => !('deadLetterReason' in m))).toBe(true);
  });

  // 250 dead letters seeded and moved (about 1,500 writes) take 2-7 s alone, but over 30 s in a
  // fresh clone's run when they meet the heaviest files on the shared emulator; the assertions are
  // the same at any speed.
  it('D7: resubmitting 250 messages with maxMessages 100 continues across calls: 100, 100, 50, then 0; each message once', { timeout: 120_000 }, async () => {
    // prepare
    await seedDeadLetters('d7-many', 250);
    expect(await messageItems(deps, 'd7-many', 'deadletter')).toHaveLength(250);
    // act
    const answers: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await api('POST', `${dlq('d7-many')}/resubmit`, { maxMessages: 100 });
      expect(res.status).toBe(200);
      answers.push(res.body.resubmitted);
    }
    // assess
    expect(answers).toEqual([100, 100, 50, 0]);
    expect(await messageItems(deps, 'd7-many', 'deadletter')).toEqual([]);
    const items = await messageItems(deps, 'd7-many', 'active');
    const ids = items.map((i) => i.messageId);
    expect(ids).toHaveLength(250);
    expect(new Set(ids).size).toBe(250);
  });

  it('D7: a dead letter an operator holds under lock is skipped, and the answer says some remain (remaining: true) until it is released', async () => {
    await deadLettered('d7-held', 3);
    const [held] = await receive(dlq('d7-held'));

    const first = await api('POST', `${dlq('d7-held')}/resubmit`, {});

    expect(first.status).toBe(200);
    expect(first.body).toEqual({ resubmitted: 2, remaining: true });
    expect((await peek(dlq('d7-held'))).map((m: Msg) => m.sequenceNumber)).toEqual([held.sequenceNumber]);
    expect((await api('POST', `${dlq('d7-held')}/messages/${held.sequenceNumber}/abandon`, { lockToken: held.lockToken })).status).toBe(204);
    const second = await api('POST', `${dlq('d7-held')}/resubmit`, {});
    expect(second.body).toEqual({ resubmitted: 1, remaining: false });
  });

  /** A seed whose refused writes hit the moves on every layout. */
  const SEED = 3;
  it.each(['index', 'tickets', 'positions'] as const)(
    'D7, S1: on the %s layout, resubmit while writes fail every attempt, called again until it answers: each dead letter back in the queue once',
    { timeout: 60_000 },
    async (layout) => {
      const queue = `d7-refused-${layout}`;
      const laid = apiClient({ ...deps, newEntityLayout: layout });
      expect((await laid('PUT', `/queues/${queue}`, { lockDuration: 'PT30S' })).status).toBe(201);
      const names = Array.from({ length: 12 }, (_, i) => `${queue}-${i}`);
      expect((await laid('POST', `/queues/${queue}/messages/batch`, { messages: names.map((messageId) => ({ body: messageId, messageId })) })).status).toBe(
        201,
      );
      for (const m of await receive(`/queues/${queue}`, { maxMessages: 12 }))
        expect((await api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken })).status).toBe(204);
      const refused = refusingWrites(deps.db, seededRandom(SEED));
      const operator = apiClient({ ...deps, db: refused.db });
      // The operator calls again after any failure, as a tool's retry does, until none remain.
      for (let call = 0; call < 40; call++) {
        const res = await operator('POST', `${dlq(queue)}/resubmit`, { maxMessages: 3 });
        expect([200, 500, 503], JSON.stringify(res.body)).toContain(res.status);
        if (res.status === 200 && res.body.resubmitted === 0 && !res.body.remaining) break;
      }
      expect(refused.log.lostOut + refused.log.failedOut).toBeGreaterThan(0);
      // A move that failed after its draw leaves a hole at the head until it ages (S2): the clock moves past it.
      const back: string[] = [];
      for (let empty = 0; empty < 3;) {
        const got = await receive(`/queues/${queue}`, { mode: 'receiveAndDelete', maxMessages: 100 });
        back.push(...got.map((m) => m.messageId as string));
        if (got.length > 0) empty = 0;
        else {
          empty++;
          clock.advance(HOLE_AFTER_MS + 1000);
        }
      }
      expect(back.sort()).toEqual([...names].sort());
      expect(await receive(dlq(queue), { mode: 'receiveAndDelete', maxMessages: 100 })).toEqual([]);
    },
  );

  it('D7: resubmit from an active queue path is refused (400)', async () => {
    await createQueue('d7-notdlq');
    const res = await api('POST', '/queues/d7-notdlq/resubmit', {});
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
});

describe('D7: purge', () => {
  it('D7: purge of the main queue answers {purged: n} and leaves it empty; the DLQ is untouched', async () => {
    // prepare
    await deadLettered('d7-purge', 2);
    const batch = await api('POST', '/queues/d7-purge/messages/batch', { messages: [1, 2, 3, 4, 5].map((n) => ({ body: n })) });
    expect(batch.status).toBe(201);
    // act
    const res = await api('DELETE', '/queues/d7-purge/messages');
    // assess
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ purged: 5 });
    expect(await peek('/queues/d7-purge')).toEqual([]);
    expect(await peek(dlq('d7-purge'))).toHaveLength(2);
  });

  it('D7: purge of the DLQ answers {purged: n} and leaves it empty; a second purge purges 0', async () => {
    await deadLettered('d7-purge-dlq', 3);
    const first = await api('DELETE', `${dlq('d7-purge-dlq')}/messages`);
    const second = await api('DELETE', `${dlq('d7-purge-dlq')}/messages`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ purged: 3 });
    expect(second.body).toEqual({ purged: 0 });
    expect(await peek(dlq('d7-purge-dlq'))).toEqual([]);
  });
});
