/**
 * Competing consumers (R1, R2, R4, R9, S4): eight receivers drain 1,000 messages under
 * peek-lock at the same time; every message is handed out and completed exactly once.
 * The clock does not move during the run, so no lock runs out and nothing is redelivered.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'qconc'));
});

const MESSAGES = 1000;
const RECEIVERS = 8;

interface Delivery {
  receiver: number;
  sequenceNumber: string;
  messageId: string;
  lockToken: string;
}

describe('concurrent receivers', () => {
  it(
    'R1/R2/R9/S4: 8 peek-lock receivers drain 1,000 messages; each is delivered and completed exactly once, none is missing',
    { timeout: 300_000 },
    async () => {
      // prepare: 1,000 messages in 10 batch sends of 100
      expect((await api('PUT', '/queues/busy', { lockDuration: 'PT5M' })).status).toBe(201);
      const sent = new Map<string, string>(); // sequenceNumber -> messageId
      for (let b = 0; b < MESSAGES / 100; b++) {
        const messages = Array.from({ length: 100 }, (_, i) => ({ body: { n: b * 100 + i }, messageId: `m-${b * 100 + i}` }));
        const reply = await api('POST', '/queues/busy/messages/batch', { messages });
        expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(201);
        for (const r of reply.body.results as { messageId: string; sequenceNumber: string }[]) sent.set(r.sequenceNumber, r.messageId);
      }
      expect(sent.size).toBe(MESSAGES);
      const startedAt = clock.now();

      // act: 8 receivers, each receiving up to 10 at a time and completing them in one batch call
      const delivered: Delivery[] = [];
      const completed: Delivery[] = [];
      const failures: string[] = [];
      const receiver = async (id: number) => {
        let empty = 0;
        while (empty < 3) {
          const got = await api('POST', '/queues/busy/messages/receive', { mode: 'peekLock', maxMessages: 10 });
          if (got.status !== 200) {
            failures.push(`receiver ${id} receive: ${got.status} ${JSON.stringify(got.body)}`);
            empty++;
            continue;
          }
          const messages = got.body.messages as { sequenceNumber: string; messageId: string; lockToken: string }[];
          if (messages.length === 0) {
            empty++;
            continue;
          }
          empty = 0;
          const batch = messages.map((m) => ({ receiver: id, sequenceNumber: m.sequenceNumber, messageId: m.messageId, lockToken: m.lockToken }));
          delivered.push(...batch);
          const done = await api('POST', '/queues/busy/messages/complete', { lockTokens: batch.map((m) => m.lockToken) });
          if (done.status !== 200) {
            failures.push(`receiver ${id} complete: ${done.status} ${JSON.stringify(done.body)}`);
            continue;
          }
          const results = done.body.results as { lockToken: string; ok?: true; error?: { code: string } }[];
          for (const [i, r] of results.entries()) {
            if (r.ok && r.lockToken === batch[i]!.lockToken) completed.push(batch[i]!);
            else failures.push(`receiver ${id} token ${r.lockToken}: ${JSON.stringify(r)}`);
          }
        }
      };
      await Promise.all(Array.from({ length: RECEIVERS }, (_, i) => receiver(i)));
      const finalLock = await api('POST', '/queues/busy/messages/receive', { mode: 'peekLock', maxMessages: 100 });
      const finalDelete = await api('POST', '/queues/busy/messages/receive', { mode: 'receiveAndDelete', maxMessages: 100 });
      const finalPeek = await api('GET', '/queues/busy/messages?maxMessages=100');

      // assess
      expect(clock.now()).toBe(startedAt); // no lock could have run out
      expect(failures).toEqual([]);
      const deliveredSeqs = delivered.map((d) => d.sequenceNumber);
      const duplicates = deliveredSeqs.filter((s, i) => deliveredSeqs.indexOf(s) !== i);
      expect(duplicates).toEqual([]);
      expect(completed).toHaveLength(MESSAGES);
      expect(new Set(completed.map((c) => c.sequenceNumber))).toEqual(new Set(sent.keys()));
      for (const c of completed) expect(c.messageId).toBe(sent.get(c.sequenceNumber));
      expect(new Set(delivered.map((d) => d.receiver)).size).toBeGreaterThan(1); // the work was shared
      expect(finalLock.status).toBe(200);
      expect(finalLock.body.messages).toEqual([]);
      expect(finalDelete.body.messages).toEqual([]);
      expect(finalPeek.body.messages).toEqual([]);
    },
  );
});
