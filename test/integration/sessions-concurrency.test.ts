/**
 * Sessions under concurrency (N2, N3, N4): 8 session receivers work through
 * 200 sessions of 20 messages each at the same time, 100 sessions on a plain queue and 100 on
 * a partitioned one, calling the broker functions directly on DynamoDB Local.
 *
 * Each receiver accepts the next available session, holds it for at most two receives of 5,
 * then releases it, so a session of 20 passes through several holders. At the first delivery
 * of message 10 in every fourth session the receiver abandons it and the rest of its batch
 * (keeping the processing order) and releases the session: the next holder must get message
 * 10 again first, its delivery count up by one (N3).
 *
 * Holding is checked as it happens: a receiver registers itself as the session's holder when
 * its accept returns and unregisters before it calls release, so a second holder while the
 * first is registered is two holders under live locks. The clock does not move: no lock can
 * lapse, so every hand-over is a release, and no receive or settlement may fail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as pause } from 'node:timers/promises';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { retireWorkerEmulator } from '../support/emulator.js';
import { createBroker, type Broker } from '../support/broker.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { BrokerError } from '../../lib/errors.js';

const clock = new ManualClock();
let api: ReturnType<typeof apiClient>;
let broker: Broker;

beforeAll(async () => {
  const deps = await testDeps(clock, 'sessconc');
  api = apiClient(deps);
  broker = createBroker(deps);
});

// 4,000 messages wear the worker's emulator out: the file after this one gets a fresh one.
afterAll(() => retireWorkerEmulator());

const RECEIVERS = 8;
const SESSIONS_PER_QUEUE = 100;
const MESSAGES_PER_SESSION = 20;
const BATCH = 5; // messages per receive
const HOLD_ROUNDS = 2; // receives per hold, then release
const ABANDONED_INDEX = 10;
const queues = [
  { name: 'sessions', props: { requiresSession: true, lockDuration: 'PT5M' } },
  { name: 'sessions-partitioned', props: { requiresSession: true, enablePartitioning: true, lockDuration: 'PT5M' } },
];
const TOTAL = queues.length * SESSIONS_PER_QUEUE * MESSAGES_PER_SESSION;
const target = (name: string): ReceiveTarget => ({ kind: 'queue', name, subqueue: 'active' });
const sessionIdOf = (q: number, s: number) => `order-${s}${q === 0 ? '' : '-p'}`;
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
const abandons = (session: number) => session % 4 === 0;

interface Received {
  sequenceNumber: string;
  lockToken: string;
  sessionId: string;
  deliveryCount: number;
  body: { q: number; s: number; i: number };
}

interface Interval {
  receiver: number;
  from: number;
  to: number;
}

describe('sessions: concurrent session receivers', () => {
  it(
    'N2/N3/N4: 8 receivers over 200 sessions of 20 (plain and partitioned queue): one holder per session at a time, each session processed in order, no message lost or processed twice',
    { timeout: 300_000 },
    async () => {
      // prepare: 20 messages for each of 100 sessions per queue; each batch of 100 holds 5
      // sessions, interleaved (one hint write per session and batch), two batches at a time
      const sent = new Map<string, { q: number; s: number; i: number }>(); // sequenceNumber -> message
      const SESSIONS_PER_BATCH = 100 / MESSAGES_PER_SESSION;
      for (const [q, { name, props }] of queues.entries()) {
        const created = await api('PUT', `/queues/${name}`, props);
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const batches = range(0, SESSIONS_PER_QUEUE / SESSIONS_PER_BATCH).map((g) =>
          range(0, 100).map((n) => {
            const s = g * SESSIONS_PER_BATCH + (n % SESSIONS_PER_BATCH);
            const i = Math.floor(n / SESSIONS_PER_BATCH);
            return { body: { q, s, i }, sessionId: sessionIdOf(q, s), messageId: `${q}-${s}-${i}` };
          }),
        );
        const sendBatch = async (messages: (typeof batches)[number]) => {
          const reply = await api('POST', `/queues/${name}/messages/batch`, { messages });
          expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(201);
          const results = reply.body.results as { sequenceNumber: string }[];
          results.forEach((r, k) => sent.set(r.sequenceNumber, messages[k]!.body));
        };
        for (let b = 0; b < batches.length; b += 2) await Promise.all(batches.slice(b, b + 2).map(sendBatch));
      }
      expect(sent.size).toBe(TOTAL);
      const startedAt = clock.now();

      // act
      let tick = 0;
      const holders = new Map<string, number>(); // "q/sessionId" -> receiver holding it now
      const intervals = new Map<string, Interval[]>();
      const delivered: (Received & { receiver: number })[] = [];
      const processed = new Map<string, number[]>(); // "q/sessionId" -> message indexes in processing order
      const completedSeqs: string[] = [];
      const failures: string[] = [];
      const accepts = new Array<number>(RECEIVERS).fill(0);
      let idleRounds = 0;
      let stuck = false;

      const hold = async (id: number, q: number, sessionId: string, sessionLockToken: string) => {
        const key = `${q}/${sessionId}`;
        const other = holders.get(key);
        if (other !== undefined) failures.push(`receiver ${id} accepted ${key} while receiver ${other} holds it`);
        holders.set(key, id);
        const interval: Interval = { receiver: id, from: ++tick, to: Infinity };
        intervals.set(key, [...(intervals.get(key) ?? []), interval]);
        const t = target(queues[q]!.name);
        try {
          for (let round = 0; round < HOLD_ROUNDS; round++) {
            const messages = (await broker.receiveFromSession(t, sessionId, { sessionLockToken, maxMessages: BATCH })) as unknown as Received[];
            if (messages.length === 0) break;
            delivered.push(...messages.map((m) => ({ ...m, receiver: id })));
            const toComplete: Received[] = [];
            let abandonFrom = -1;
            for (const [k, m] of messages.entries()) {
              if (m.sessionId !== sessionId) failures.push(`receiver ${id} got a message of ${m.sessionId} from ${key}`);
              if (abandons(m.body.s) && m.body.i === ABANDONED_INDEX && m.deliveryCount === 1) {
                abandonFrom = k;
                break;
              }
              toComplete.push(m);
            }
            // Processing order is the order in which the receiver hands messages to its work.
            const list = processed.get(key) ?? [];
            list.push(...toComplete.map((m) => m.body.i));
            processed.set(key, list);
            if (toComplete.length) {
              const results = await broker.settleBatch(t, 'complete', { lockTokens: toComplete.map((m) => m.lockToken) });
              for (const [k, r] of results.entries()) {
                if ('ok' in r && r.lockToken === toComplete[k]!.lockToken) completedSeqs.push(toComplete[k]!.sequenceNumber);
                else failures.push(`receiver ${id} complete in ${key}: ${JSON.stringify(r)}`);
              }
            }
            if (abandonFrom >= 0) {
              for (const m of messages.slice(abandonFrom)) await broker.settle(t, m.sequenceNumber, 'abandon', { lockToken: m.lockToken });
              break; // let another receiver take the session over
            }
          }
        } finally {
          interval.to = ++tick;
          holders.delete(key);
          await broker.releaseSession(t, sessionId, { sessionLockToken });
        }
      };

      const receiver = async (id: number) => {
        let turn = id;
        while (completedSeqs.length < TOTAL && !stuck && failures.length === 0) {
          let accepted = false;
          for (let k = 0; k < queues.length && !accepted; k++) {
            const q = (turn + k) % queues.length;
            try {
              const session = await broker.acceptSession(target(queues[q]!.name), {});
              accepted = true;
              accepts[id]!++;
              idleRounds = 0;
              await hold(id, q, session.sessionId, session.sessionLockToken);
            } catch (e) {
              if (e instanceof BrokerError && e.code === 'ServiceTimeout') continue;
              failures.push(`receiver ${id} on ${queues[q]!.name}: ${e instanceof BrokerError ? `${e.code} ${e.message}` : String(e)}`);
              return;
            }
          }
          turn++;
          if (!accepted) {
            // Every session left is held by someone else, or the messages are gone: wait a little.
            if (holders.size === 0 && ++idleRounds > 50) stuck = true;
            await pause(5);
          }
        }
      };
      await Promise.all(Array.from({ length: RECEIVERS }, (_, i) => receiver(i)));
      const finalAccepts = await Promise.all(
        queues.map((q) =>
          broker.acceptSession(target(q.name), {}).then(
            (s) => `accepted ${s.sessionId}`,
            (e: unknown) => (e instanceof BrokerError ? e.code : String(e)),
          ),
        ),
      );
      const finalPeeks = await Promise.all(queues.map((q) => api('GET', `/queues/${q.name}/messages?maxMessages=100`)));

      // assess
      expect(failures).toEqual([]);
      expect(stuck).toBe(false);
      expect(clock.now()).toBe(startedAt); // no lock could have lapsed
      // none lost, none processed twice
      expect(completedSeqs).toHaveLength(TOTAL);
      expect(new Set(completedSeqs)).toEqual(new Set(sent.keys()));
      // in order within each session, across its holders
      const sessionKeys = queues.flatMap((_, q) => Array.from({ length: SESSIONS_PER_QUEUE }, (__, s) => `${q}/${sessionIdOf(q, s)}`));
      const inOrder = Array.from({ length: MESSAGES_PER_SESSION }, (_, i) => i);
      for (const key of sessionKeys) expect(processed.get(key), key).toEqual(inOrder);
      // N3: delivered in sequence order; an abandoned message (and the rest of its batch) comes
      // again next, its delivery count up by one
      for (const key of sessionKeys) {
        const q = Number(key.slice(0, key.indexOf('/')));
        const sessionId = key.slice(key.indexOf('/') + 1);
        const ofSession = delivered.filter((d) => d.body.q === q && d.sessionId === sessionId);
        const indexes = ofSession.map((d) => d.body.i);
        const counts = ofSession.map((d) => d.deliveryCount);
        if (!abandons(ofSession[0]!.body.s)) {
          expect(indexes, key).toEqual(inOrder);
          expect(counts, key).toEqual(inOrder.map(() => 1));
        } else {
          const again = counts.indexOf(2); // the first pass delivered 0 .. again-1
          expect(again, key).toBeGreaterThan(ABANDONED_INDEX);
          expect(indexes, key).toEqual([...range(0, again), ...range(ABANDONED_INDEX, MESSAGES_PER_SESSION)]);
          expect(counts, key).toEqual([...range(0, again).map(() => 1), ...range(ABANDONED_INDEX, MESSAGES_PER_SESSION).map((i) => (i < again ? 2 : 1))]);
        }
        for (const d of ofSession) expect(sent.get(d.sequenceNumber), key).toEqual(d.body);
      }
      // one holder at a time: the intervals of each session do not overlap
      for (const [key, list] of intervals) {
        const sorted = [...list].sort((a, b) => a.from - b.from);
        for (let k = 1; k < sorted.length; k++)
          expect(sorted[k]!.from, `${key}: holders ${sorted[k - 1]!.receiver} and ${sorted[k]!.receiver}`).toBeGreaterThan(sorted[k - 1]!.to);
      }
      expect(intervals.size).toBe(sessionKeys.length);
      expect([...intervals.values()].every((list) => list.length >= MESSAGES_PER_SESSION / (BATCH * HOLD_ROUNDS))).toBe(true); // sessions changed hands
      expect(accepts.filter((n) => n > 0).length).toBeGreaterThan(1); // the work was shared
      expect(finalAccepts).toEqual(queues.map(() => 'ServiceTimeout'));
      for (const peek of finalPeeks) expect(peek.body.messages).toEqual([]);
    },
  );
});
