/**
 * A topic, the model, on two layouts (F1, R1, R3, R4, R10, S1): random single and batch sends
 * to a topic with two subscriptions, one taking every message and one only those whose subject
 * (`sys.label`) is `red` (a SQL filter), peek-lock and receive-and-delete receives from either, completes,
 * abandons and clock moves, through the API on DynamoDB Local, while some writes land and lose
 * their answer, the SDK sending them again (test/support/dynamo-faults.ts `retried`). Every
 * message ends exactly once in each subscription its rules select, and in no other.
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { losingAnswers, seededRandom } from '../support/dynamo-faults.js';
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
    ['index', 5],
    ['tickets', 5],
  ] as [NewEntityLayout, number][])(
    'F1, R1, R3, R4, R10, S1: on the %s layout, random sends, receives, completes, abandons and clock moves end every message once in each subscription that takes it (seed %i)',
    { timeout: 120_000 },
    async (layout, seed) => {
      const deps = { ...(await testDeps(clock, `tmodel${layout}`)), newEntityLayout: layout };
      const random = seededRandom(seed);
      const lossy = losingAnswers(deps.db, 0.15, seededRandom(seed + 1));
      const api = apiClient({ ...deps, db: lossy.db });
      const healthy = apiClient(deps);
      expect((await healthy('PUT', '/topics/t', {})).status).toBe(201);
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
          const sent =
            messages.length === 1 ? await api('POST', '/topics/t/messages', messages[0]) : await api('POST', '/topics/t/messages/batch', { messages });
          expect(sent.status, JSON.stringify(sent.body)).toBe(201);
        } else if (roll < 0.55) {
          const at = pick(SUBSCRIPTIONS);
          const got = await api('POST', `${sub(at)}/messages/receive`, { maxMessages: 1 + Math.floor(random() * 4), maxWaitTime: 'PT0S' });
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) {
            handedOut(at, m);
            held.push({ at, name: m.body.n, sequenceNumber: m.sequenceNumber, lockToken: m.lockToken, until: clock.now() + LOCK_MS });
          }
        } else if (roll < 0.62) {
          const at = pick(SUBSCRIPTIONS);
          const got = await api('POST', `${sub(at)}/messages/receive`, {
            mode: 'receiveAndDelete',
            maxMessages: 1 + Math.floor(random() * 3),
            maxWaitTime: 'PT0S',
          });
          expect(got.status, JSON.stringify(got.body)).toBe(200);
          for (const m of got.body.messages as Json[]) {
            handedOut(at, m);
            end(at, m.body.n);
          }
        } else if (roll < 0.88 && held.length > 0) {
          const h = pick(held);
          held = held.filter((x) => x !== h);
          const action = random() < 0.8 ? 'complete' : 'abandon';
          const got = await api('POST', `${sub(h.at)}/messages/${h.sequenceNumber}/${action}`, { lockToken: h.lockToken });
          // R4: under a live lock a settlement succeeds, whatever the store's answers.
          if (live(h)) expect(got.status, `${action} ${h.name}: ${JSON.stringify(got.body)}`).toBe(204);
          else expect([204, 410]).toContain(got.status);
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
      const wanted = [...expected].flatMap(([name, subs]) => subs.map((at) => `${at}/${name}`)).sort();
      expect([...ended.keys()].sort()).toEqual(wanted);
      for (const [key, times] of ended) expect(times, key).toBe(1);
      expect(expected.size).toBeGreaterThan(30);
      expect(lossy.log.retried).toBeGreaterThan(10);
    },
  );
});
