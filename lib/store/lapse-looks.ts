/**
 * Looks at a positioned partition for locks that lapsed in a window, for the waiting
 * consumers' hints (H1; notifications/hints.ts `hintLapsedLocks`, once a minute for watched
 * entities only). A lapse writes nothing at that moment, on a positioned partition as in
 * today's layout: a ticket's lapse is its entry's lock end `u` on the counter item
 * (tickets.ts), a cursor lease's its sort key (leases.ts `leaseKey`). Nothing here writes, and
 * every read is eventually consistent (half the units): a stale replica may miss a lapse that
 * just happened (the next minute's window does not look back, so that hint is lost, which H1
 * allows: the client's fallback poll finds the message) or show a lock as still held.
 *
 * A lapse is only worth a hint when the lock still holds a message: a ticket or lease whose
 * messages were all completed stays until a later take prunes it or its TTL (tickets.ts
 * `noteTicketSettled`'s prune; leases.ts `LEASE_TTL_MS`), and a hint for it would send every
 * waiting consumer to an empty receive. So the positions of a lock lapsed in the window are
 * read (`anyMessageAt`), only then.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { queryPages } from './query.js';
import { leasePk, lapsedLeasesBound, padPosition, padTime, positionCounterKey, positionOfSk } from './keys.js';
import type { LeaseItem } from './leases.js';
import type { PositionedItem, PositionStore } from './positions.js';
import { counterView, type CounterView } from './tickets.js';

/**
 * The partition's counter item (`positionCounterKey`): its tickets in flight and its `back`
 * numbers. One GetItem, eventually consistent: half a read unit (the item is small: about 45
 * bytes a ticket in flight). No condition, no write.
 */
export async function lookAtCounter(ctx: PositionStore, partitionPk: string): Promise<CounterView> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk) }));
  return counterView(out.Item as Record<string, unknown> | undefined);
}

/**
 * The partition's cursor leases whose lock ended in (`since`, `now`]. Key: `leasePk(partition
 * pk)`, sort keys from `padTime(since + 1)` to `lapsedLeasesBound(now)`. One Query, eventually
 * consistent: half a read unit while none lapsed in the window (the usual case), whatever
 * leases are held or lapsed before it. No condition, no write.
 */
export async function leasesLapsedBetween(ctx: PositionStore, partitionPk: string, since: number, now: number): Promise<LeaseItem[]> {
  if (now <= since) return [];
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': leasePk(partitionPk), ':from': `${padTime(since + 1)}/`, ':to': lapsedLeasesBound(now) },
    }),
  );
  return (out.Items ?? []) as LeaseItem[];
}

/** Positions a page of `anyMessageAt` reads at most: a lapsed lock's first live message ends the look, so a full batch of 1 KB messages costs a read unit or two, not its whole size. */
const PAGE = 8;

/**
 * Whether any of `positions` holds a message (not a tombstone, not a `done` marker, not
 * absent: completed on a cursor-claimed partition). Key: the partition's positions, one Query
 * per run of consecutive positions, pages of `PAGE` items, eventually consistent; stops at the
 * first message. Cost: half a read unit a run whose messages are all settled (markers are small,
 * deleted messages nothing), about one more per page of live messages read. No condition, no
 * write.
 */
export async function anyMessageAt(ctx: PositionStore, partitionPk: string, positions: readonly number[]): Promise<boolean> {
  const wanted = new Set(positions);
  for (const [lo, hi] of runsOf(positions)) {
    for await (const items of queryPages<PositionedItem>(ctx, {
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
      ExpressionAttributeValues: { ':pk': partitionPk, ':lo': padPosition(lo), ':hi': padPosition(hi) },
      Limit: PAGE,
    })) {
      if (items.some((i) => wanted.has(positionOfSk(i.sk)) && !i.tomb && i.done === undefined)) return true;
    }
  }
  return false;
}

/** `positions` as runs of consecutive positions, [first, last] each, in order. */
function runsOf(positions: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const p of [...new Set(positions)].sort((a, b) => a - b)) {
    const last = runs[runs.length - 1];
    if (last && last[1] + 1 === p) last[1] = p;
    else runs.push([p, p]);
  }
  return runs;
}
