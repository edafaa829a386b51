/**
 * The sweeper (T5-T9, D2, S6), every minute: it reads only the `due` index up to now, so an
 * idle deployment costs a few empty queries; every quarter hour also the positioned queues'
 * heads, for expired messages nobody receives (positioned-expiry.ts). For each due message it re-reads the item and
 * applies the same rule as a receive would (fate/delivery.ts), guarded by the version it
 * read, so two sweepers racing, or a sweeper racing a receive, cannot duplicate a message.
 */
import { getMessage, writeMessageGuarded, type GuardedOutcome } from '../store/messages.js';
import { readDuePage } from '../store/ready-index.js';
import type { MessageItem } from '../messages/item.js';
import { allDueShards, PARKED_PK, SESSIONS_PK_PREFIX } from '../store/keys.js';
import { getParkedRecord, postponeParkedRecord, removeParkedRecord } from '../store/stream-failures.js';
import { applyParkedChange, errorText, PARK_AFTER_FAILURES, type StreamChange } from './stream.js';
import { backoffDelay } from '../backoff.js';
import { onDue } from '../fate/delivery.js';
import { type BrokerContext } from './context.js';
import { BrokerError } from '../errors.js';
import { entityResolver } from './lookup.js';
import { deadLetter, expire, unchanged } from './moves.js';
import { liveSessionLock, sweepSession } from './sessions.js';
import { boundedEach, exhausted, jobBudget, type TimeBudget } from './budget.js';
import { positionedPassDue, sweepPositionedExpiry, type PositionedSweepReport } from './positioned-expiry.js';
import { markToday } from './today-first.js';

export interface SweepReport {
  examined: number;
  expired: number;
  deadLettered: number;
  activated: number;
  rescheduled: number;
  orphans: number;
  /** Session items of named accepts that ended holding nothing (N8). */
  sessionsRemoved: number;
  raced: number;
  /** Parked stream records applied (and removed), and those that failed again and wait longer. */
  unparked: number;
  stillParked: number;
  /** False when the time budget ran out first: the next run starts where entries are still due. */
  complete: boolean;
  /** The agenda shards not walked to the end this run. */
  unfinishedShards: string[];
  /** The pass over positioned queues (T7), in the runs where it is due (`positionedPassDue`). */
  positioned?: PositionedSweepReport;
}

/** Due entries handled at once: each is its own crash-safe move, so order among them does not matter. */
export const SWEEP_CONCURRENCY = 12;

export async function sweep(ctx: BrokerContext, budget: TimeBudget = jobBudget()): Promise<SweepReport> {
  const report: SweepReport = {
    examined: 0,
    expired: 0,
    deadLettered: 0,
    activated: 0,
    rescheduled: 0,
    orphans: 0,
    sessionsRemoved: 0,
    raced: 0,
    unparked: 0,
    stillParked: 0,
    complete: true,
    unfinishedShards: [],
  };
  const resolve = entityResolver(ctx);
  /** Positioned entities whose receives this run told to read today's layout first (today-first.ts). */
  const markedToday = new Set<string>();
  const outOfTime = () => exhausted(budget);
  const startedAt = ctx.clock.now();
  for (const shard of allDueShards()) {
    let start: Record<string, unknown> | undefined;
    let finished = false;
    while (!outOfTime()) {
      const page = await readDuePage(ctx, shard, ctx.clock.now(), start);
      const rows = page.items;
      const started = await boundedEach(rows, SWEEP_CONCURRENCY, outOfTime, async (row) => {
        report.examined++;
        try {
          // Index rows carry the index keys too; the table wants its own.
          await sweepOne(ctx, { pk: row.pk, sk: row.sk }, resolve, report, markedToday);
        } catch (e) {
          // One message that keeps conflicting must not stop the sweep; it is due again next run.
          if (!(e instanceof BrokerError && e.retryable)) throw e;
          report.raced++;
        }
      });
      // A page cut short is read again next run: what was moved is no longer due.
      if (started < rows.length) break;
      start = page.next;
      if (!start) {
        finished = true;
        break;
      }
    }
    if (!finished) report.unfinishedShards.push(shard);
  }
  report.complete = report.unfinishedShards.length === 0;
  // Positioned messages are on no agenda (positioned-expiry.ts): their queues are looked at now and then.
  if (positionedPassDue(startedAt) && !outOfTime()) {
    report.positioned = await sweepPositionedExpiry(ctx, budget);
    if (!report.positioned.complete) report.complete = false;
  }
  return report;
}

async function sweepOne(
  ctx: BrokerContext,
  key: { pk: string; sk: string },
  resolve: ReturnType<typeof entityResolver>,
  report: SweepReport,
  markedToday: Set<string>,
) {
  if (key.pk === PARKED_PK) {
    await retryParked(ctx, key.sk, report);
    return;
  }
  if (key.pk.startsWith(SESSIONS_PK_PREFIX)) {
    // N8: a named accept's session item, its lock ended: removed if it holds nothing.
    const done = await sweepSession(ctx, key, resolve);
    if (done === 'removed') report.sessionsRemoved++;
    else if (done === 'raced') report.raced++;
    else if (done === 'later') report.rescheduled++;
    return;
  }
  const item = await getMessage(ctx, key, true);
  if (!item) return;
  const entity = await resolve(item.entity, item.eid);
  const guard = unchanged(item);
  if (!entity) {
    // E4: an orphan of a deleted entity is never delivered; the reaper would remove it anyway.
    await raceTolerant(writeMessageGuarded(ctx, { Delete: { Key: key } }, guard), report);
    report.orphans++;
    return;
  }
  // A session message is locked while its session lock is (N4): its own lockedUntil only
  // records when it was received, and a message its session's record holds has none at all
  // (met here at its expiry, its `ttl` maybe removed by a renewal): the session says whether
  // expiry or D2 may act (T5, N6). A scheduled one is neither, so nothing is read for it.
  const asked = item.sessionId !== undefined && item.subqueue === 'active' && (item.slk !== undefined || item.state === 'Active');
  const lockedUntil = asked ? ((await liveSessionLock(ctx, item)) ?? null) : item.lockedUntil;
  const now = ctx.clock.now();
  const outcome = onDue({ ...item, lockedUntil, inDeadLetter: item.subqueue !== 'active' }, entity.maxDeliveryCount, now);
  switch (outcome.kind) {
    case 'expire':
      if (await expire(ctx, entity, item, guard)) report.expired++;
      else report.raced++;
      return;
    case 'deadLetter':
      if (await deadLetter(ctx, entity, item, guard, outcome)) report.deadLettered++;
      else report.raced++;
      return;
    // Counted only when made: another run that moved it first counts it (a race, here).
    case 'activate':
      // S6, R2: on a positioned queue it waits in today's layout, which receives read first from
      // now on (today-first.ts). Marked before the activation: a mark refused leaves both to the next run.
      if (item.subqueue === 'active' && !markedToday.has(entity.eid)) {
        if (!(await markToday(ctx, entity))) {
          report.raced++;
          return;
        }
        markedToday.add(entity.eid);
      }
      if (await reschedule(ctx, item, outcome.nextDueAt, report, true)) report.activated++;
      return;
    case 'reschedule':
      if (await reschedule(ctx, item, outcome.at, report, false)) report.rescheduled++;
      return;
    default:
      return;
  }
}

/** A parked record that fails again is tried 1-2 minutes later, then further apart, at most an hour. */
const PARKED_RETRY_BACKOFF = { baseMs: 2 * 60_000, capMs: 60 * 60_000 };

/**
 * A stream record the consumer parked (stream.ts): applied through the consumer's own markers,
 * so once however often it was tried, then removed; or, failing again, due again later.
 */
async function retryParked(ctx: BrokerContext, eventId: string, report: SweepReport) {
  const parked = await getParkedRecord(ctx, eventId);
  if (!parked) return; // applied and removed by another run
  let failure: string | undefined;
  try {
    failure = await applyParkedChange(ctx, parked.record as unknown as StreamChange);
  } catch (e) {
    failure = errorText(e);
  }
  if (failure === undefined) {
    await removeParkedRecord(ctx, eventId);
    report.unparked++;
    return;
  }
  const wait = backoffDelay(parked.attempts - PARK_AFTER_FAILURES, PARKED_RETRY_BACKOFF);
  await postponeParkedRecord(ctx, eventId, ctx.clock.now() + wait, failure);
  report.stillParked++;
}

/** Moves the agenda entry to `at` (or drops it); `activate` also turns Scheduled into Active (S6 counts). False when raced. */
async function reschedule(ctx: BrokerContext, item: MessageItem, at: number | null, report: SweepReport, activate: boolean): Promise<boolean> {
  const guard = unchanged(item);
  const sets = ['v = :next'];
  const values: Record<string, unknown> = { ...guard.values, ':next': (item.v ?? 0) + 1 };
  const names: Record<string, string> = {};
  if (activate) {
    sets.push('#state = :active');
    names['#state'] = 'state';
    values[':active'] = 'Active';
  }
  if (at !== null) {
    sets.push('dsk = :at');
    values[':at'] = at;
  }
  const update = {
    Key: { pk: item.pk, sk: item.sk },
    UpdateExpression: `SET ${sets.join(', ')}${at === null ? ' REMOVE dpk, dsk' : ''}`,
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  };
  return raceTolerant(writeMessageGuarded(ctx, { Update: update }, guard), report);
}

async function raceTolerant(write: Promise<GuardedOutcome>, report: SweepReport): Promise<boolean> {
  if ((await write) === 'written') return true;
  report.raced++;
  return false;
}
