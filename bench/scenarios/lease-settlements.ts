/**
 * The positioned layout's settlements other than complete (lib/broker/positioned-settle.ts,
 * lib/store/lease-settlements.ts; step 3, not yet behind the API) on DynamoDB Local, metered
 * call by call, for the 1 KB JSON event stored as a positioned item (positions.ts
 * `storedEvents`): the units of one abandon, abandon with a property changed, renew, defer,
 * dead-letter, a batch abandon of 10 (per message), and D2 at a claim (a message taken back
 * past its last delivery, dead-lettered instead of handed out). Each verb runs on one message
 * of a lease of 10 claimed just before, with 10 such leases held in the partition (the leases
 * a settlement reads to find its lock end). Only the verb's own calls: settle.ts's entity read
 * (half a unit, shared by a batch) comes on top; the claims after (the queued message taken
 * again, a renewed lease's delete once lapsed) are measured as `after`.
 */
import { summarizeCalls, type Tally } from '../capacity.js';
import { createEnv } from '../harness.js';
import { brokerContext } from '../../lib/broker/context.js';
import { requireEntity } from '../../lib/broker/entities.js';
import {
  abandonPositioned,
  abandonPositionedBatch,
  deadLetterPositioned,
  deferPositioned,
  handOutOrDeadLetter,
  renewPositioned,
} from '../../lib/broker/positioned-settle.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { positionedPk } from '../../lib/store/keys.js';
import { claim, completeAtPosition, entryOfToken } from '../../lib/store/leases.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import { storedEvents } from './positions.js';

const LOCK_MS = 30_000;
const RUNS = 10;

export type Units = { writeUnits: number; readUnits: number; calls: number; shape: string[] };
export interface LeaseSettlementsResult {
  perMessage: Record<string, Units>;
  /** The next claim's extra cost for what the verb left: the abandoned message taken again, a renewed lease deleted once lapsed. */
  after: Record<string, Units>;
}

/** Units per message, and the calls of the last run as the bench prints them. */
const unitsOf = (t: Tally, n: number, last: Tally): Units => ({
  writeUnits: t.writeUnits / n,
  readUnits: t.readUnits / n,
  calls: t.requests / n,
  shape: summarizeCalls(last.calls),
});

export async function runLeaseSettlements(endpoint: string, rootKey: string, log: (line: string) => void): Promise<LeaseSettlementsResult> {
  // Today's layout, named: the events are stored as today's send stores them, and the queue's
  // entity is made positioned (cursor-claimed) here, not by the deployment's default.
  const env = await createEnv({ name: 'lease-settlements', endpoint, tableName: 'bench_lease_settlements', rootKey, newEntityLayout: 'index' });
  try {
    const { payloads } = await storedEvents(env, 10);
    await env.api('PUT', '/queues/settling', { lockDuration: 'PT30S', maxDeliveryCount: 2 }, 201);
    const target: ReceiveTarget = { kind: 'queue', name: 'settling', subqueue: 'active' };
    const ctx = brokerContext(env.deps);
    const entity = { ...(await requireEntity(ctx, target)), layout: 'positions' as const };
    const pk = positionedPk(entity.eid, 'active', 0);
    const perMessage: Record<string, Units> = {};
    const after: Record<string, Units> = {};
    const held = async () => {
      env.meter.paused = true;
      // The last run's lease lapses and this claim deletes it (taking back what it left), so the leases read stay the 10 below and this one.
      env.clock.advance(LOCK_MS + 1);
      await claim(env.deps, pk, 10, { lockMs: LOCK_MS }).then((c) => Promise.all(c.messages.map((m) => completeAtPosition(env.deps, pk, m.token))));
      const draw = await drawPositions(env.deps, pk, 10);
      await putAtPositions(env.deps, pk, draw, payloads);
      const got = await claim(env.deps, pk, 10, { lockMs: LOCK_MS });
      env.meter.paused = false;
      return got;
    };
    const seqOf = (token: string) => positionedSeq(entryOfToken(token)[0], 0);
    const measureVerb = async (name: string, verb: (token: string) => Promise<unknown>, next?: () => Promise<unknown>) => {
      const tallies: Tally[] = [];
      const nexts: Tally[] = [];
      for (let run = 0; run < RUNS; run++) {
        const got = await held();
        const [m, ...rest] = got.messages;
        tallies.push((await env.meter.measure(() => verb(m!.token))).tally);
        if (next) nexts.push((await env.meter.measure(next)).tally);
        env.meter.paused = true;
        await Promise.all(rest.map((r) => completeAtPosition(env.deps, pk, r.token)));
        env.meter.paused = false;
      }
      const sum = (ts: Tally[]) =>
        ts.reduce((a, t) => ({ ...a, writeUnits: a.writeUnits + t.writeUnits, readUnits: a.readUnits + t.readUnits, requests: a.requests + t.requests }));
      perMessage[name] = unitsOf(sum(tallies), RUNS, tallies.at(-1)!);
      if (next) after[name] = unitsOf(sum(nexts), RUNS, nexts.at(-1)!);
      log(`lease-settlements: ${name} measured`);
    };
    // Ten leases held beside the one settled: what a settlement reads to find its lock end.
    env.meter.paused = true;
    for (let i = 0; i < 10; i++) {
      const draw = await drawPositions(env.deps, pk, 10);
      await putAtPositions(env.deps, pk, draw, payloads);
      await claim(env.deps, pk, 10, { lockMs: 24 * 60 * 60 * 1000 });
    }
    env.meter.paused = false;
    const takeAndComplete = async () => {
      const again = await claim(env.deps, pk, 1, { lockMs: LOCK_MS });
      await Promise.all(again.messages.map((m) => completeAtPosition(env.deps, pk, m.token)));
    };
    await measureVerb('abandon', (t) => abandonPositioned(ctx, entity, target, seqOf(t), t));
    await measureVerb('abandonWithProperty', (t) => abandonPositioned(ctx, entity, target, seqOf(t), t, { retried: true }), takeAndComplete);
    await measureVerb('renew', async (t) => {
      await renewPositioned(ctx, entity, target, seqOf(t), t);
      env.meter.paused = true;
      await completeAtPosition(env.deps, pk, t);
      env.meter.paused = false;
    });
    await measureVerb('defer', (t) => deferPositioned(ctx, entity, target, seqOf(t), t));
    await measureVerb('deadLetter', (t) => deadLetterPositioned(ctx, entity, target, seqOf(t), { lockToken: t, deadLetterReason: 'Bench' }));
    // A batch abandon of a whole lease of 10, per message.
    {
      const tallies: Tally[] = [];
      for (let run = 0; run < RUNS; run++) {
        const got = await held();
        tallies.push(
          (
            await env.meter.measure(() =>
              abandonPositionedBatch(
                ctx,
                entity,
                target,
                got.messages.map((m) => ({ token: m.token, seq: seqOf(m.token) })),
              ),
            )
          ).tally,
        );
        env.meter.paused = true;
        const again = await claim(env.deps, pk, 10, { lockMs: LOCK_MS });
        await Promise.all(again.messages.map((m) => completeAtPosition(env.deps, pk, m.token)));
        env.meter.paused = false;
      }
      const sum = tallies.reduce((a, t) => ({
        ...a,
        writeUnits: a.writeUnits + t.writeUnits,
        readUnits: a.readUnits + t.readUnits,
        requests: a.requests + t.requests,
      }));
      perMessage.abandonBatch10 = unitsOf(sum, RUNS * 10, tallies.at(-1)!);
    }
    // D2 at a claim: the message's second lock lapsed (maxDeliveryCount 2); the claim that takes it back dead-letters it.
    {
      const tallies: Tally[] = [];
      for (let run = 0; run < RUNS; run++) {
        env.meter.paused = true;
        const draw = await drawPositions(env.deps, pk, 1);
        await putAtPositions(env.deps, pk, draw, [payloads[0]!]);
        await claim(env.deps, pk, 1, { lockMs: LOCK_MS });
        env.clock.advance(LOCK_MS + 1);
        await claim(env.deps, pk, 1, { lockMs: LOCK_MS });
        env.clock.advance(LOCK_MS + 1);
        const third = await claim(env.deps, pk, 1, { lockMs: LOCK_MS });
        env.meter.paused = false;
        if (third.messages[0]?.deliveryCount !== 3) throw new Error('lease-settlements: D2 run did not reach its third claim');
        tallies.push((await env.meter.measure(() => handOutOrDeadLetter(ctx, entity, third))).tally);
      }
      const sum = tallies.reduce((a, t) => ({
        ...a,
        writeUnits: a.writeUnits + t.writeUnits,
        readUnits: a.readUnits + t.readUnits,
        requests: a.requests + t.requests,
      }));
      perMessage.maxDeliveryAtClaim = unitsOf(sum, RUNS, tallies.at(-1)!);
    }
    return { perMessage, after };
  } finally {
    env.destroy();
  }
}
