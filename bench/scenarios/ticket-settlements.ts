/**
 * Settlements other than complete on a ticket's token (lib/broker/positioned-settle.ts,
 * lib/store/ticket-settlements.ts) on DynamoDB Local, metered call by call, for the 1 KB JSON
 * event at positions: the counterpart of lease-settlements.ts on a ticketed queue, so the two
 * compare in one run (`npx tsx bench/focus.ts lease-settlements ticket-settlements`). Each verb
 * runs on one message of a ticket of 10 taken just before, with 10 other tickets in flight on
 * the counter item (what a renew rewrites, and what a late settlement reads). Only the verb's
 * own calls (settle.ts's entity read comes on top). `late`: the same verb past the lock end its
 * token states, on a renewed message (the counter is read to find its lock). `after`: what the
 * verb leaves to the ticket's lapse, metered as the take-back of that lapse (a renewed
 * message's own entry; the ticket whose message was abandoned), when no receive prunes it.
 */
import { summarizeCalls, type Tally } from '../capacity.js';
import { createEnv } from '../harness.js';
import { brokerContext } from '../../lib/broker/context.js';
import { requireEntity } from '../../lib/broker/entities.js';
import { abandonPositioned, abandonPositionedBatch, deadLetterPositioned, deferPositioned, renewPositioned } from '../../lib/broker/positioned-settle.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { positionCounterKey, positionedPk } from '../../lib/store/keys.js';
import { claim, entryOfToken } from '../../lib/store/leases.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import { completeTicketed, counterView, lapsedTickets, markTicketed, readTicket, takeBackTickets, takeTicket, type Ticket } from '../../lib/store/tickets.js';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { storedEvents } from './positions.js';
import type { Units } from './lease-settlements.js';

const LOCK_MS = 30_000;
const RUNS = 10;

export interface TicketSettlementsResult {
  perMessage: Record<string, Units>;
  /** What the verb leaves to a lapse: its take-back, metered. */
  after: Record<string, Units>;
}

const unitsOf = (t: Tally, n: number, last: Tally): Units => ({
  writeUnits: t.writeUnits / n,
  readUnits: t.readUnits / n,
  calls: t.requests / n,
  shape: summarizeCalls(last.calls),
});
const sum = (ts: Tally[]) =>
  ts.reduce((a, t) => ({ ...a, writeUnits: a.writeUnits + t.writeUnits, readUnits: a.readUnits + t.readUnits, requests: a.requests + t.requests }));

export async function runTicketSettlements(endpoint: string, rootKey: string, log: (line: string) => void): Promise<TicketSettlementsResult> {
  // Today's layout, named: the events are stored as today's send stores them, and the queue's
  // entity is made ticketed here, as lease-settlements.ts makes its own positioned.
  const env = await createEnv({ name: 'ticket-settlements', endpoint, tableName: 'bench_ticket_settlements', rootKey, newEntityLayout: 'index' });
  try {
    const { payloads } = await storedEvents(env, 10);
    await env.api('PUT', '/queues/settling', { lockDuration: 'PT30S', maxDeliveryCount: 100 }, 201);
    const target: ReceiveTarget = { kind: 'queue', name: 'settling', subqueue: 'active' };
    const ctx = brokerContext(env.deps);
    const entity = { ...(await requireEntity(ctx, target)), layout: 'positions' as const, ticketed: true as const };
    const pk = positionedPk(entity.eid, 'active', 0);
    await markTicketed(env.deps, pk);
    const counter = async () =>
      counterView((await env.deps.db.send(new GetCommand({ TableName: env.tableName, Key: positionCounterKey(pk), ConsistentRead: true }))).Item);
    /** Takes back every lapsed ticket and claims and completes what is in `back`, unmetered. */
    const settleAll = async () => {
      await takeBackTickets(env.deps, pk, lapsedTickets(await counter(), env.clock.now()));
      const back = await claim(env.deps, pk, 100, { lockMs: LOCK_MS });
      await Promise.all(back.messages.map((m) => completeTicketed(env.deps, pk, m.token)));
    };
    const held = async () => {
      env.meter.paused = true;
      env.clock.advance(2 * LOCK_MS + 1);
      await settleAll();
      const draw = await drawPositions(env.deps, pk, 10);
      await putAtPositions(env.deps, pk, draw, payloads);
      const took = await takeTicket(env.deps, pk, 10, { lockMs: LOCK_MS });
      const got = await readTicket(env.deps, pk, took.ticket!);
      env.meter.paused = false;
      return got.messages;
    };
    const seqOf = (token: string) => positionedSeq(entryOfToken(token)[0], 0);
    const perMessage: Record<string, Units> = {};
    const after: Record<string, Units> = {};
    const measureVerb = async (
      name: string,
      verb: (token: string) => Promise<unknown>,
      options: { late?: boolean; afterward?: (t: Ticket) => boolean } = {},
    ) => {
      const tallies: Tally[] = [];
      const laters: Tally[] = [];
      for (let run = 0; run < RUNS; run++) {
        const [m, ...rest] = await held();
        if (options.late) {
          env.meter.paused = true;
          env.clock.advance(LOCK_MS / 2);
          await renewPositioned(ctx, entity, target, seqOf(m!.token), m!.token);
          env.clock.advance(LOCK_MS / 2 + 1000);
          env.meter.paused = false;
        }
        tallies.push((await env.meter.measure(() => verb(m!.token))).tally);
        env.meter.paused = true;
        await Promise.all(rest.map((r) => completeTicketed(env.deps, pk, r.token)));
        env.meter.paused = false;
        if (options.afterward) {
          // The lapse of whatever the verb left on the counter (the ticket, a renewed entry), with nothing else lapsed.
          env.meter.paused = true;
          env.clock.advance(3 * LOCK_MS);
          const lapsed = lapsedTickets(await counter(), env.clock.now()).filter(options.afterward);
          env.meter.paused = false;
          laters.push((await env.meter.measure(() => takeBackTickets(env.deps, pk, lapsed))).tally);
        }
      }
      perMessage[name] = unitsOf(sum(tallies), RUNS, tallies.at(-1)!);
      if (laters.length > 0) after[name] = unitsOf(sum(laters), RUNS, laters.at(-1)!);
      log(`ticket-settlements: ${name} measured`);
    };
    // Ten tickets in flight beside the one settled: what the counter item carries.
    env.meter.paused = true;
    for (let i = 0; i < 10; i++) {
      const draw = await drawPositions(env.deps, pk, 10);
      await putAtPositions(env.deps, pk, draw, payloads);
      await takeTicket(env.deps, pk, 10, { lockMs: 24 * 60 * 60 * 1000 });
    }
    env.meter.paused = false;
    // The ticket's lapse, which its prune would have saved had every message been completed.
    await measureVerb('abandon', (t) => abandonPositioned(ctx, entity, target, seqOf(t), t), { afterward: () => true });
    await measureVerb('abandonWithProperty', (t) => abandonPositioned(ctx, entity, target, seqOf(t), t, { retried: true }));
    await measureVerb(
      'renew',
      async (t) => {
        await renewPositioned(ctx, entity, target, seqOf(t), t);
        env.meter.paused = true;
        await completeTicketed(env.deps, pk, t);
        env.meter.paused = false;
      },
      // The renewed message's own entry, which no receive prunes.
      { afterward: (t) => t.r !== undefined },
    );
    await measureVerb('defer', (t) => deferPositioned(ctx, entity, target, seqOf(t), t));
    await measureVerb('deadLetter', (t) => deadLetterPositioned(ctx, entity, target, seqOf(t), { lockToken: t, deadLetterReason: 'Bench' }));
    await measureVerb('abandonLate', (t) => abandonPositioned(ctx, entity, target, seqOf(t), t), { late: true });
    await measureVerb('deferLate', (t) => deferPositioned(ctx, entity, target, seqOf(t), t), { late: true });
    // A batch abandon of a whole ticket of 10, per message.
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
                got.map((m) => ({ token: m.token, seq: seqOf(m.token) })),
              ),
            )
          ).tally,
        );
      }
      perMessage.abandonBatch10 = unitsOf(sum(tallies), RUNS * 10, tallies.at(-1)!);
    }
    return { perMessage, after };
  } finally {
    env.destroy();
  }
}
