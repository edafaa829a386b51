/**
 * Tickets: taking a positioned partition's head with a write that cannot lose a race (design.md,
 * "A claim that cannot lose"). Store operations only, not yet used by the broker.
 *
 * A cursor claim (leases.ts `claim`) reads the cursor, the lapsed leases and the head, then
 * writes the cursor under its version: 16 receivers of one message each lose most of those
 * writes. A ticket is one UpdateItem of the partition's counter item (positions.ts
 * `drawPositions`' `next`, key `positionCounterKey`), beside the send's draw:
 *
 * - `taken`: the last position a ticket took (absent: none yet). The head is `taken + 1` to `next`.
 * - `t<id>`: the position before ticket `id`'s first, set from `taken` by the take itself:
 *   DynamoDB evaluates every action of an update against the item as it was before it, so
 *   `SET taken = taken + :n, t<id> = taken` records what that very write took.
 * - `u<id>`: the ticket's lease ({@link TicketEntry}): its lock end, its lock's length (so its take time), count, `nd`.
 *   There is no lease item and so no crash between a ticket and its lease: both are one write.
 *   The entries of other tickets come back with every take (ReturnValues, no read unit), so a
 *   taker sees lapsed tickets without a Query.
 *
 * What a position holds on a ticketed partition, and what its absence means. A complete does not
 * delete the message: it replaces it by a `done` marker (`completeTicketed`, the same one write
 * unit for a 1 KB item; DynamoDB's TTL removes the marker a day later, free). So a position is a
 * message, a `done` marker, a tombstone or absent, and absent means that nobody ever put
 * anything there (its sender is slow or dead) or that a void request's landed message was
 * deleted. That is what lets any holder, and any lapse, tombstone an aged empty position without
 * knowing whether another holder already delivered it: with deletes, an empty position of a
 * request spanning two tickets could be a sibling completed a moment ago, and a tombstone there
 * would void a request half delivered (S1). Every removal of a message on a ticketed partition
 * must leave the marker (the cursor's lease completes too; wiring).
 *
 * The cursor keeps its part for what is not the head: `back` (take-backs, abandons, what a holder
 * gave back) claimed by leases.ts `claim` under its version, as now. A ticketed partition's
 * cursor stands at `TICKETED`, past every position, so `claim` never takes the head
 * (`markTicketed`).
 *
 * The rules kept: R1 (a position is taken by one ticket once; a message is handed out under one
 * valid lock), R3 (a take-back of what was not handed out counts no delivery: `nd`), R6 (a
 * lapsed ticket's messages come back in `back` exactly once: the take-back removes the entry in
 * the transaction that queues them), R10 (nothing taken that is not handed out: `giveBack`),
 * S1 (a request is delivered whole or not at all, and a void one by nobody), S2 (tickets take
 * positions in the order of their draws).
 */
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { cursorKey, leasePk, padPosition, positionCounterKey, positionKey, positionOfSk } from './keys.js';
import {
  BACK_QUEUED_ADD,
  BACK_QUEUED_VALUES,
  claimIdOfToken,
  completeAtPosition,
  deliveryCountAt,
  TICKETED,
  entryOfToken,
  leaseToken,
  lockEndOfToken,
  readCursor,
  type CompleteOutcome,
  type CursorItem,
  type Entry,
} from './leases.js';
import { cancellationCodes, conditionally, isStoreBusy, itemAtRefusal, mayHaveLanded, partFailedCondition } from './outcomes.js';
import { deletePassed, HOLE_AFTER_MS, putTombstone, type PositionedItem, type PositionStore } from './positions.js';
import { queryAll } from './query.js';
import { readBack, UNREAD } from './read-back.js';
import { counterView, entryName, firstName, lapsedTickets, newTicketId, type CounterView, type Ticket, type TicketEntry } from './ticket-counter.js';

export { TICKETED };
export { counterView, entryName, firstName, lapsedTickets, newTicketId, type CounterView, type Ticket, type TicketEntry };

/**
 * Makes a partition ticketed: its cursor at `TICKETED`, so `claim` takes `back` only and the head
 * is the tickets'. Key: `cursorKey`. Condition: `attribute_not_exists(pk)` (a partition no cursor
 * claim has taken from; moving one whose cursor has a position is the migration, not built).
 * Success: true, also when it was ticketed already. Failure: false when a cursor claim owns the
 * head. Other errors throw.
 */
export async function markTicketed(ctx: PositionStore, partitionPk: string): Promise<boolean> {
  const made = await conditionally(
    ctx.db.send(
      new PutCommand({ TableName: ctx.tableName, Item: { ...cursorKey(partitionPk), pos: TICKETED, v: 1 }, ConditionExpression: 'attribute_not_exists(pk)' }),
    ),
  );
  return made !== undefined || (await readCursor(ctx, partitionPk)).pos === TICKETED;
}

export interface TakeOptions {
  lockMs: number;
  /** The ticket hands nothing out until removed (receive-and-delete, the sweeper): its take-back counts no delivery (R3). */
  undelivered?: boolean;
  /**
   * Tickets of this partition the caller settled whole (every message completed with
   * `completeTicketed` answering 'completed', or void and deleted): their entries leave the
   * counter in this take's write, at no write of their own. Never one with a complete that
   * answered 'lockLost' (a take-back may be on its way; its entry is what queues it).
   */
  prune?: readonly number[];
  /** A take of one reads the counter first (half a read unit) instead of risking a failed write on an empty head. */
  look?: boolean;
  /** Failed takes of more than one (the head moved between the read and the write) before giving up. */
  attempts?: number;
}

export interface TicketTake {
  /** Undefined when the head was empty. */
  ticket?: Ticket;
  /** The counter as the take left it (or found it): every ticket in flight, the lapsed ones among them. */
  counter: CounterView;
  /** Failed conditional writes: an empty head of a take of one (not `look`), and takes of more than one the head outran. */
  failedWrites: number;
}

/**
 * Takes up to `want` positions of the head under one ticket. Key: `positionCounterKey(partition
 * pk)`. Update: `SET taken = if_not_exists(taken, 0) + :n, t<id> = if_not_exists(taken, 0),
 * u<id> = :entry` (and `REMOVE` the `prune`d entries), ReturnValues ALL_NEW (no read unit).
 * Condition: not retired (`gone`), no entry of that id (ids are random: a clash, about never,
 * reads as an empty head), and, for one position, `taken < next` (or no `taken` yet with
 * a `next`): it fails only when the head is empty, never because another taker was first. For
 * `n` > 1 a condition cannot add, so the counter is read first (eventually consistent, half a
 * unit) and the take is conditioned on `taken <= next - n`; it fails only when others took the
 * head down to fewer than `n` meanwhile, and the refused write returns the item as it was
 * (ReturnValuesOnConditionCheckFailure), so the retry needs no read. Success: the ticket (`n`
 * positions, all drawn, possibly not yet put) with the counter as written. Failure: no ticket
 * when the head is empty (or the counter retired, or never drawn). A take the SDK retried after
 * it landed (its answer lost) fails `attribute_not_exists(#u)` on its own entry, which the
 * refusal shows: that is the ticket, taken. An error that may have come after the write landed
 * (every answer lost: `mayHaveLanded`) reads the counter back consistently, and a ticket found
 * there under this take's id is taken too. Other errors throw.
 */
export async function takeTicket(ctx: PositionStore, partitionPk: string, want: number, options: TakeOptions): Promise<TicketTake> {
  if (!Number.isInteger(want) || want < 1) throw new RangeError('a ticket takes at least one position');
  const attempts = options.attempts ?? 20;
  const prune = [...new Set(options.prune ?? [])];
  let failedWrites = 0;
  /** The counter as stored: eventually consistent before a take, consistently after a failed one. */
  const readCounter = async (consistent: boolean) =>
    (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk), ConsistentRead: consistent }))).Item as
      Record<string, unknown> | undefined;
  let seen = want > 1 || options.look ? counterView(await readCounter(false)) : undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const n = seen ? Math.min(want, seen.next - seen.taken) : 1;
    if (n <= 0) return { counter: seen!, failedWrites };
    const now = ctx.clock.now();
    const id = newTicketId();
    const entry: TicketEntry = { u: now + options.lockMs, w: options.lockMs, n, ...(options.undelivered ? { nd: 1 as const } : {}) };
    const names: Record<string, string> = { '#p': firstName(id), '#u': entryName(id) };
    prune.forEach((p, i) => {
      names[`#pp${i}`] = firstName(p);
      names[`#pu${i}`] = entryName(p);
    });
    const removes = prune.map((_, i) => `#pp${i}, #pu${i}`).join(', ');
    const single = n === 1 && !seen;
    try {
      const out = await ctx.db.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: positionCounterKey(partitionPk),
          UpdateExpression: `SET taken = if_not_exists(taken, :zero) + :n, #p = if_not_exists(taken, :zero), #u = :entry${removes ? ` REMOVE ${removes}` : ''}`,
          ConditionExpression: single
            ? 'attribute_not_exists(gone) AND attribute_not_exists(#u) AND (taken < #next OR (attribute_not_exists(taken) AND attribute_exists(#next)))'
            : 'attribute_not_exists(gone) AND attribute_not_exists(#u) AND (taken <= :last OR attribute_not_exists(taken))',
          ExpressionAttributeNames: { ...names, ...(single ? { '#next': 'next' } : {}) },
          ExpressionAttributeValues: { ':zero': 0, ':n': n, ':entry': entry, ...(single ? {} : { ':last': seen!.next - n }) },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const counter = counterView(out.Attributes);
      const ticket = counter.tickets.find((t) => t.id === id)!;
      return { ticket, counter, failedWrites };
    } catch (e) {
      if (!(e instanceof Error && e.name === 'ConditionalCheckFailedException')) {
        // Every answer lost: the counter, read back consistently (1 read unit, on that path
        // only), shows whether this take landed. Its ticket is then ours to hand out; left, it
        // would be held by nobody and its take-back would spend a delivery (R3, R10).
        const after = mayHaveLanded(e) ? await readBack(ctx, () => readCounter(true)) : undefined;
        const taken = after && after !== UNREAD && ownTicketIn(after, id, entry);
        if (taken) return { ...taken, failedWrites };
        throw e;
      }
      const was = itemAtRefusal<Record<string, unknown>>(e);
      // The SDK retried this take after it landed (its answer lost): the refusal shows the entry
      // this very take wrote, under its fresh random id. The ticket is ours; read as an empty
      // head, it would be held by nobody and its take-back would count a delivery (R3).
      const own = was && ownTicketIn(was, id, entry);
      if (own) return { ...own, failedWrites };
      failedWrites++;
      seen = counterView(was);
      if (single || was === undefined || was.gone !== undefined) return { counter: seen, failedWrites };
    }
  }
  throw new Error(`takeTicket: the head of ${partitionPk} moved under ${attempts} takes in a row`);
}

/** The ticket a take wrote under `id` with `entry`, and the counter it is in, when `item` (a counter) holds it. */
function ownTicketIn(item: Record<string, unknown>, id: number, entry: TicketEntry): { ticket: Ticket; counter: CounterView } | undefined {
  if (!sameEntry(item[entryName(id)], entry) || item[firstName(id)] === undefined) return undefined;
  const counter = counterView(item);
  const ticket = counter.tickets.find((t) => t.id === id);
  return ticket ? { ticket, counter } : undefined;
}

/** Whether a counter item's entry is `entry` as written (a take's own, `takeTicket`). */
const sameEntry = (stored: unknown, entry: TicketEntry): boolean => {
  const e = stored as Partial<TicketEntry> | undefined;
  return e !== undefined && Number(e.u) === entry.u && Number(e.w) === entry.w && Number(e.n) === entry.n && (e.nd !== undefined) === (entry.nd !== undefined);
};

/** The lock token of a ticket's message: leases.ts `leaseToken`'s format (settlements read it as any lease token), at take-back count 0. */
export const ticketToken = (partitionPk: string, ticket: Pick<Ticket, 'id' | 'until'>, position: number): string =>
  leaseToken({ pk: leasePk(partitionPk), id: ticket.id, until: ticket.until }, [position, 0]);

/**
 * R5 for a settlement past the lock end its token states: the lock end of the ticket `token`
 * was handed out under, as the counter says now. Key: `positionCounterKey`; a consistent
 * GetItem (a renewal or a take-back just made must show). No condition, no write. Returns the
 * lock end of the entry holding the token's message (`ticketHolding`: a renewed message's own
 * entry carries its new lock end); undefined when none does (settled and pruned, taken back, or
 * given back: a given-back position was never handed out).
 */
export async function lockEndOfTicket(ctx: PositionStore, partitionPk: string, token: string, now: number): Promise<number | undefined> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk), ConsistentRead: true }));
  return ticketHolding(counterView(out.Item), token, now)?.until;
}

/**
 * Of the tickets in `view`, the one holding the message `token` (a ticket's: take-back count 0)
 * was handed out under: the entry covering the token's position (a position is in one entry at
 * most: tickets take the head once, and a split moves positions, never copies them), made by
 * the ticket whose id has the token's low bits (its own, or `o` for an entry split from it),
 * whose lock end as handed out (`r` once renewed, else `u`) is in the second the token states,
 * and which hands out (an `nd` entry was given back, never handed out). Undefined when none.
 */
export function ticketHolding(view: CounterView, token: string, now: number): Ticket | undefined {
  const [position] = entryOfToken(token);
  const second = lockEndOfToken(token, now);
  const idBits = claimIdOfToken(token);
  return view.tickets.find(
    (t) =>
      !t.nd && (t.o ?? t.id) % 256 === idBits && Math.floor((t.r ?? t.until) / 1000) * 1000 === second && position >= t.first && position < t.first + t.count,
  );
}

/** The positions of `lo` to `hi`, read consistently or not (`survey`). */
async function readSpan(
  ctx: PositionStore,
  partitionPk: string,
  lo: number,
  hi: number,
  into: Map<number, PositionedItem>,
  consistent: boolean,
): Promise<void> {
  if (hi < lo) return;
  const items = await queryAll<PositionedItem>(ctx, {
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
    ExpressionAttributeValues: { ':pk': partitionPk, ':lo': padPosition(lo), ':hi': padPosition(hi) },
    ConsistentRead: consistent,
  });
  for (const item of items) into.set(positionOfSk(item.sk), item);
}

/** What one position of a ticket came to, read with every position of its request. */
type Seen =
  | { kind: 'absent' }
  | { kind: 'tomb' }
  | { kind: 'done' }
  | { kind: 'message'; item: PositionedItem; request: 'whole' | 'void' | 'waiting'; missing: number[] };

const isMarker = (item: PositionedItem) => item.done !== undefined;
const requestOf = (item: PositionedItem, p: number): [number, number] => [item.rf ?? p, (item.rf ?? p) + (item.rn ?? 1)];

/**
 * Requests this process has seen whole (every position a message or a `done` marker, no
 * tombstone), by table, partition and first position. A request once whole stays whole for as
 * long as any of its messages can be held: a tombstone is put only on a free position
 * (`putTombstone`), and a ticketed partition frees a position of a whole request only when the
 * `done` marker of a completed message goes by TTL, a day on. So a holder of one of its messages
 * need not read the siblings again to know (S1): a receive of one message out of a batch sent
 * as one request reads its own position, not the whole request, from the second receive on.
 * Per process (per client, as the draw lines: a test's crashing process has its own), at most
 * `WHOLE_REMEMBERED` requests, the oldest forgotten first.
 */
const wholeSeen = new WeakMap<object, Set<string>>();
const WHOLE_REMEMBERED = 10_000;

function wholeRequests(ctx: PositionStore, partitionPk: string) {
  let seen = wholeSeen.get(ctx.db);
  if (!seen) wholeSeen.set(ctx.db, (seen = new Set()));
  const memory = seen;
  const key = (first: number) => `${ctx.tableName} ${partitionPk} ${first}`;
  return {
    has: (first: number) => memory.has(key(first)),
    note(first: number) {
      memory.add(key(first));
      if (memory.size > WHOLE_REMEMBERED) memory.delete(memory.values().next().value!);
    },
  };
}

/**
 * Reads a ticket's positions and every position of the requests its messages belong to: the
 * ticket's range, then the parts of its requests before and after it (one Query each, only for
 * a request that spans past the ticket and that this process has not seen whole before:
 * `wholeRequests`). No condition, no write.
 *
 * `consistent` false (a holder's first look, half the read units): a stale replica can only
 * show a position as it was earlier, and a position goes only from empty to a message or a
 * tombstone, from a message to a `done` marker or (void) empty, and raises `g` only at its
 * ticket's lapse. So a request it shows with every position landed was whole (no tombstone
 * can join it); what it shows empty or void is read again consistently before anything is
 * decided on it; and a message it shows at `g` 0 that was taken back since is handed out under
 * a lock that has ended, whose complete fails.
 */
async function survey(ctx: PositionStore, partitionPk: string, ticket: Pick<Ticket, 'first' | 'count'>, consistent = true): Promise<Map<number, Seen>> {
  const last = ticket.first + ticket.count - 1;
  const whole = wholeRequests(ctx, partitionPk);
  const loaded = new Map<number, PositionedItem>();
  await readSpan(ctx, partitionPk, ticket.first, last, loaded, consistent);
  let lo = ticket.first;
  let hi = last;
  for (const [p, item] of loaded) {
    if (item.tomb || isMarker(item)) continue;
    const [start, end] = requestOf(item, p);
    if (whole.has(start)) continue;
    lo = Math.min(lo, start);
    hi = Math.max(hi, end - 1);
  }
  await Promise.all([readSpan(ctx, partitionPk, lo, ticket.first - 1, loaded, consistent), readSpan(ctx, partitionPk, last + 1, hi, loaded, consistent)]);
  const seen = new Map<number, Seen>();
  for (let p = ticket.first; p <= last; p++) {
    const item = loaded.get(p);
    if (!item) seen.set(p, { kind: 'absent' });
    else if (item.tomb) seen.set(p, { kind: 'tomb' });
    else if (isMarker(item)) seen.set(p, { kind: 'done' });
    else {
      const [start, end] = requestOf(item, p);
      if (whole.has(start)) {
        seen.set(p, { kind: 'message', item, request: 'whole', missing: [] });
        continue;
      }
      const parts = Array.from({ length: end - start }, (_, i) => loaded.get(start + i));
      const missing = parts.flatMap((q, i) => (q === undefined ? [start + i] : []));
      const request = parts.some((q) => q?.tomb) ? 'void' : missing.length > 0 ? 'waiting' : 'whole';
      if (request === 'whole' && end - start > 1) whole.note(start);
      seen.set(p, { kind: 'message', item, request, missing });
    }
  }
  return seen;
}

/** The empty positions a ticket waits for: its own, and those of its messages' requests. */
const holesOf = (seen: Map<number, Seen>) => [
  ...new Set([...seen].flatMap(([p, s]) => (s.kind === 'absent' ? [p] : s.kind === 'message' && s.request === 'waiting' ? s.missing : []))),
];

/**
 * Tombstones `holes` (positions.ts `putTombstone`: conditioned on the position being free).
 * Safe whoever holds them, because on a ticketed partition an empty position was never put
 * (completes leave a marker): the late put of its request fails and answers "retry" (S1).
 * Returns the positions it tombstoned; one that failed was put meanwhile.
 */
async function bury(ctx: PositionStore, partitionPk: string, holes: readonly number[]): Promise<number[]> {
  const made = await Promise.all(holes.map((p) => putTombstone(ctx, partitionPk, p)));
  return holes.filter((_, i) => made[i]);
}

export interface TicketRead {
  /** Messages of whole requests, in position order, up to the first position still waited for: hand these out. */
  messages: { item: PositionedItem; token: string; deliveryCount: number }[];
  /** Landed messages of void requests in the ticket (S1): delete them (positions.ts `deletePassed`), never deliver. */
  voided: PositionedItem[];
  /** The first position not handed out because a position of its request is still empty: give back from here (`giveBack`). */
  blockedFrom?: number;
  /** Holes this read tombstoned (they had aged). */
  tombstoned: number[];
  /** Positions of the ticket no longer its to hand out: taken back by its lapse already, or settled. */
  gone: number[];
}

export interface ReadOptions {
  /** How long a holder waits for an empty position to be put before giving it back (the broker clock's sleep). */
  holeWaitMs?: number;
  /** How old a hole must be to get a tombstone (positions.ts `HOLE_AFTER_MS`), from the ticket's take. */
  holeAfterMs?: number;
}

/** A holder waits this long in all for a sender whose draw it saw but not yet its put. */
export const HOLE_WAIT_MS = 200;
const HOLE_POLL_MS = 25;

/**
 * What a ticket got: its positions and their requests' (`survey`), first eventually
 * consistent, then consistently unless every request looked whole. The whole-request rule (S1): a message is handed out only once every position
 * of its request holds a message (or a `done` marker: a sibling delivered already); a
 * tombstone anywhere voids the request for every holder alike, since a position once put or
 * tombstoned never changes back. An empty position is waited for (re-read every
 * `HOLE_POLL_MS` up to `holeWaitMs`); once it is `holeAfterMs` older than the ticket's take (the
 * request was drawn before the take) it gets a tombstone. Whatever is still waited for, and
 * everything after it, is not handed out: `blockedFrom`, for the caller to give back with its
 * holes' deadline (`giveBack`, until = `holeDeadline`). Writes only tombstones. Other errors
 * throw; the ticket then lapses and is taken back.
 */
export async function readTicket(ctx: PositionStore, partitionPk: string, ticket: Ticket, options: ReadOptions = {}): Promise<TicketRead> {
  const holeAfterMs = options.holeAfterMs ?? HOLE_AFTER_MS;
  const waitMs = options.holeWaitMs ?? HOLE_WAIT_MS;
  const tombstoned: number[] = [];
  let waited = 0;
  let seen = await survey(ctx, partitionPk, ticket, false);
  // Anything short of a whole request is decided on a consistent read.
  if ([...seen.values()].some((s) => s.kind !== 'message' || s.request !== 'whole')) seen = await survey(ctx, partitionPk, ticket);
  for (;;) {
    const holes = holesOf(seen);
    if (holes.length === 0) break;
    if (ctx.clock.now() >= ticket.at + holeAfterMs) tombstoned.push(...(await bury(ctx, partitionPk, holes)));
    else if (waited < waitMs) {
      await ctx.clock.sleep(HOLE_POLL_MS);
      waited += HOLE_POLL_MS;
    } else break;
    seen = await survey(ctx, partitionPk, ticket);
  }
  const read: TicketRead = { messages: [], voided: [], tombstoned, gone: [] };
  for (const [p, s] of seen) {
    if (s.kind === 'absent' || (s.kind === 'message' && s.request === 'waiting')) {
      read.blockedFrom = p;
      break;
    }
    if (s.kind === 'tomb') continue;
    if (s.kind === 'done' || (s.item.g ?? 0) !== 0) read.gone.push(p);
    else if (s.request === 'void') read.voided.push(s.item);
    else read.messages.push({ item: s.item, token: ticketToken(partitionPk, ticket, p), deliveryCount: deliveryCountAt(s.item, 0) });
  }
  return read;
}

/** When the holes a ticket waits for may be tombstoned: the lock end to give them back with. */
export const holeDeadline = (ticket: Pick<Ticket, 'at'>, holeAfterMs = HOLE_AFTER_MS): number => ticket.at + holeAfterMs;

/**
 * Gives back what a holder does not hand out (R10: too large for its answer; or waiting for a
 * hole): positions `first + keep` on. Key: `positionCounterKey`. Update: with `keep` 0, the
 * ticket's own entry gets lock end `until` and `nd`; otherwise its count becomes `keep` and a new
 * entry (`t<id2>`, `u<id2>` with lock end `until`, `nd`, and `o` = the ticket) holds the rest.
 * Condition: the entry is as the holder took it (`u` and `n`). Sent also once its lock has
 * ended (a slow holder): while the entry stands, no take-back has queued it, so the rest still
 * counts no delivery (R3); a take-back under way meanwhile fails on the changed entry and the
 * next one queues each message once, those it marked already included (`markedFor`, by `o`),
 * as when the lock ends between a holder's look at the clock and its write. `until`: now to put
 * them back in line at once, `holeDeadline` for a hole (the lapse decides it then). Nothing of
 * the rest counts a delivery at its take-back (R3). Success: the ticket of what was given back.
 * Failure: undefined when the entry changed (taken back, or given back already: its lapse takes
 * the rest back). Other errors throw; the ticket then lapses whole, its messages handed out
 * counted and the rest too (a delivery more, as a receiver that died).
 */
export async function giveBack(ctx: PositionStore, partitionPk: string, ticket: Ticket, keep: number, until: number): Promise<Ticket | undefined> {
  if (keep < 0 || keep >= ticket.count) throw new RangeError('giveBack keeps part of the ticket');
  const id = keep === 0 ? ticket.id : newTicketId();
  const rest: TicketEntry = {
    u: until,
    w: until - ticket.at,
    n: ticket.count - keep,
    nd: 1,
    ...(keep > 0 ? { o: ticket.id } : ticket.o ? { o: ticket.o } : {}),
  };
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionCounterKey(partitionPk),
        UpdateExpression: keep === 0 ? 'SET #u = :rest' : 'SET #u.n = :keep, #p2 = :p2, #u2 = :rest',
        ConditionExpression: `#u.u = :u AND #u.n = :n${keep > 0 ? ' AND attribute_not_exists(#u2)' : ''}`,
        ExpressionAttributeNames: { '#u': entryName(ticket.id), ...(keep > 0 ? { '#p2': firstName(id), '#u2': entryName(id) } : {}) },
        ExpressionAttributeValues: {
          ':u': ticket.until,
          ':n': ticket.count,
          ':rest': rest,
          ...(keep > 0 ? { ':keep': keep, ':p2': ticket.first + keep - 1 } : {}),
        },
      }),
    ),
  );
  if (!out) return undefined;
  return { id, first: ticket.first + keep, count: ticket.count - keep, at: ticket.at, until, nd: 1, ...(rest.o !== undefined ? { o: rest.o } : {}) };
}

/**
 * Removes settled tickets' entries from the counter, for a holder with no take to carry them
 * (`TakeOptions.prune`). Key: `positionCounterKey`. No condition: only for tickets whose every
 * message the caller completed or found void (nothing is left to take back). Success: resolves.
 * Other errors throw; the entry then lapses and its take-back finds nothing and removes it.
 */
export async function forgetTickets(ctx: PositionStore, partitionPk: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  const names = Object.fromEntries(
    ids.flatMap((id, i) => [
      [`#p${i}`, firstName(id)],
      [`#u${i}`, entryName(id)],
    ]),
  );
  await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: positionCounterKey(partitionPk),
      UpdateExpression: `REMOVE ${ids.map((_, i) => `#p${i}, #u${i}`).join(', ')}`,
      ExpressionAttributeNames: names,
    }),
  );
}

/**
 * D2 by the sweeper (broker/positioned-expiry.ts): what a lapsed ticket handed out and still
 * holds, for the caller to dead-letter in place under the entry `[position, 0]` before its
 * take-back would count one more delivery. Reads: the counter consistently (key
 * `positionCounterKey`; a renew or a give-back the look did not show must show), then the
 * ticket's positions and their requests (`survey`, consistent). No condition, no write. Returns
 * the messages of whole requests (S1: a void or waiting request was never handed out) at
 * take-back count 0 and not settled, when the entry is still as `ticket` says (`u`, `n`), has
 * lapsed and handed out (no `nd`); none otherwise. A message it returns may be taken back or
 * settled a moment later: the caller's move is conditioned on the position as held
 * (lease-settlements.ts `heldAtPosition`), as the take-back is (`takeBackOne`), so one of them wins.
 */
export async function lapsedTicketMessages(ctx: PositionStore, partitionPk: string, ticket: Ticket): Promise<{ position: number; item: PositionedItem }[]> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionCounterKey(partitionPk), ConsistentRead: true }));
  const entry = counterView(out.Item).tickets.find((t) => t.id === ticket.id);
  if (!entry || entry.nd || entry.until > ctx.clock.now() || entry.until !== ticket.until || entry.count !== ticket.count) return [];
  const held: { position: number; item: PositionedItem }[] = [];
  for (const [position, s] of await survey(ctx, partitionPk, entry)) {
    if (s.kind === 'message' && s.request === 'whole' && (s.item.g ?? 0) === 0) held.push({ position, item: s.item });
  }
  return held;
}

/** What a complete came to (leases.ts `CompleteOutcome`). */
export type TicketedCompleteOutcome = CompleteOutcome;

/**
 * Completes a message of a ticketed partition (R4): the message becomes a `done` marker, so its
 * position never reads as a hole (header). It is leases.ts `completeAtPosition` with removal
 * 'marker'. Key: the position the token names (any lease's or ticket's token). Put of `{pk, sk,
 * done, ttl}` (TTL `TOMBSTONE_TTL_MS`, free removal), billed as the delete it replaces (the larger
 * of the two items). Condition: a message is there (no tombstone, no marker) at the token's
 * take-back count. Success: 'completed'.
 * Failure: 'lockLost' (completed already, or taken back since). Other errors throw. R5 past the
 * token's stated lock end is the caller's, as for `completeAtPosition`.
 */
export const completeTicketed = (ctx: PositionStore, partitionPk: string, token: string): Promise<TicketedCompleteOutcome> =>
  completeAtPosition(ctx, partitionPk, token, 'marker');

/**
 * Takes back one message of a lapsed ticket: `g` 1 (every token of the ticket says 0, so its
 * complete fails from now on), `gl` the ticket, and `ug` for a ticket that handed nothing out
 * (R3). Key: `positionKey`. Condition: a message (no tombstone, no `done` marker: a complete
 * that landed first wins) never taken back. Success: true. Failure: false; the caller reads the
 * position again (taken back for this ticket by another at once is still queued, once).
 */
async function takeBackOne(ctx: PositionStore, partitionPk: string, position: number, ticket: Ticket, ug: number | undefined): Promise<boolean> {
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionKey(partitionPk, position),
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(tomb) AND attribute_not_exists(done) AND attribute_not_exists(g)',
        UpdateExpression: `SET g = :one, gl = :ticket${ug !== undefined ? ', ug = :ug' : ''}`,
        ExpressionAttributeValues: { ':one': 1, ':ticket': ticket.id, ...(ug !== undefined ? { ':ug': ug } : {}) },
      }),
    ),
  );
  return out !== undefined;
}

/** Taken back for this ticket (or the one it was split from) already: at count 1 with its mark. */
const markedFor = (item: PositionedItem, ticket: Ticket) => item.g === 1 && (item.gl === ticket.id || (ticket.o !== undefined && item.gl === ticket.o));

export type TakeBackOutcome = 'returned' | 'settled' | 'waiting' | 'changed';

/**
 * Takes lapsed tickets back (R6), the repair of a holder that died after its take, or gave back:
 * for each ticket whose lock has ended, steps:
 *
 * 1. `survey` its positions and their requests (consistent reads).
 * 2. An empty position, in the ticket or in a request of one of its messages: tombstoned once
 *    `holeAfterMs` past the ticket's take (a request with one is void, S1); before that the
 *    ticket is left for later ('waiting').
 * 3. Each message of a whole request not taken back yet: `takeBackOne` (`g` 1, `gl` the
 *    ticket, `ug` with `nd`); one found taken back for this ticket already (a take-back that
 *    died, or one beside this one) is queued too. Void requests' messages are deleted
 *    (positions.ts `deletePassed`); markers and tombstones are left.
 * 4. One TransactWriteItems: the cursor (key `cursorKey`; condition `v = :v`, the version read,
 *    or none yet) with them at the end of `back`, and the counter (key `positionCounterKey`;
 *    condition: the entry as read, `u` and `n`) with the entry removed and `bq` one more (so a
 *    receive's take shows that `back` holds something: ticket-back.ts). Both or neither: a
 *    message is queued exactly once (R6), and no entry outlives its queuing to queue it again.
 *    With nothing to queue, only the counter's removal ('settled').
 *
 * A crash before 4 leaves the entry, so the next take-back does it again (step 3 recognises
 * its marks); the transaction refused on the cursor's version (a claim of `back` moved it)
 * reads the cursor again; on the entry ('changed': a `giveBack` split it, or another take-back
 * removed it), the caller's next look at the counter shows what is left. Refusals for load are
 * retried a few times, then thrown. Returns each ticket's outcome by id.
 */
export async function takeBackTickets(
  ctx: PositionStore,
  partitionPk: string,
  tickets: readonly Ticket[],
  options: { holeAfterMs?: number; attempts?: number } = {},
): Promise<Map<number, TakeBackOutcome>> {
  const holeAfterMs = options.holeAfterMs ?? HOLE_AFTER_MS;
  const attempts = options.attempts ?? 10;
  const outcomes = new Map<number, TakeBackOutcome>();
  for (const ticket of tickets) {
    if (ticket.until > ctx.clock.now()) continue;
    let outcome: TakeBackOutcome | undefined;
    for (let attempt = 0; attempt < attempts && !outcome; attempt++) {
      let seen = await survey(ctx, partitionPk, ticket);
      const holes = holesOf(seen);
      if (holes.length > 0) {
        if (ctx.clock.now() < ticket.at + holeAfterMs) {
          outcome = 'waiting';
          break;
        }
        await bury(ctx, partitionPk, holes);
        seen = await survey(ctx, partitionPk, ticket);
        if (holesOf(seen).length > 0) continue;
      }
      const queue: Entry[] = [];
      const voided: PositionedItem[] = [];
      let again = false;
      for (const [p, s] of seen) {
        if (s.kind !== 'message') continue;
        if (s.request === 'void') {
          if ((s.item.g ?? 0) === 0) voided.push(s.item);
          continue;
        }
        if (markedFor(s.item, ticket)) queue.push([p, 1]);
        else if ((s.item.g ?? 0) === 0) {
          if (await takeBackOne(ctx, partitionPk, p, ticket, ticket.nd ? (s.item.ug ?? 0) + 1 : undefined)) queue.push([p, 1]);
          else again = true;
        }
      }
      if (again) continue;
      if (voided.length > 0) await deletePassed(ctx, voided);
      outcome = await returnTicket(ctx, partitionPk, ticket, queue);
    }
    if (!outcome) throw new Error(`takeBackTickets: ticket ${ticket.id} of ${partitionPk} not taken back in ${attempts} attempts`);
    outcomes.set(ticket.id, outcome);
  }
  return outcomes;
}

/**
 * Step 4 of `takeBackTickets`: queues `entries` in the cursor's `back` and removes the ticket's
 * entry, in one transaction (or the removal alone when there is nothing to queue). Returns
 * undefined to try again (the cursor moved, or refused for load).
 */
async function returnTicket(ctx: PositionStore, partitionPk: string, ticket: Ticket, entries: Entry[]): Promise<TakeBackOutcome | undefined> {
  const removal = {
    TableName: ctx.tableName,
    Key: positionCounterKey(partitionPk),
    UpdateExpression: 'REMOVE #p, #u',
    ConditionExpression: '#u.u = :u AND #u.n = :n',
    ExpressionAttributeNames: { '#p': firstName(ticket.id), '#u': entryName(ticket.id) },
    ExpressionAttributeValues: { ':u': ticket.until, ':n': ticket.count },
  };
  try {
    if (entries.length === 0) {
      const out = await conditionally(ctx.db.send(new UpdateCommand(removal)));
      return out ? 'settled' : 'changed';
    }
    // What it queues in `back` is counted on the counter in the same transaction (ticket-back.ts, R6).
    const queuing = {
      ...removal,
      UpdateExpression: `${removal.UpdateExpression} ${BACK_QUEUED_ADD}`,
      ExpressionAttributeValues: { ...removal.ExpressionAttributeValues, ...BACK_QUEUED_VALUES },
    };
    const cursor = await readCursor(ctx, partitionPk);
    const item: CursorItem = { pk: cursor.pk, sk: cursor.sk, pos: cursor.v === 0 ? TICKETED : cursor.pos, v: cursor.v + 1 };
    item.back = [...(cursor.back ?? []), ...entries];
    if (cursor.tb && cursor.tb.length > 0) item.tb = cursor.tb;
    if (cursor.claim) item.claim = cursor.claim;
    await ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: ctx.tableName,
              Item: item,
              ConditionExpression: cursor.v === 0 ? 'attribute_not_exists(pk)' : 'v = :v',
              ...(cursor.v === 0 ? {} : { ExpressionAttributeValues: { ':v': cursor.v } }),
            },
          },
          { Update: queuing },
        ],
      }),
    );
    return 'returned';
  } catch (e) {
    const codes = cancellationCodes(e);
    if (partFailedCondition(codes, 1)) return 'changed';
    if (partFailedCondition(codes, 0) || isStoreBusy(e)) return undefined;
    throw e;
  }
}
