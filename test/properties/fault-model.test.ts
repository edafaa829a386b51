/**
 * A model-based property of R10 (with R1-R6, N2-N4): a random mix of sends, receives in both
 * modes (various maxMessages, small and large bodies), completes, abandons, renewals, clock
 * moves that let locks lapse, and session accepts and receives, while the store meets random
 * faults (throttles through the SDK's retries, conflicting transactions, an index that lags its
 * table: test/support/dynamo-faults.ts). Whatever the faults:
 * - no message is handed out while it is under another valid lock (never doubled);
 * - a message's delivery count is the number of times it was handed out under a lock, so no
 *   receive locked a message it did not hand out (never stranded);
 * - at the end every message sent is completed, received-and-deleted or drained, exactly once
 *   (never lost).
 * Sends and the final checks go through a healthy client; everything else meets the faults.
 * An answer is 200 or a retryable 503: never a 502 (an answer past Lambda's limit, whose
 * messages would be lost) nor a 500.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { faultyStore, seededRandom, type StoreFaultPlan } from '../support/dynamo-faults.js';

const clock = new ManualClock();
let healthy: ReturnType<typeof apiClient>;
let faulty: ReturnType<typeof apiClient>;
const plan: StoreFaultPlan = {};
let reseed: (seed: number) => void;
let sweeper: ReturnType<typeof createSweeperHandler>;
let run = 0;

beforeAll(async () => {
  const deps = await testDeps(clock, 'fault-model');
  let random = seededRandom(1);
  reseed = (seed) => {
    random = seededRandom(seed);
  };
  const store = faultyStore(deps.db, plan, { fastRetries: true, random: () => random() });
  healthy = apiClient(deps);
  faulty = apiClient({ ...deps, db: store.db });
  sweeper = createSweeperHandler({ ...deps, db: store.db });
});

const LOCK_MS = 10_000;
const SESSIONS = ['s0', 's1'];
const LARGE = 150 * 1024;

type Target = 'queue' | 'sessions';
type Action =
  | { kind: 'send'; to: Target; n: number; large: boolean; session: number }
  | { kind: 'receive'; mode: 'peekLock' | 'receiveAndDelete'; max: number }
  | { kind: 'accept'; session: number }
  | { kind: 'sessionReceive'; session: number; mode: 'peekLock' | 'receiveAndDelete'; max: number }
  | { kind: 'settle'; action: 'complete' | 'abandon'; pick: number }
  | { kind: 'renew'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'sweep' };

const mode = fc.constantFrom<'peekLock' | 'receiveAndDelete'>('peekLock', 'peekLock', 'receiveAndDelete');
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({ to: fc.constantFrom<Target>('queue', 'sessions'), n: fc.integer({ min: 1, max: 4 }), large: fc.nat(3).map((n) => n === 0), session: fc.nat(1) })
      .map((r) => ({ kind: 'send' as const, ...r })),
  },
  { weight: 4, arbitrary: fc.record({ mode, max: fc.constantFrom(1, 3, 10, 30) }).map((r) => ({ kind: 'receive' as const, ...r })) },
  { weight: 2, arbitrary: fc.nat(1).map((session) => ({ kind: 'accept' as const, session })) },
  {
    weight: 3,
    arbitrary: fc.record({ session: fc.nat(1), mode, max: fc.constantFrom(1, 5, 30) }).map((r) => ({ kind: 'sessionReceive' as const, ...r })),
  },
  {
    weight: 4,
    arbitrary: fc
      .record({ action: fc.constantFrom<'complete' | 'abandon'>('complete', 'complete', 'abandon'), pick: fc.nat() })
      .map((r) => ({ kind: 'settle' as const, ...r })),
  },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ kind: 'renew' as const, pick })) },
  { weight: 2, arbitrary: fc.constantFrom(2_000, 6_000, LOCK_MS, LOCK_MS + 1).map((ms) => ({ kind: 'advance' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'sweep' as const }) },
);

const faultsArb = fc.record({
  seed: fc.integer(),
  throttleRate: fc.constantFrom(0, 0.05, 0.15),
  attempts: fc.constantFrom(1, 2, 3),
  conflictRate: fc.constantFrom(0, 0.05, 0.15),
  indexLag: fc.constantFrom(0, 0, 1, 3),
  // 2: D2 moves messages to the dead-letter subqueue under the faults too.
  maxDeliveryCount: fc.constantFrom(2, 1000),
});

interface Lock {
  token: string;
  seq: string;
  until: number;
  target: Target;
}

class Model {
  constructor(readonly maxDeliveryCount: number) {}
  sent: string[] = [];
  where = new Map<string, Target>();
  locked = new Map<string, Lock>();
  deliveries = new Map<string, number>();
  completed: string[] = [];
  receivedAndDeleted: string[] = [];
  sessions = new Map<string, { token: string; until: number }>();
  /** Session locks that an accept answered with a failure may still have taken, until when. */
  ghostUntil = new Map<string, number>();

  lapse(now: number) {
    for (const [id, l] of this.locked) if (l.until <= now) this.locked.delete(id);
    for (const [sid, s] of this.sessions) if (s.until <= now) this.sessions.delete(sid);
  }
}

const dlq = (path: string) => `${path}/$deadletterqueue`;
const paths: Record<Target, (q: string) => string> = { queue: (q) => `/queues/${q}-q`, sessions: (q) => `/queues/${q}-s` };

/** A store fault answers 503 (retryable) and changes nothing; anything else must be `ok`. */
function expectAnswer(reply: { status: number; body: Json }, ok: number[], log: string[]): boolean {
  if (reply.status === 503) {
    expect(reply.body.error.retryable).toBe(true);
    return false;
  }
  expect(ok, `${reply.status} ${String(JSON.stringify(reply.body)).slice(0, 300)}\n${log.join('\n')}`).toContain(reply.status);
  return true;
}

function handOut(model: Model, target: Target, messages: Json[], m: 'peekLock' | 'receiveAndDelete', log: string[]) {
  const now = clock.now();
  const ids = messages.map((x) => x.messageId as string);
  expect(new Set(ids).size, `handed out twice in one answer\n${log.join('\n')}`).toBe(ids.length);
  for (const x of messages) {
    const id = x.messageId as string;
    expect(model.where.get(id), `${id} is not a message of ${target}`).toBe(target);
    const held = model.locked.get(id);
    expect(held === undefined || held.until <= now, `${id} handed out while locked until ${held?.until} (now ${now})\n${log.join('\n')}`).toBe(true);
    expect(model.completed.includes(id) || model.receivedAndDeleted.includes(id), `${id} handed out after it was settled\n${log.join('\n')}`).toBe(false);
    if (m === 'peekLock') {
      model.deliveries.set(id, (model.deliveries.get(id) ?? 0) + 1);
      expect(model.deliveries.get(id), `D2: ${id} delivered past maxDeliveryCount\n${log.join('\n')}`).toBeLessThanOrEqual(model.maxDeliveryCount);
      model.locked.set(id, { token: x.lockToken, seq: x.sequenceNumber, until: Date.parse(x.lockedUntil), target });
    } else {
      model.receivedAndDeleted.push(id);
    }
  }
}

async function step(q: string, model: Model, a: Action, log: string[]) {
  const now = clock.now();
  switch (a.kind) {
    case 'send': {
      const ids = Array.from({ length: a.n }, (_, i) => `${q}-m${model.sent.length + i}`);
      const sessionId = a.to === 'sessions' ? SESSIONS[a.session] : undefined;
      const body = (id: string) => (a.large ? `${id}:${'x'.repeat(LARGE)}` : id);
      const reply = await healthy('POST', `${paths[a.to](q)}/messages/batch`, { messages: ids.map((id) => ({ body: body(id), messageId: id, sessionId })) });
      expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(201);
      for (const id of ids) {
        model.sent.push(id);
        model.where.set(id, a.to);
      }
      log.push(`send ${a.to} ${ids.join(',')}${a.large ? ' (large)' : ''}`);
      return;
    }
    case 'receive': {
      const reply = await faulty('POST', `${paths.queue(q)}/messages/receive`, { mode: a.mode, maxMessages: a.max });
      log.push(`receive ${a.mode}(${a.max}) -> ${reply.status} ${reply.status === 200 ? reply.body.messages.map((m: Json) => m.messageId).join(',') : ''}`);
      if (expectAnswer(reply, [200], log)) handOut(model, 'queue', reply.body.messages, a.mode, log);
      return;
    }
    case 'accept': {
      const sid = SESSIONS[a.session]!;
      const held = model.sessions.get(sid);
      if (held && held.until > now) return;
      const reply = await faulty('POST', `${paths.sessions(q)}/sessions/accept`, { sessionId: sid });
      log.push(`accept ${sid} -> ${reply.status}`);
      if (reply.status === 409 && (model.ghostUntil.get(sid) ?? 0) > now) return;
      if (!expectAnswer(reply, [200], log)) {
        // A failed accept may have taken the lock before it failed.
        model.ghostUntil.set(sid, now + LOCK_MS);
        return;
      }
      model.sessions.set(sid, { token: reply.body.sessionLockToken, until: Date.parse(reply.body.lockedUntil) });
      return;
    }
    case 'sessionReceive': {
      const sid = SESSIONS[a.session]!;
      const held = model.sessions.get(sid);
      if (!held || held.until <= now) return;
      const reply = await faulty('POST', `${paths.sessions(q)}/sessions/${sid}/receive`, { sessionLockToken: held.token, mode: a.mode, maxMessages: a.max });
      log.push(
        `session ${sid} receive ${a.mode}(${a.max}) -> ${reply.status} ${reply.status === 200 ? reply.body.messages.map((m: Json) => m.messageId).join(',') : ''}`,
      );
      if (!expectAnswer(reply, [200], log)) return;
      for (const m of reply.body.messages) expect(m.sessionId).toBe(sid);
      handOut(model, 'sessions', reply.body.messages, a.mode, log);
      return;
    }
    case 'settle':
    case 'renew': {
      const held = [...model.locked.entries()].filter(([, l]) => l.until > now).sort(([x], [y]) => (x < y ? -1 : 1));
      if (held.length === 0) return;
      const [id, l] = held[a.pick % held.length]!;
      // A session message's lock is its session's: renewed with the session, not on its own.
      if (a.kind === 'renew' && l.target === 'sessions') return;
      const action = a.kind === 'renew' ? 'renew-lock' : a.action;
      const reply = await faulty('POST', `${paths[l.target](q)}/messages/${l.seq}/${action}`, { lockToken: l.token });
      log.push(`${action} ${id} -> ${reply.status}`);
      if (!expectAnswer(reply, a.kind === 'renew' ? [200] : [204], log)) return;
      if (a.kind === 'renew') {
        model.locked.set(id, { ...l, until: Date.parse(reply.body.lockedUntil) });
        return;
      }
      model.locked.delete(id);
      if (a.action === 'complete') model.completed.push(id);
      return;
    }
    case 'advance': {
      clock.advance(a.ms);
      model.lapse(clock.now());
      log.push(`advance ${a.ms}`);
      return;
    }
    case 'sweep': {
      // A sweep that meets a fault stops; its moves are safe to repeat (D3).
      const outcome = await sweeper().then(
        () => 'ok',
        (e: unknown) => (e as Error).name,
      );
      log.push(`sweep -> ${outcome}`);
      return;
    }
  }
}

async function peekAll(path: string): Promise<Json[]> {
  const out: Json[] = [];
  let from = '0';
  for (;;) {
    const reply = await healthy('GET', `${path}/messages?fromSequenceNumber=${from}&maxMessages=100`);
    expect(reply.status).toBe(200);
    if (reply.body.messages.length === 0) return out;
    out.push(...reply.body.messages);
    from = String(BigInt(reply.body.messages.at(-1).sequenceNumber) + 1n);
  }
}

async function drain(path: string, extra: Record<string, unknown> = {}): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const reply = await healthy('POST', path, { ...extra, mode: 'receiveAndDelete', maxMessages: 100 });
    expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(200);
    if (reply.body.messages.length === 0) return out;
    out.push(...reply.body.messages.map((m: Json) => m.messageId as string));
  }
}

describe('R10 model under store faults', () => {
  it(
    'R10: random receives, settlements, lock lapses and sessions under throttles, conflicts and index lag never lose, double or strand a message',
    { timeout: 120_000 },
    async () => {
      await fc.assert(
        fc.asyncProperty(faultsArb, fc.array(actionArb, { minLength: 5, maxLength: 30 }), async (faults, actions) => {
          // prepare: a queue and a session queue per run, and this run's weather
          const q = `fm${++run}`;
          for (const [target, props] of [
            ['queue', {}],
            ['sessions', { requiresSession: true }],
          ] as const) {
            const created = await healthy('PUT', paths[target](q), { lockDuration: 'PT10S', maxDeliveryCount: faults.maxDeliveryCount, ...props });
            expect(created.status).toBe(201);
          }
          reseed(faults.seed);
          plan.throttle = { rate: faults.throttleRate, attempts: faults.attempts };
          plan.conflict = { rate: faults.conflictRate };
          plan.indexLag = faults.indexLag;
          const model = new Model(faults.maxDeliveryCount);
          const log: string[] = [`faults ${JSON.stringify(faults)}`];

          // act
          try {
            for (const a of actions) await step(q, model, a, log);
          } finally {
            plan.throttle = undefined;
            plan.conflict = undefined;
            plan.indexLag = 0;
          }

          // assess: nothing stranded (every delivery was handed out), then nothing lost or doubled
          for (const path of [paths.queue(q), paths.sessions(q), dlq(paths.queue(q)), dlq(paths.sessions(q))]) {
            for (const m of await peekAll(path)) {
              expect(
                m.deliveryCount,
                `${m.messageId} was locked ${m.deliveryCount} times, handed out ${model.deliveries.get(m.messageId) ?? 0}\n${log.join('\n')}`,
              ).toBe(model.deliveries.get(m.messageId) ?? 0);
            }
          }
          clock.advance(LOCK_MS + 1);
          const drained = await drain(`${paths.queue(q)}/messages/receive`);
          for (const sid of SESSIONS) {
            const accepted = await healthy('POST', `${paths.sessions(q)}/sessions/accept`, { sessionId: sid });
            expect(accepted.status).toBe(200);
            drained.push(...(await drain(`${paths.sessions(q)}/sessions/${sid}/receive`, { sessionLockToken: accepted.body.sessionLockToken })));
          }
          // D2's moves (under the faults, or on the spot while draining) put messages here.
          for (const path of [dlq(paths.queue(q)), dlq(paths.sessions(q))]) drained.push(...(await drain(`${path}/messages/receive`)));
          const outcomes = [...model.completed, ...model.receivedAndDeleted, ...drained];
          expect(new Set(outcomes).size, `a message came out twice\n${log.join('\n')}`).toBe(outcomes.length);
          expect([...outcomes].sort(), `a message was lost\n${log.join('\n')}`).toEqual([...model.sent].sort());
        }),
        // A failure prints its seed and path. FM_SEED=<seed> replays every run from the first, in
        // one table, as CI made them: that reproduced both failures met so far. Adding
        // FM_PATH=<path> replays the failing run alone, under another queue name in a fresh table,
        // which did not (the store's faults are drawn in call order, and state differs).
        process.env.FM_SEED ? { seed: Number(process.env.FM_SEED), path: process.env.FM_PATH, endOnFailure: true } : { numRuns: 30, endOnFailure: true },
      );
    },
  );
});
