/**
 * Sessions, the model (N2, N3, N4, N5, R1, R4): random sends to a few sessions, accepts of the
 * next session, receives, completes, abandons, lock renewals, session states, releases and
 * clock moves, through the API on DynamoDB Local, while some writes land and lose their
 * answer, the SDK sending them again (test/support/dynamo-faults.ts `retried`). Whatever the store's answers, no message is lost
 * or completed twice, a session is never held under two live locks, and an accept, a receive
 * or a settlement under a live lock never fails for a write of its own that landed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { losingAnswers, seededRandom } from '../support/dynamo-faults.js';
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
    [3, 0.15],
    [5, 0.15],
  ])(
    'N2, N3, N4, R1, R4: random sends, accepts, receives, completes, abandons, renews, states, releases and clock moves never lose a message, complete one twice, or give a session two live locks (seed %i, answers lost %d)',
    { timeout: 120_000 },
    async (seed, lost) => {
      const random = seededRandom(seed);
      const lossy = losingAnswers(deps.db, lost, seededRandom(seed + 1));
      const api = apiClient({ ...deps, db: lossy.db });
      const queue = `q${seed}`;
      expect((await api('PUT', `/queues/${queue}`, { requiresSession: true, lockDuration: 'PT30S', maxDeliveryCount: 100 })).status).toBe(201);
      const path = `/queues/${queue}`;
      const written = new Set<string>();
      const completed = new Map<string, number>();
      let locks: Lock[] = [];
      let held: Held[] = [];
      const live = (l: Lock) => l.until > clock.now();
      const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)];

      const accept = async (body: Record<string, unknown>) => {
        const got = await api('POST', `${path}/sessions/accept`, { maxWaitTime: 'PT0S', ...body });
        if (got.status !== 200) {
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
        const got = await api('POST', `${path}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
        // R4: under a live lock a settlement succeeds, whatever the store's answers.
        if (live(h.lock) && locks.includes(h.lock)) expect(got.status, `${action} ${h.name}: ${JSON.stringify(got.body)}`).toBe(204);
        else expect([204, 410]).toContain(got.status);
        if (got.status === 204 && action === 'complete') completed.set(h.name, (completed.get(h.name) ?? 0) + 1);
      };
      const receive = async (lock: Lock, maxMessages: number) => {
        const got = await api('POST', `${path}/sessions/${lock.sessionId}/receive`, { sessionLockToken: lock.token, maxMessages, maxWaitTime: 'PT0S' });
        if (!live(lock)) return;
        expect(got.status, JSON.stringify(got.body)).toBe(200);
        for (const m of got.body.messages as Json[]) {
          // N3, R1: never handed out while another delivery of it is held under a live lock.
          expect(
            held.some((h) => h.name === m.body.n && live(h.lock)),
            `${m.body.n} handed out twice`,
          ).toBe(false);
          held.push({ name: m.body.n, sequenceNumber: m.sequenceNumber, lockToken: m.lockToken, lock });
        }
      };
      /** Each session's state as last set under a live lock (N5), to read back under the next. */
      const states = new Map<string, string>();
      const setState = async (lock: Lock) => {
        const value = Buffer.from(`s${random()}`).toString('base64');
        const got = await api('PUT', `${path}/sessions/${lock.sessionId}/state`, { sessionLockToken: lock.token, state: value });
        if (!live(lock)) return;
        expect(got.status, `state: ${JSON.stringify(got.body)}`).toBeLessThan(300);
        states.set(lock.sessionId, value);
        const read = await api('GET', `${path}/sessions/${lock.sessionId}/state?sessionLockToken=${lock.token}`);
        expect(read.body.state).toBe(value);
      };
      const renew = async (lock: Lock) => {
        const got = await api('POST', `${path}/sessions/${lock.sessionId}/renew-lock`, { sessionLockToken: lock.token });
        if (!live(lock)) return;
        // N4: a live lock renews, whatever the store's answers; its messages' locks follow it.
        expect(got.status, `renew: ${JSON.stringify(got.body)}`).toBe(200);
        lock.until = clock.now() + LOCK_MS;
      };
      const release = async (lock: Lock) => {
        locks = locks.filter((l) => l !== lock);
        held = held.filter((h) => h.lock !== lock);
        const got = await api('POST', `${path}/sessions/${lock.sessionId}/release`, { sessionLockToken: lock.token });
        if (live(lock)) expect(got.status, `release: ${JSON.stringify(got.body)}`).toBe(204);
      };

      for (let step = 0, n = 0; step < 150; step++) {
        const roll = random();
        const mine = locks.filter(live);
        if (roll < 0.3) {
          const name = `m${n++}`;
          const sent = await api('POST', `${path}/messages`, { body: { n: name }, sessionId: pick(SESSIONS), messageId: name });
          expect(sent.status, JSON.stringify(sent.body)).toBe(201);
          written.add(name);
        } else if (roll < 0.42) {
          await accept(random() < 0.5 ? {} : { sessionId: pick(SESSIONS) });
        } else if (roll < 0.6 && mine.length > 0) {
          await receive(pick(mine)!, 1 + Math.floor(random() * 3));
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
        if (states.has(sessionId)) expect(state, `state of ${sessionId}`).toBe(states.get(sessionId));
        const messages = (await healthy('POST', `${path}/sessions/${sessionId}/receive`, { sessionLockToken, maxMessages: 100, maxWaitTime: 'PT0S' })).body
          .messages as Json[];
        for (const m of messages) {
          expect((await healthy('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
          completed.set(m.body.n, (completed.get(m.body.n) ?? 0) + 1);
        }
        expect((await healthy('POST', `${path}/sessions/${sessionId}/release`, { sessionLockToken })).status).toBe(204);
      }
      // R1: every message sent is completed exactly once.
      for (const name of written) expect(completed.get(name), name).toBe(1);
      expect([...completed.keys()].filter((name) => !written.has(name))).toEqual([]);
      expect(written.size).toBeGreaterThan(20);
      expect(lossy.log.retried).toBeGreaterThan(10);
    },
  );
});
