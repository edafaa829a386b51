/**
 * A model-based property (R1-R6, R9, S2-S4): a random mix of sends, peek-lock receives,
 * completes, abandons, stale settlements, clock moves that make locks run out, and
 * receive-and-delete never loses or duplicates a message. The model knows, for every
 * message sent, whether it is available, locked (with token and lockedUntil) or gone, and
 * each answer of the broker is checked against it. At the end every lock is let run out and
 * the queue drained: sent = completed + received-and-deleted + drained, with no overlap.
 * maxDeliveryCount is high so D2 (dead-lettering after too many deliveries) never applies.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
let api: ReturnType<typeof apiClient>;
let run = 0;

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'model'));
});

const LOCK_MS = 5_000;

type Action =
  | { kind: 'send'; n: number }
  | { kind: 'lock'; max: number }
  | { kind: 'receiveAndDelete'; max: number }
  | { kind: 'complete'; pick: number }
  | { kind: 'abandon'; pick: number }
  | { kind: 'batchComplete'; picks: number[] }
  | { kind: 'stale'; pick: number }
  | { kind: 'advance'; ms: number };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }).map((n) => ({ kind: 'send' as const, n })) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }).map((max) => ({ kind: 'lock' as const, max })) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 3 }).map((max) => ({ kind: 'receiveAndDelete' as const, max })) },
  { weight: 3, arbitrary: fc.nat().map((pick) => ({ kind: 'complete' as const, pick })) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: 'abandon' as const, pick })) },
  { weight: 1, arbitrary: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }).map((picks) => ({ kind: 'batchComplete' as const, picks })) },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ kind: 'stale' as const, pick })) },
  { weight: 2, arbitrary: fc.constantFrom(1_000, 3_000, 4_999, 5_000, 6_000).map((ms) => ({ kind: 'advance' as const, ms })) },
);

interface Locked {
  token: string;
  seq: string;
  until: number;
}

/** What the broker should hold, by messageId. */
class Model {
  available = new Set<string>();
  locked = new Map<string, Locked>();
  deliveries = new Map<string, number>();
  completed: string[] = [];
  receivedAndDeleted: string[] = [];
  staleTokens: { id: string; token: string; seq: string }[] = [];
  sent: string[] = [];
  seqOf = new Map<string, string>();

  /** R6: locks that have run out make their messages available again; their tokens go stale. */
  expireLocks(now: number) {
    for (const [id, l] of this.locked) {
      if (l.until <= now) {
        this.locked.delete(id);
        this.available.add(id);
        this.staleTokens.push({ id, token: l.token, seq: l.seq });
      }
    }
  }

  heldIds(): string[] {
    return [...this.locked.keys()].sort();
  }
}

const describeMsg = (m: Record<string, Json>) => `${m.messageId}#${m.sequenceNumber}`;

async function step(q: string, model: Model, a: Action, log: string[]) {
  const now = () => clock.now();
  switch (a.kind) {
    case 'send': {
      const ids = Array.from({ length: a.n }, (_, i) => `${q}-m${model.sent.length + i}`);
      const reply =
        a.n === 1
          ? await api('POST', `/queues/${q}/messages`, { body: ids[0], messageId: ids[0] })
          : await api('POST', `/queues/${q}/messages/batch`, { messages: ids.map((id) => ({ body: id, messageId: id })) });
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      const receipts = a.n === 1 ? [reply.body] : reply.body.results;
      expect(receipts.map((r: { messageId: string }) => r.messageId)).toEqual(ids);
      for (const [i, id] of ids.entries()) {
        model.sent.push(id);
        model.available.add(id);
        model.seqOf.set(id, receipts[i].sequenceNumber);
      }
      log.push(`send ${ids.join(',')}`);
      return;
    }
    case 'lock':
    case 'receiveAndDelete': {
      const mode = a.kind === 'lock' ? 'peekLock' : 'receiveAndDelete';
      const reply = await api('POST', `/queues/${q}/messages/receive`, { mode, maxMessages: a.max });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      const got = reply.body.messages as Record<string, Json>[];
      log.push(`${mode}(${a.max}) -> ${got.map(describeMsg).join(',')} [available ${[...model.available].join(',')}]`);
      // R1/R2: as many as asked for, as far as available; only available ones, each once
      expect(got.length, log.join('\n')).toBe(Math.min(a.max, model.available.size));
      const ids = got.map((m) => m.messageId as string);
      expect(new Set(ids).size).toBe(ids.length);
      for (const m of got) {
        const id = m.messageId as string;
        expect(model.available.has(id), `${id} handed out but not available\n${log.join('\n')}`).toBe(true);
        expect(m.sequenceNumber).toBe(model.seqOf.get(id));
        model.available.delete(id);
        if (mode === 'peekLock') {
          const count = (model.deliveries.get(id) ?? 0) + 1;
          model.deliveries.set(id, count);
          expect(m.deliveryCount, `R3 for ${id}`).toBe(count); // R3
          expect(Date.parse(m.lockedUntil)).toBe(now() + LOCK_MS);
          model.locked.set(id, { token: m.lockToken, seq: m.sequenceNumber, until: Date.parse(m.lockedUntil) });
        } else {
          model.receivedAndDeleted.push(id);
        }
      }
      return;
    }
    case 'complete':
    case 'abandon': {
      const held = model.heldIds();
      if (held.length === 0) return;
      const id = held[a.pick % held.length]!;
      const l = model.locked.get(id)!;
      const reply = await api('POST', `/queues/${q}/messages/${l.seq}/${a.kind}`, { lockToken: l.token });
      log.push(`${a.kind} ${id} -> ${reply.status}`);
      expect(reply.status, `${a.kind} ${id}: ${JSON.stringify(reply.body)}\n${log.join('\n')}`).toBe(204);
      model.locked.delete(id);
      model.staleTokens.push({ id, token: l.token, seq: l.seq });
      if (a.kind === 'complete') model.completed.push(id);
      else model.available.add(id);
      return;
    }
    case 'batchComplete': {
      const held = model.heldIds();
      const stale = model.staleTokens;
      if (held.length === 0 && stale.length === 0) return;
      // a mix of held tokens (ok) and stale ones (MessageLockLost), each token once
      const chosen = new Map<string, { id: string; token: string; good: boolean }>();
      for (const [i, p] of a.picks.entries()) {
        const useStale = (i % 2 === 1 || held.length === 0) && stale.length > 0;
        if (useStale) {
          const s = stale[p % stale.length]!;
          chosen.set(s.token, { id: s.id, token: s.token, good: false });
        } else if (held.length > 0) {
          const id = held[p % held.length]!;
          const l = model.locked.get(id)!;
          chosen.set(l.token, { id, token: l.token, good: true });
        }
      }
      const list = [...chosen.values()];
      const reply = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: list.map((c) => c.token) });
      log.push(`batchComplete ${list.map((c) => `${c.id}:${c.good ? 'held' : 'stale'}`).join(',')} -> ${reply.status}`);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      const results = reply.body.results as { lockToken: string; ok?: true; error?: { code: string } }[];
      expect(results.map((r) => r.lockToken)).toEqual(list.map((c) => c.token)); // R9: one result per token, in order
      for (const [i, c] of list.entries()) {
        if (c.good) {
          expect(results[i], `${c.id}\n${log.join('\n')}`).toMatchObject({ ok: true });
          const l = model.locked.get(c.id)!;
          model.locked.delete(c.id);
          model.staleTokens.push({ id: c.id, token: l.token, seq: l.seq });
          model.completed.push(c.id);
        } else {
          expect(results[i]!.error?.code, `${c.id}\n${log.join('\n')}`).toBe('MessageLockLost');
        }
      }
      return;
    }
    case 'stale': {
      if (model.staleTokens.length === 0) return;
      const s = model.staleTokens[a.pick % model.staleTokens.length]!;
      const reply = await api('POST', `/queues/${q}/messages/${s.seq}/complete`, { lockToken: s.token });
      log.push(`stale complete ${s.id} -> ${reply.status}`);
      // R5: unknown, already used or run-out tokens fail with 410 and change nothing
      expect(reply.status, `${s.id}: ${JSON.stringify(reply.body)}\n${log.join('\n')}`).toBe(410);
      expect(reply.body.error.code).toBe('MessageLockLost');
      return;
    }
    case 'advance': {
      clock.advance(a.ms);
      model.expireLocks(now());
      log.push(`advance ${a.ms}`);
      return;
    }
  }
}

describe('queue model', () => {
  it('R1-R6/R9/S4: random sends, receives, settlements and lock expiries never lose or duplicate a message', { timeout: 180_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 1, maxLength: 40 }), async (actions) => {
        // prepare: a fresh queue per run
        const q = `model${++run}`;
        const created = await api('PUT', `/queues/${q}`, { lockDuration: 'PT5S', maxDeliveryCount: 1000 });
        expect(created.status).toBe(201);
        const model = new Model();
        const log: string[] = [];

        // act: the random actions, each checked against the model as it goes
        for (const a of actions) await step(q, model, a, log);

        // assess: let every lock run out, then drain what is left
        clock.advance(LOCK_MS + 1);
        model.expireLocks(clock.now());
        const drained: string[] = [];
        for (let i = 0; i < 20; i++) {
          const reply = await api('POST', `/queues/${q}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 100 });
          expect(reply.status).toBe(200);
          if (reply.body.messages.length === 0) break;
          drained.push(...reply.body.messages.map((m: { messageId: string }) => m.messageId));
        }
        const outcomes = [...model.completed, ...model.receivedAndDeleted, ...drained];
        expect(new Set(outcomes).size, `a message came out twice\n${log.join('\n')}`).toBe(outcomes.length);
        expect([...outcomes].sort(), `a message was lost\n${log.join('\n')}`).toEqual([...model.sent].sort());
        expect([...drained].sort()).toEqual([...model.available].sort());
        const peeked = await api('GET', `/queues/${q}/messages?maxMessages=100`);
        expect(peeked.body.messages).toEqual([]);
      }),
      { numRuns: 30, endOnFailure: true },
    );
  });
});
