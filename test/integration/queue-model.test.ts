/**
 * A queue, the model, on each layout (R1, R3, R4, R6, R7, R10, S1, S6, D1, T6): random sends
 * (single and batch, some scheduled, some with a time to live), peek-lock receives of one or several,
 * receive-and-delete, completes, abandons, defers and receives by number, dead-letters,
 * renews, sweeper runs and clock moves, through the API on DynamoDB Local, while some writes land and lose
 * their answer, the SDK sending them again (test/support/dynamo-faults.ts `retried`). Whatever
 * the store's answers, every message sent ends exactly once (completed, handed out by a
 * receive-and-delete, or drained from the dead-letter subqueue), none is handed out while another delivery of it is held under a live
 * lock, and a settlement under a live lock never fails for a write of its own that landed.
 *
 * `refused`: some writes also answer 500 to every attempt, landed (`lostOut`) or not
 * (`failedOut`), so requests fail. Then only what a request answered binds: a message answered
 * stored ends exactly once; one answered not stored (a 503, a batch's error) never ends; one whose
 * send answered 500 ends at most once, as does one whose complete did; a receive-and-delete that
 * failed may have taken up to its `maxMessages` without handing them out (at most once, R10);
 * and none is ever handed out twice. `resent`: the same, on a queue with duplicate detection,
 * where a failed send is sent again with the same message ids as a client would: one answered
 * stored at last ends exactly once, whatever its earlier attempts stored (S7).
 *
 * `busy`: the weather of a busy table (`busyTable`): throttles past the SDK's retries,
 * conflicting transactions (also at the retry of a write that landed) and an index that lags,
 * besides writes that land and lose their answer. A 503 changed nothing: a send so answered
 * never ends, a receive-and-delete so answered took nothing (R10); only a 500 leaves a
 * request's effect open, as under `refused`.
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { createBroker } from '../support/broker.js';
import { modelStore, seededRandom, type ModelFaults } from '../support/dynamo-faults.js';
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
    ['index', 7, 'retried'],
    ['tickets', 7, 'retried'],
    ['positions', 7, 'retried'],
    ['index', 11, 'refused'],
    ['tickets', 11, 'refused'],
    ['positions', 11, 'refused'],
    ['index', 13, 'resent'],
    ['tickets', 13, 'resent'],
    ['positions', 13, 'resent'],
    ['index', 19, 'busy'],
    ['tickets', 19, 'busy'],
    ['positions', 19, 'busy'],
  ] as [NewEntityLayout, number, ModelFaults][])(
    'R1, R3, R4, R6, R7, R10, S1, S4, S6, S7, D1: on the %s layout, random sends, receives, settlements of every kind, renews and clock moves end every message as answered (seed %i, writes %s)',
    { timeout: 120_000 },
    async (layout, seed, faults) => {
      const deps = { ...(await testDeps(clock, `qmodel${layout}${faults}`)), newEntityLayout: layout };
      const random = seededRandom(seed);
      const strict = faults === 'retried';
      const resending = faults === 'resent';
      const busy = faults === 'busy';
      const lossy = modelStore(deps.db, faults, seededRandom(seed + 1));
      const api = apiClient({ ...deps, db: lossy.db });
      const path = '/queues/q';
      const properties = { lockDuration: 'PT30S', maxDeliveryCount: 100, deadLetteringOnMessageExpiration: true, requiresDuplicateDetection: resending };
      expect((await apiClient(deps)('PUT', path, properties)).status).toBe(201);
      // The sweeper's runs (expiry, T4/T6; scheduled activation, S6) share the lossy store.
      const sweeper = createBroker({ ...deps, db: lossy.db });
      const written = new Set<string>();
      /** Answered not stored (S4): never to end. */
      const notStored = new Set<string>();
      /** A send or a complete that answered 500: may have landed, so ends once or never. */
      const maybe = new Set<string>();
      /** How many messages failed receive-and-deletes may have taken without handing out. */
      let mayBeTaken = 0;
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
        let got = await api('POST', `${path}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
        let failed = false;
        // A failed settlement is sent again, as the client retries it; after a 500 it may have landed.
        for (let again = 0; !strict && again < 3 && (got.status === 500 || got.status === 503); again++) {
          failed ||= got.status === 500;
          got = await api('POST', `${path}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
        }
        // R4: under a live lock a settlement succeeds, whatever the store's answers.
        if (live(h) && !failed && strict) expect(got.status, `${action} ${h.name}: ${JSON.stringify(got.body)}`).toBe(204);
        else expect([204, 410, ...(strict ? [] : [500, 503])], `${action} ${h.name}: ${JSON.stringify(got.body)}`).toContain(got.status);
        if (got.status !== 204) {
          if (failed && action === 'complete') maybe.add(h.name);
          // A defer that may have landed: received by number at the end, if it did (R7).
          if (failed && action === 'defer') deferred.set(h.sequenceNumber, h.name);
          return;
        }
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
          const send = () =>
            names.length === 1
              ? api('POST', `${path}/messages`, { body: { n: names[0] }, messageId: names[0], ...at, ...ttl })
              : api('POST', `${path}/messages/batch`, { messages: names.map((name) => ({ body: { n: name }, messageId: name, ...at, ...ttl })) });
          /** Names an attempt answered stored, and names an attempt answered 500 for (it may have stored them). */
          const stored = new Set<string>();
          const uncertain = new Set<string>();
          const note = (sent: Awaited<ReturnType<typeof send>>) => {
            if (sent.status === 201) names.forEach((name) => stored.add(name));
            // S4: each message of a batch answered stored or not stored, and that is so.
            else if (sent.status === 207) (sent.body.results as Json[]).forEach((r, i) => 'error' in r || stored.add(names[i]!));
            else if (sent.status === 500) names.forEach((name) => uncertain.add(name));
            else expect(sent.status, JSON.stringify(sent.body)).toBe(503);
            return sent.status;
          };
          let status = note(await send());
          if (strict) expect(status).toBe(201);
          // S7: a failed send is sent again with the same message ids, as a client retries it; the queue keeps one copy.
          for (let again = 0; resending && again < 3 && status !== 201; again++) status = note(await send());
          for (const name of names) (stored.has(name) ? written : uncertain.has(name) ? maybe : notStored).add(name);
        } else if (roll < 0.5) {
          const got = await api('POST', `${path}/messages/receive`, { maxMessages: 1 + Math.floor(random() * 4), maxWaitTime: 'PT0S' });
          expect(strict ? [200] : [200, 500, 503], JSON.stringify(got.body)).toContain(got.status);
          for (const m of (got.body.messages ?? []) as Json[]) hold(m);
        } else if (roll < 0.57) {
          const maxMessages = 1 + Math.floor(random() * 3);
          const got = await api('POST', `${path}/messages/receive`, { mode: 'receiveAndDelete', maxMessages, maxWaitTime: 'PT0S' });
          if (strict) expect(got.status, JSON.stringify(got.body)).toBe(200);
          else if (got.status !== 200) {
            expect([500, 503], JSON.stringify(got.body)).toContain(got.status);
            // A 503 (throttled, a conflict) changed nothing: under `busy` only a 500 may have taken.
            if (!busy || got.status === 500) mayBeTaken += maxMessages;
          }
          for (const m of (got.body.messages ?? []) as Json[]) {
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
          if (strict) expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of (got.body.messages ?? []) as Json[]) hold(m);
        } else if (roll < 0.9 && held.length > 0) {
          const h = pick(held);
          const got = await api('POST', `${path}/messages/${h.sequenceNumber}/renew-lock`, { lockToken: h.lockToken });
          if (live(h) && strict) {
            expect(got.status, `renew ${h.name}: ${JSON.stringify(got.body)}`).toBe(200);
            h.until = clock.now() + LOCK_MS;
          } else if (got.status === 200) h.until = clock.now() + LOCK_MS;
        } else if (roll < 0.93) {
          // A sweeper run that fails is run again on the next schedule.
          await sweeper.sweep().catch((e: unknown) => {
            if (strict) throw e;
          });
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
        for (const m of (got.body.messages ?? []) as Json[]) {
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
      // R1, S1: no message ends twice, and none ends that was not sent.
      for (const [name, times] of ended) expect(times, name).toBe(1);
      const known = new Set([...written, ...maybe]);
      expect([...ended.keys()].filter((name) => !known.has(name))).toEqual([]);
      // S4: a message answered not stored never ends.
      for (const name of notStored) expect(ended.has(name), `${name} was answered not stored`).toBe(false);
      // S1, R10: every message answered stored ends, unless a complete that answered 500 may have
      // ended it, or a failed receive-and-delete may have taken it without handing it out.
      const missing = [...written].filter((name) => !ended.has(name) && !maybe.has(name));
      expect(missing.length, `never ended: ${missing.join(' ')}`).toBeLessThanOrEqual(mayBeTaken);
      expect(written.size).toBeGreaterThan(30);
      if (strict) expect(lossy.log.retried).toBeGreaterThan(10);
      else if (busy) expect(lossy.log.throttledOut + lossy.log.conflicted + lossy.log.lostOut + lossy.log.failedOut).toBeGreaterThan(5);
      else expect(lossy.log.lostOut + lossy.log.failedOut).toBeGreaterThan(5);
    },
  );
});
