/**
 * Sessions, the model (N2, N3, N4, N5, R1, R4, R10): random sends to a few sessions, accepts of the
 * next session, receives (some receive-and-delete), completes, abandons, lock renewals, session states, releases and
 * clock moves, through the API on DynamoDB Local, while some writes land and lose their
 * answer, the SDK sending them again (test/support/dynamo-faults.ts `retried`). Whatever the store's answers, no message is lost
 * or completed twice, a session is never held under two live locks, and an accept, a receive
 * or a settlement under a live lock never fails for a write of its own that landed.
 *
 * `refused` (as the queue model's): some writes also answer 500 to every attempt, landed or not,
 * so requests fail, and only what each answered binds: a message answered stored is completed
 * exactly once, one answered not stored never, one whose send or complete answered 500 at most
 * once; a session's state is the last one set, or one whose set answered 500 after it.
 *
 * `busy` (as the queue model's): throttles past the SDK's retries, conflicting transactions and
 * an index that lags, besides writes that land and lose their answer; a 503 changed nothing, and
 * only a 500 leaves a request's effect open.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { modelStore, seededRandom, type ModelFaults } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const SECOND = 1000;
const LOCK_MS = 30 * SECOND;
const SESSIONS = ['a', 'b', 'c'];
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;

beforeAll(async () => {
  deps = await testDeps(clock, 'sessmodel');
});

interface Lock {
  sessionId: string;
  token: string;
  until: number;
}
interface Held {
  name: string;
  sequenceNumber: string;
  lockToken: string;
  lock: Lock;
}

describe('sessions: the model', () => {
  it.each([
    [3, 'retried'],
    [5, 'retried'],
    [13, 'refused'],
    [19, 'busy'],
  ] as [number, Exclude<ModelFaults, 'resent'>][])(
    'N2, N3, N4, N5, R1, R4, S4: random sends, accepts, receives, completes, abandons, renews, states, releases and clock moves never lose a message, complete one twice, or give a session two live locks (seed %i, writes %s)',
    { timeout: 120_000 },
    async (seed, faults) => {
      const random = seededRandom(seed);
      const strict = faults === 'retried';
      const busy = faults === 'busy';
      const lossy = modelStore(deps.db, faults, seededRandom(seed + 1));
      const api = apiClient({ ...deps, db: lossy.db });
      const queue = `q${seed}${faults}`;
      expect((await apiClient(deps)('PUT', `/queues/${queue}`, { requiresSession: true, lockDuration: 'PT30S', maxDeliveryCount: 100 })).status).toBe(201);
      const path = `/queues/${queue}`;
      const written = new Set<string>();
      /** Answered not stored (S4): never to be completed. */
      const notStored = new Set<string>();
      /** A send or a complete that answered 500: completed once or never. */
      const maybe = new Set<string>();
      /** Whether a request's answer is one the store's refusals may give (500, 503) when they are injected. */
      const refusedAnswer = (status: number) => !strict && (status === 500 || status === 503);
      const completed = new Map<string, number>();
      let locks: Lock[] = [];
      let held: Held[] = [];
      const live = (l: Lock) => l.until > clock.now();
      const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)];

      const accept = async (body: Record<string, unknown>) => {
        const got = await api('POST', `${path}/sessions/accept`, { maxWaitTime: 'PT0S', ...body });
        if (got.status !== 200) {
          if (refusedAnswer(got.status)) return undefined;
          expect([408, 409], JSON.stringify(got.body)).toContain(got.status);
          return undefined;
        }
        const { sessionId, sessionLockToken } = got.body as { sessionId: string; sessionLockToken: string };
        // N2: never a second live lock on a session.
        expect(
          locks.filter((l) => l.sessionId === sessionId && live(l)),
          `session ${sessionId} locked twice`,
        ).toEqual([]);
        const lock = { sessionId, token: sessionLockToken, until: clock.now() + LOCK_MS };
        locks.push(lock);
        return lock;
      };
      const settle = async (h: Held, action: 'complete' | 'abandon') => {
        held = held.filter((x) => x !== h);
        let got = await api('POST', `${path}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
        let failed = false;
        // A failed settlement is sent again, as the client retries it; after a 500 it may have landed.
        for (let again = 0; again < 3 && refusedAnswer(got.status); again++) {
          failed ||= got.status === 500;
          got = await api('POST', `${path}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
        }
        if (failed && action === 'complete' && got.status !== 204) maybe.add(h.name);
        // R4: under a live lock a settlement succeeds, whatever the store's answers.
        if (live(h.lock) && locks.includes(h.lock) && strict) expect(got.status, `${action} ${h.name}: ${JSON.stringify(got.body)}`).toBe(204);
        else expect([204, 410, ...(strict ? [] : [500, 503])], `${action} ${h.name}: ${JSON.stringify(got.body)}`).toContain(got.status);
        if (got.status === 204 && action === 'complete') completed.set(h.name, (completed.get(h.name) ?? 0) + 1);
      };
      /** How many messages failed receive-and-deletes may have taken without handing out (R10). */
      let mayBeTaken = 0;
      const receive = async (lock: Lock, maxMessages: number, mode: 'peekLock' | 'receiveAndDelete') => {
        const got = await api('POST', `${path}/sessions/${lock.sessionId}/receive`, { sessionLockToken: lock.token, mode, maxMessages, maxWaitTime: 'PT0S' });
        if (!live(lock)) return;
        if (refusedAnswer(got.status)) {
          // A 503 (throttled, a conflict) changed nothing: under `busy` only a 500 may have taken.
          if (mode === 'receiveAndDelete' && (!busy || got.status === 500)) mayBeTaken += maxMessages;
          return;
        }
        expect(got.status, JSON.stringify(got.body)).toBe(200);
        for (const m of got.body.messages as Json[]) {
          // N3, R1: never handed out while another delivery of it is held under a live lock.
          expect(
            held.some((h) => h.name === m.body.n && live(h.lock)),
            `${m.body.n} handed out twice`,
          ).toBe(false);
          if (mode === 'receiveAndDelete') completed.set(m.body.n, (completed.get(m.body.n) ?? 0) + 1);
          else held.push({ name: m.body.n, sequenceNumber: m.sequenceNumber, lockToken: m.lockToken, lock });
        }
      };
      /** Each session's state as last set under a live lock (N5), to read back under the next; with those whose set answered 500 since. */
      const states = new Map<string, (string | null)[]>();
      const setState = async (lock: Lock) => {
        const value = Buffer.from(`s${random()}`).toString('base64');
        const got = await api('PUT', `${path}/sessions/${lock.sessionId}/state`, { sessionLockToken: lock.token, state: value });
        if (!live(lock)) return;
        if (refusedAnswer(got.status)) {
          // Landed or not: the state before it (none, if never set) or this one.
          if (got.status === 500) states.set(lock.sessionId, [...(states.get(lock.sessionId) ?? [null]), value]);
          return;
        }
        expect(got.status, `state: ${JSON.stringify(got.body)}`).toBeLessThan(300);
        states.set(lock.sessionId, [value]);
        const read = await api('GET', `${path}/sessions/${lock.sessionId}/state?sessionLockToken=${lock.token}`);
        expect(read.body.state).toBe(value);
      };
      const renew = async (lock: Lock) => {
        const got = await api('POST', `${path}/sessions/${lock.sessionId}/renew-lock`, { sessionLockToken: lock.token });
        if (!live(lock) || refusedAnswer(got.status)) return;
        // N4: a live lock renews, whatever the store's answers; its messages' locks follow it.
        expect(got.status, `renew: ${JSON.stringify(got.body)}`).toBe(200);
        lock.until = clock.now() + LOCK_MS;
      };
      const release = async (lock: Lock) => {
        locks = locks.filter((l) => l !== lock);
        held = held.filter((h) => h.lock !== lock);
        const got = await api('POST', `${path}/sessions/${lock.sessionId}/release`, { sessionLockToken: lock.token });
        if (live(lock) && !refusedAnswer(got.status)) expect(got.status, `release: ${JSON.stringify(got.body)}`).toBe(204);
      };

      for (let step = 0, n = 0; step < 150; step++) {
        const roll = random();
        const mine = locks.filter(live);
        if (roll < 0.3) {
          const name = `m${n++}`;
          const sent = await api('POST', `${path}/messages`, { body: { n: name }, sessionId: pick(SESSIONS), messageId: name });
          if (refusedAnswer(sent.status)) (sent.status === 500 ? maybe : notStored).add(name);
          else {
            expect(sent.status, JSON.stringify(sent.body)).toBe(201);
            written.add(name);
          }
        } else if (roll < 0.42) {
          await accept(random() < 0.5 ? {} : { sessionId: pick(SESSIONS) });
        } else if (roll < 0.6 && mine.length > 0) {
          // R10, N3: now and then a receive-and-delete, which hands out what it removes.
          await receive(pick(mine)!, 1 + Math.floor(random() * 3), random() < 0.2 ? 'receiveAndDelete' : 'peekLock');
        } else if (roll < 0.78 && held.length > 0) {
          await settle(pick(held)!, 'complete');
        } else if (roll < 0.82 && held.length > 0) {
          await settle(pick(held)!, 'abandon');
        } else if (roll < 0.85 && mine.length > 0) {
          await (random() < 0.5 ? renew : setState)(pick(mine)!);
        } else if (roll < 0.93 && locks.length > 0) {
          await release(pick(locks)!);
        } else clock.advance(Math.floor(random() * 40 * SECOND));
      }

      // Settle everything: the rest of what is held, then every session drained.
      for (const h of [...held]) if (live(h.lock)) await settle(h, 'complete');
      for (const l of [...locks]) await release(l);
      clock.advance(LOCK_MS + SECOND);
      const healthy = apiClient(deps);
      for (let round = 0; round < 40; round++) {
        const got = await healthy('POST', `${path}/sessions/accept`, { maxWaitTime: 'PT0S' });
        if (got.status !== 200) break;
        const { sessionId, sessionLockToken } = got.body as { sessionId: string; sessionLockToken: string };
        // N5: the state last set under a live lock is the session's.
        const state = (await healthy('GET', `${path}/sessions/${sessionId}/state?sessionLockToken=${sessionLockToken}`)).body.state;
        const set = states.get(sessionId);
        // The last set that answered, or one whose set answered 500 after it.
        if (set) expect(set, `state of ${sessionId}`).toContain(state);
        const messages = (await healthy('POST', `${path}/sessions/${sessionId}/receive`, { sessionLockToken, maxMessages: 100, maxWaitTime: 'PT0S' })).body
          .messages as Json[];
        for (const m of messages) {
          expect((await healthy('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
          completed.set(m.body.n, (completed.get(m.body.n) ?? 0) + 1);
        }
        expect((await healthy('POST', `${path}/sessions/${sessionId}/release`, { sessionLockToken })).status).toBe(204);
      }
      // R1: every message answered stored is completed exactly once, unless a complete that answered 500 may have; S4: none answered not stored ever is.
      for (const [name, times] of completed) expect(times, name).toBe(1);
      // R10: only a failed receive-and-delete may take a message without handing it out.
      const missing = [...written].filter((name) => !completed.has(name) && !maybe.has(name));
      expect(missing.length, `never completed: ${missing.join(' ')}`).toBeLessThanOrEqual(mayBeTaken);
      for (const name of notStored) expect(completed.has(name), `${name} was answered not stored`).toBe(false);
      const known = new Set([...written, ...maybe]);
      expect([...completed.keys()].filter((name) => !known.has(name))).toEqual([]);
      expect(written.size).toBeGreaterThan(20);
      if (strict) expect(lossy.log.retried).toBeGreaterThan(10);
      else if (busy) expect(lossy.log.throttledOut + lossy.log.conflicted + lossy.log.lostOut + lossy.log.failedOut).toBeGreaterThan(5);
      else expect(lossy.log.lostOut + lossy.log.failedOut).toBeGreaterThan(5);
    },
  );
});
