/**
 * A queue, the model, on each layout (R1, R3, R4, R6, R7, R10, S1, S6, D1, T6): random sends
 * (single and batch, some scheduled, some with a time to live), peek-lock receives of one or several,
 * receive-and-delete, completes, abandons, defers and receives by number, dead-letters,
 * renews, sweeper runs and clock moves, through the API on DynamoDB Local, while some writes land and lose
 * their answer, the SDK sending them again (test/support/dynamo-faults.ts `retried`). Whatever
 * the store's answers, every message sent ends exactly once (completed, handed out by a
 * receive-and-delete, or drained from the dead-letter subqueue), none is handed out while another delivery of it is held under a live
 * lock, and a settlement under a live lock never fails for a write of its own that landed.
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { createBroker } from '../support/broker.js';
import { losingAnswers, seededRandom } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const SECOND = 1000;
const LOCK_MS = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

interface Held {
  name: string;
  sequenceNumber: string;
  lockToken: string;
  until: number;
}

describe('a queue: the model', () => {
  it.each([
    ['index', 7],
    ['tickets', 7],
    ['positions', 7],
  ] as [NewEntityLayout, number][])(
    'R1, R3, R4, R6, R7, R10, S1, S6, D1: on the %s layout, random sends, receives, settlements of every kind, renews and clock moves end every message once while answers are lost (seed %i)',
    { timeout: 120_000 },
    async (layout, seed) => {
      const deps = { ...(await testDeps(clock, `qmodel${layout}`)), newEntityLayout: layout };
      const random = seededRandom(seed);
      const lossy = losingAnswers(deps.db, 0.15, seededRandom(seed + 1));
      const api = apiClient({ ...deps, db: lossy.db });
      const path = '/queues/q';
      expect((await api('PUT', path, { lockDuration: 'PT30S', maxDeliveryCount: 100, deadLetteringOnMessageExpiration: true })).status).toBe(201);
      // The sweeper's runs (expiry, T4/T6; scheduled activation, S6) share the lossy store.
      const sweeper = createBroker({ ...deps, db: lossy.db });
      const written = new Set<string>();
      const ended = new Map<string, number>();
      let held: Held[] = [];
      const live = (h: Held) => h.until > clock.now();
      const end = (name: string) => ended.set(name, (ended.get(name) ?? 0) + 1);
      const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;
      const handedOut = (m: Json) =>
        // R1: never handed out while another delivery of it is held under a live lock.
        expect(
          held.some((h) => h.name === m.body.n && live(h)),
          `${m.body.n} handed out twice`,
        ).toBe(false);

      /** Deferred messages by sequence number (R7), to be received by number. */
      const deferred = new Map<string, string>();
      const settle = async (h: Held, action: 'complete' | 'abandon' | 'defer' | 'deadletter') => {
        held = held.filter((x) => x !== h);
        const got = await api('POST', `${path}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
        // R4: under a live lock a settlement succeeds, whatever the store's answers.
        if (live(h)) expect(got.status, `${action} ${h.name}: ${JSON.stringify(got.body)}`).toBe(204);
        else expect([204, 410]).toContain(got.status);
        if (got.status !== 204) return;
        if (action === 'complete') end(h.name);
        // Deferred until completed or dead-lettered: a lock taken by number that ends otherwise leaves it deferred (R7).
        if (action === 'defer') deferred.set(h.sequenceNumber, h.name);
        else if (action !== 'abandon') deferred.delete(h.sequenceNumber);
      };
      const hold = (m: Json) => {
        handedOut(m);
        held.push({ name: m.body.n, sequenceNumber: m.sequenceNumber, lockToken: m.lockToken, until: clock.now() + LOCK_MS });
      };

      for (let step = 0, n = 0; step < 150; step++) {
        const roll = random();
        if (roll < 0.3) {
          const names = Array.from({ length: random() < 0.5 ? 1 : 1 + Math.floor(random() * 4) }, () => `m${n++}`);
          // S6: now and then scheduled up to a minute ahead.
          const at = random() < 0.2 ? { scheduledEnqueueTime: new Date(clock.now() + Math.floor(random() * 60 * SECOND)).toISOString() } : {};
          // T1, T6: now and then a time to live, past which the message is dead-lettered unless settled first.
          const ttl = random() < 0.2 ? { timeToLive: `PT${20 + Math.floor(random() * 70)}S` } : {};
          const sent =
            names.length === 1
              ? await api('POST', `${path}/messages`, { body: { n: names[0] }, messageId: names[0], ...at, ...ttl })
              : await api('POST', `${path}/messages/batch`, { messages: names.map((name) => ({ body: { n: name }, messageId: name, ...at, ...ttl })) });
          expect(sent.status, JSON.stringify(sent.body)).toBe(201);
          names.forEach((name) => written.add(name));
        } else if (roll < 0.5) {
          const got = await api('POST', `${path}/messages/receive`, { maxMessages: 1 + Math.floor(random() * 4), maxWaitTime: 'PT0S' });
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) hold(m);
        } else if (roll < 0.57) {
          const got = await api('POST', `${path}/messages/receive`, {
            mode: 'receiveAndDelete',
            maxMessages: 1 + Math.floor(random() * 3),
            maxWaitTime: 'PT0S',
          });
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) {
            handedOut(m);
            end(m.body.n);
          }
        } else if (roll < 0.75 && held.length > 0) {
          await settle(pick(held), 'complete');
        } else if (roll < 0.8 && held.length > 0) {
          await settle(pick(held), 'abandon');
        } else if (roll < 0.82 && held.length > 0) {
          await settle(pick(held), random() < 0.5 ? 'defer' : 'deadletter');
        } else if (roll < 0.84 && deferred.size > 0) {
          // R7: a deferred message received by its number, under a lock of its own.
          const seq = pick([...deferred.keys()]);
          const got = await api('POST', `${path}/messages/deferred`, { sequenceNumbers: [seq] });
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) hold(m);
        } else if (roll < 0.9 && held.length > 0) {
          const h = pick(held);
          const got = await api('POST', `${path}/messages/${h.sequenceNumber}/renew-lock`, { lockToken: h.lockToken });
          if (live(h)) {
            expect(got.status, `renew ${h.name}: ${JSON.stringify(got.body)}`).toBe(200);
            h.until = clock.now() + LOCK_MS;
          } else if (got.status === 200) h.until = clock.now() + LOCK_MS;
        } else if (roll < 0.93) {
          await sweeper.sweep();
        } else clock.advance(Math.floor(random() * 40 * SECOND));
      }

      // Settle everything: what is held under a live lock, then drain with a healthy store.
      for (const h of [...held]) if (live(h)) await settle(h, 'complete');
      const healthy = apiClient(deps);
      for (let empty = 0; empty < 3;) {
        const got = await healthy('POST', `${path}/messages/receive`, { maxMessages: 100, maxWaitTime: 'PT0S' });
        const messages = got.body.messages as Json[];
        for (const m of messages) {
          expect((await healthy('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
          end(m.body.n);
        }
        if (messages.length > 0) empty = 0;
        else {
          empty++;
          clock.advance(LOCK_MS + 10 * SECOND);
        }
      }
      // Past every time to live: what expired is moved by the sweeper (or the receives above).
      clock.advance(2 * 60 * SECOND);
      await createBroker(deps).sweep();
      // What was deferred, received by number and completed; what was dead-lettered, drained from its subqueue.
      for (const seq of deferred.keys()) {
        const got = await healthy('POST', `${path}/messages/deferred`, { sequenceNumbers: [seq] });
        for (const m of got.body.messages as Json[]) {
          expect((await healthy('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
          end(m.body.n);
        }
      }
      for (;;) {
        const got = await healthy('POST', `${path}/$deadletterqueue/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 100, maxWaitTime: 'PT0S' });
        const messages = got.body.messages as Json[];
        if (messages.length === 0) break;
        for (const m of messages) end(m.body.n);
      }
      // R1, S1: every message sent ends exactly once.
      for (const name of written) expect(ended.get(name), name).toBe(1);
      expect([...ended.keys()].filter((name) => !written.has(name))).toEqual([]);
      expect(written.size).toBeGreaterThan(30);
      expect(lossy.log.retried).toBeGreaterThan(10);
    },
  );
});
