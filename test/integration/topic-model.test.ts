/**
 * A topic, the model, on two layouts (F1, R1, R3, R4, R10, S1): random single and batch sends
 * to a topic with two subscriptions, one taking every message and one only those whose subject
 * (`sys.label`) is `red` (a SQL filter), peek-lock and receive-and-delete receives from either, completes,
 * abandons and clock moves, through the API on DynamoDB Local, while some writes land and lose
 * their answer, the SDK sending them again (test/support/dynamo-faults.ts `retried`). Every
 * message ends exactly once in each subscription its rules select, and in no other.
 *
 * `refused` (as the queue model's): some writes also answer 500 to every attempt, landed or not,
 * and only what each request answered binds. A message answered not stored ends nowhere; one
 * whose send answered 500 ends in all its subscriptions or in none (F1: its copies land
 * together); a complete that answered 500 may have ended its copy, and a failed
 * receive-and-delete may have taken up to its `maxMessages` of its subscription's copies.
 *
 * `busy` (as the queue model's): throttles past the SDK's retries, conflicting transactions and
 * an index that lags, besides writes that land and lose their answer; a 503 changed nothing (a
 * receive-and-delete answered 503 took nothing), and only a 500 leaves a request's effect open.
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { modelStore, seededRandom, type ModelFaults } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const SECOND = 1000;
const LOCK_MS = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
const SUBSCRIPTIONS = ['all', 'red'] as const;

interface Held {
  at: string;
  name: string;
  sequenceNumber: string;
  lockToken: string;
  until: number;
}

describe('a topic: the model', () => {
  it.each([
    ['index', 5, 'retried'],
    ['tickets', 5, 'retried'],
    ['index', 9, 'refused'],
    ['tickets', 9, 'refused'],
    ['index', 17, 'resent'],
    ['tickets', 17, 'resent'],
    ['index', 23, 'busy'],
    ['tickets', 23, 'busy'],
  ] as [NewEntityLayout, number, ModelFaults][])(
    'F1, R1, R3, R4, R10, S1, S4, S7: on the %s layout, random sends, receives, completes, abandons and clock moves end every message once in each subscription that takes it (seed %i, writes %s)',
    { timeout: 120_000 },
    async (layout, seed, faults) => {
      const deps = { ...(await testDeps(clock, `tmodel${layout}${faults}`)), newEntityLayout: layout };
      const random = seededRandom(seed);
      const strict = faults === 'retried';
      const resending = faults === 'resent';
      const busy = faults === 'busy';
      const lossy = modelStore(deps.db, faults, seededRandom(seed + 1));
      /** Whether a request's answer is one the store's refusals may give (500, 503) when they are injected. */
      const refusedAnswer = (status: number) => !strict && (status === 500 || status === 503);
      /** Sends answered not stored (S4), and sends or completes (by subscription/name) that answered 500. */
      const notStored = new Set<string>();
      const maybeSent = new Set<string>();
      const maybeEnded = new Set<string>();
      /** By subscription: how many copies failed receive-and-deletes may have taken without handing out. */
      const mayBeTaken = new Map<string, number>(SUBSCRIPTIONS.map((s) => [s, 0]));
      const api = apiClient({ ...deps, db: lossy.db });
      const healthy = apiClient(deps);
      expect((await healthy('PUT', '/topics/t', { requiresDuplicateDetection: resending })).status).toBe(201);
      for (const s of SUBSCRIPTIONS)
        expect((await healthy('PUT', `/topics/t/subscriptions/${s}`, { lockDuration: 'PT30S', maxDeliveryCount: 100 })).status).toBe(201);
      expect((await healthy('DELETE', '/topics/t/subscriptions/red/rules/$Default')).status).toBe(204);
      expect((await healthy('PUT', '/topics/t/subscriptions/red/rules/r', { filter: { sql: "sys.label = 'red'" } })).status).toBe(201);
      const sub = (s: string) => `/topics/t/subscriptions/${s}`;
      /** The subscriptions each message must end in, once. */
      const expected = new Map<string, string[]>();
      const ended = new Map<string, number>();
      let held: Held[] = [];
      const live = (h: Held) => h.until > clock.now();
      const end = (at: string, name: string) => ended.set(`${at}/${name}`, (ended.get(`${at}/${name}`) ?? 0) + 1);
      const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
      const handedOut = (at: string, m: Json) =>
        expect(
          held.some((h) => h.at === at && h.name === m.body.n && live(h)),
          `${m.body.n} handed out twice in ${at}`,
        ).toBe(false);

      for (let step = 0, n = 0; step < 150; step++) {
        const roll = random();
        if (roll < 0.3) {
          const messages = Array.from({ length: random() < 0.5 ? 1 : 1 + Math.floor(random() * 4) }, () => {
            const name = `m${n++}`;
            const red = random() < 0.5;
            expected.set(name, red ? ['all', 'red'] : ['all']);
            return { body: { n: name }, messageId: name, ...(red ? { subject: 'red' } : {}) };
          });
          const send = () => (messages.length === 1 ? api('POST', '/topics/t/messages', messages[0]) : api('POST', '/topics/t/messages/batch', { messages }));
          const names = messages.map((m) => m.messageId);
          /** Names an attempt answered stored, and names an attempt answered 500 for (it may have stored them). */
          const stored = new Set<string>();
          const uncertain = new Set<string>();
          const note = (sent: Awaited<ReturnType<typeof send>>) => {
            if (sent.status === 201) names.forEach((name) => stored.add(name));
            else if (sent.status === 207 && !strict) (sent.body.results as Json[]).forEach((r, i) => 'error' in r || stored.add(names[i]!));
            else if (refusedAnswer(sent.status) && sent.status === 500) names.forEach((name) => uncertain.add(name));
            else if (!refusedAnswer(sent.status)) expect(sent.status, JSON.stringify(sent.body)).toBe(201);
            return sent.status;
          };
          let status = note(await send());
          // S7: a failed send is sent again with the same message ids, as a client retries it; each subscription keeps one copy.
          for (let again = 0; resending && again < 3 && status !== 201; again++) status = note(await send());
          for (const name of names) if (!stored.has(name)) (uncertain.has(name) ? maybeSent : notStored).add(name);
        } else if (roll < 0.55) {
          const at = pick(SUBSCRIPTIONS);
          const got = await api('POST', `${sub(at)}/messages/receive`, { maxMessages: 1 + Math.floor(random() * 4), maxWaitTime: 'PT0S' });
          if (refusedAnswer(got.status)) continue;
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) {
            handedOut(at, m);
            held.push({ at, name: m.body.n, sequenceNumber: m.sequenceNumber, lockToken: m.lockToken, until: clock.now() + LOCK_MS });
          }
        } else if (roll < 0.62) {
          const at = pick(SUBSCRIPTIONS);
          const maxMessages = 1 + Math.floor(random() * 3);
          const got = await api('POST', `${sub(at)}/messages/receive`, { mode: 'receiveAndDelete', maxMessages, maxWaitTime: 'PT0S' });
          if (refusedAnswer(got.status)) {
            // A 503 (throttled, a conflict) changed nothing: under `busy` only a 500 may have taken.
            if (!busy || got.status === 500) mayBeTaken.set(at, mayBeTaken.get(at)! + maxMessages);
            continue;
          }
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) {
            handedOut(at, m);
            end(at, m.body.n);
          }
        } else if (roll < 0.88 && held.length > 0) {
          const h = pick(held);
          held = held.filter((x) => x !== h);
          const action = random() < 0.8 ? 'complete' : 'abandon';
          let got = await api('POST', `${sub(h.at)}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
          // A failed settlement is sent again, as the client retries it; after a 500 it may have landed.
          for (let again = 0; again < 3 && refusedAnswer(got.status); again++) {
            if (got.status === 500 && action === 'complete') maybeEnded.add(`${h.at}/${h.name}`);
            got = await api('POST', `${sub(h.at)}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
          }
          // R4: under a live lock a settlement succeeds, whatever the store's answers.
          if (live(h) && strict) expect(got.status, `${action} ${h.name}: ${JSON.stringify(got.body)}`).toBe(204);
          else expect([204, 410, ...(strict ? [] : [500, 503])], `${action} ${h.name}: ${JSON.stringify(got.body)}`).toContain(got.status);
          if (got.status === 204 && action === 'complete') end(h.at, h.name);
        } else clock.advance(Math.floor(random() * 40 * SECOND));
      }

      clock.advance(LOCK_MS + SECOND);
      for (const at of SUBSCRIPTIONS) {
        for (;;) {
          const got = await healthy('POST', `${sub(at)}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 100, maxWaitTime: 'PT0S' });
          const messages = got.body.messages as Json[];
          if (messages.length === 0) break;
          for (const m of messages) end(at, m.body.n);
        }
      }
      // F1, R1, S1: each message ends once in each subscription that takes it, and nowhere else.
      for (const [key, times] of ended) expect(times, key).toBe(1);
      const wanted = new Set([...expected].flatMap(([name, subs]) => (notStored.has(name) ? [] : subs.map((at) => `${at}/${name}`))));
      expect([...ended.keys()].filter((key) => !wanted.has(key))).toEqual([]);
      const missing = new Map<string, string[]>(SUBSCRIPTIONS.map((s) => [s, []]));
      for (const [name, subs] of expected) {
        if (notStored.has(name)) continue;
        const left = subs.filter((at) => !ended.has(`${at}/${name}`) && !maybeEnded.has(`${at}/${name}`));
        // F1: a send that answered 500 stored its copies together, or none of them.
        if (maybeSent.has(name) && left.length === subs.length) continue;
        for (const at of left) missing.get(at)!.push(name);
      }
      // R10: only a failed receive-and-delete may take a copy without handing it out.
      for (const at of SUBSCRIPTIONS)
        expect(missing.get(at)!.length, `never ended in ${at}: ${missing.get(at)!.join(' ')}`).toBeLessThanOrEqual(mayBeTaken.get(at)!);
      expect(expected.size).toBeGreaterThan(30);
      if (strict) expect(lossy.log.retried).toBeGreaterThan(10);
      else if (busy) expect(lossy.log.throttledOut + lossy.log.conflicted + lossy.log.lostOut + lossy.log.failedOut).toBeGreaterThan(5);
      else expect(lossy.log.lostOut + lossy.log.failedOut).toBeGreaterThan(5);
    },
  );
});
