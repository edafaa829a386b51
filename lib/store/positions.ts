/**
 * The positioned layout's sending side and head (design.md, "Which way out"): a partition's
 * messages sit at contiguous positions drawn from a per-partition counter, one counter write
 * per send request at most (concurrent requests of a process share one, `joinDraw`), so a
 * receiver reads them in the order they were drawn and needs no index.
 *
 * A request's messages carry where their request starts and how many it drew (`rf`, `rn`;
 * absent for a request of one) and the instant the sender drew (`at`). A request is delivered
 * whole or not at all (S1): every position of it holds either its message or a tombstone,
 * never both (both are puts conditioned on an empty position), and a request with a tombstone
 * is void: its sender's put failed and it answers "retry", and receivers pass over the
 * messages of it that did land. A receiver stops at the first position nobody has written, so
 * a slow sender holds back the messages drawn after its own, until the hole is older than a
 * threshold and gets its tombstone (`findHead`).
 *
 * The positioned items carry whatever the caller puts in them besides the attributes named
 * here (the broker: a message item, broker/positioned-send.ts).
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.js';
import { padPosition, positionCounterKey, positionKey, positionOfSk, type Key } from './keys.js';
import { conditionally, conditionFailed, itemAtRefusal, mayHaveLanded } from './outcomes.js';
import { SCHEDULED_LOW_MAX } from './sequence.js';
import { readBack, UNREAD } from './read-back.js';

export type PositionStore = Pick<Deps, 'db' | 'tableName' | 'clock'>;

/** A positioned item as stored: a message (with the caller's attributes) or a tombstone. */
export interface PositionedItem {
  pk: string;
  sk: string;
  /** When the sender drew the position (the broker clock): how old a hole after it is, at least. */
  at?: number;
  /** The first position of the message's send request, when the request drew more than one. */
  rf?: number;
  /** How many positions the request drew, when more than one. */
  rn?: number;
  /** Times the message was taken back from a lapsed lease (leases.ts); absent while never. */
  g?: number;
  /** Of those, take-backs of a claim that handed nothing out (leases.ts `deliveryCountAt`); absent while none. */
  ug?: number;
  /** The lease or ticket whose take-back raised `g` last (leases.ts `takeBackMessage`); an abandon removes it. */
  gl?: number;
  /** A tombstone: nobody's message may be put here any more. */
  tomb?: 1;
  ttl?: number;
  [attribute: string]: unknown;
}

/** Positions drawn by one send request: `first` to `first + count - 1`, drawn at `at`. */
export interface Draw {
  first: number;
  count: number;
  at: number;
}

/**
 * A tombstone stays this long, then DynamoDB's TTL removes it for free. A put is never sent
 * later than half of it after its draw (`putAtPositions`), so no put can land in a position
 * whose tombstone is gone; a receiver that meets the hole again writes a new one.
 */
export const TOMBSTONE_TTL_MS = 24 * 60 * 60 * 1000;
const LATEST_PUT_MS = TOMBSTONE_TTL_MS / 2;

/** How long a hole is waited for before it gets a tombstone, unless the caller says. */
export const HOLE_AFTER_MS = 5_000;

/**
 * How a message leaves its position: `delete`, or `marker` on a ticketed partition, where the
 * message becomes a `done` marker that DynamoDB's TTL removes a day later (free), so that an
 * empty position there always means "never put" (tickets.ts header). The marker's Put is billed
 * as the delete it replaces (the larger of the two items).
 */
export type Removal = 'delete' | 'marker';

/**
 * The `done` marker that stands at `position` of a ticketed partition once its message is removed.
 * `dn`, random, is this marker's own: a complete whose put landed and was sent again by the SDK
 * meets its own marker (R4: completed), where a second complete with the same token meets
 * another's (R5: the lock is lost).
 */
export const doneMarker = (ctx: PositionStore, partitionPk: string, position: number) => ({
  ...positionKey(partitionPk, position),
  done: 1,
  dn: randomBytes(6).toString('base64url'),
  ttl: Math.ceil((ctx.clock.now() + TOMBSTONE_TTL_MS) / 1000),
});

/**
 * The TransactWriteItems part that removes the message at `position` of `partitionPk` as
 * `removal` says, under `condition` (evaluated against the message either way).
 */
export function removalPart(
  ctx: PositionStore,
  partitionPk: string,
  position: number,
  removal: Removal,
  condition: { expression: string; values: Record<string, unknown> },
): Record<string, unknown> {
  const guard = {
    ConditionExpression: condition.expression,
    ...(Object.keys(condition.values).length > 0 ? { ExpressionAttributeValues: condition.values } : {}),
  };
  return removal === 'delete'
    ? { Delete: { TableName: ctx.tableName, Key: positionKey(partitionPk, position), ...guard } }
    : { Put: { TableName: ctx.tableName, Item: doneMarker(ctx, partitionPk, position), ...guard } };
}

const drawsSome = (count: number) => Number.isInteger(count) && count > 0;
const DRAWS_NONE = 'a request draws at least one position';

/**
 * Draws `count` positions of a partition for one send request. Key:
 * `positionCounterKey(partition pk)`. Condition: the counter was not retired (`retireCounter`);
 * `ADD next :count` creates the counter at its first use (positions start at 1), `SET dt` the
 * draw's time. `sl`, the numbers handed to scheduled messages since the last position
 * (`numberScheduled`), restarts: removed by a draw of messages, 1 for a draw of `scheduled`
 * positions (each scheduled message numbered at its own position, low bits 1: the fallback of a
 * full `sl`). Success: the request's positions, contiguous; one write unit whatever the count.
 * `ld`, the last draw's random id, with `lastDrawNotThis`: the SDK's retry of a draw that
 * landed, its answer lost, is refused while no other draw came between (the common case, the
 * retry following within milliseconds), and the positions it drew are read from the refused
 * item (ALL_OLD, no read unit); a retry after another draw draws again, leaving a hole.
 * Failure: `CounterRetired` when the reaper has removed the partition's incarnation (nothing
 * drawn, nothing created); otherwise throws DynamoDB's error; nothing was drawn, unless the
 * error came after the write (a timeout, the SDK out of retries), when positions were drawn
 * that nobody will put: holes, which receivers tombstone after `HOLE_AFTER_MS`, holding the
 * partition's head back until then.
 */
export async function drawPositions(ctx: PositionStore, partitionPk: string, count: number, kind: SeatKind = 'messages'): Promise<Draw> {
  if (!drawsSome(count)) throw new RangeError(DRAWS_NONE);
  const id = randomBytes(6).toString('base64url');
  let next: number;
  try {
    const out = await ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionCounterKey(partitionPk),
        // `dt`: when the last draw was made, so a ticket's holder knows its positions were drawn by then (tickets.ts `CounterView.drawnAt`).
        UpdateExpression: kind === 'messages' ? 'ADD #next :count SET dt = :now, ld = :id REMOVE #sl' : 'ADD #next :count SET dt = :now, ld = :id, #sl = :one',
        ConditionExpression: `attribute_not_exists(#gone) AND ${lastDrawNotThis}`,
        ExpressionAttributeNames: { '#next': 'next', '#gone': 'gone', '#sl': 'sl' },
        ExpressionAttributeValues: { ':count': count, ':now': ctx.clock.now(), ':id': id, ...(kind === 'messages' ? {} : { ':one': 1 }) },
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    next = Number((out.Attributes as { next: number }).next);
  } catch (e) {
    if (!conditionFailed(e)) throw e;
    const found = itemAtRefusal<{ next?: number; gone?: number; ld?: string }>(e);
    if (!found || found.gone !== undefined || found.ld !== id) throw new CounterRetired(partitionPk);
    next = Number(found.next);
  }
  return { first: next - count + 1, count, at: ctx.clock.now() };
}

/** The counter's last draw is not this one (`:id`): refuses only the SDK's retry of a draw that landed. */
const lastDrawNotThis = '(attribute_not_exists(ld) OR ld <> :id)';

/**
 * Numbers for scheduled messages that take no position (S2; sequence.ts `scheduledSeq`): the
 * `count` messages are numbered `scheduledSeq(after, partition, low + i)`, above the last
 * position drawn (`after`, 0 before any) and below the next, so in enqueue order with the
 * partition's messages, and no receiver ever meets them on the positions.
 */
export interface Numbering {
  after: number;
  low: number;
  count: number;
}

/** What a scheduled request's share of a partition got: numbers (`Numbering`), or, when those ran out past a position, positions of its own to tombstone. */
export type ScheduledNumbers = Numbering | Draw;
export const isNumbering = (n: ScheduledNumbers): n is Numbering => 'low' in n;

/**
 * Draws `count` numbers for scheduled messages without drawing positions. Key:
 * `positionCounterKey(partition pk)`. Update: `SET sl = if_not_exists(sl, 0) + :count`,
 * ReturnValues ALL_NEW (the last position drawn, `next`, comes with it at no read unit).
 * Condition: not retired (`gone`), and room left in the low bits (`sl <= SCHEDULED_LOW_MAX -
 * count`). One write unit, billed by the counter's size as a draw is; no position is drawn, so
 * nothing is left for receivers to pass over (a receive behind 1,000 scheduled messages reads
 * none of them). Success: the numbers. Failure: undefined when the low bits after the last
 * position are used up or the counter was retired: the caller draws positions instead
 * (`drawPositions` 'scheduled', which restarts `sl`, or throws `CounterRetired`). Other errors
 * throw; nothing was numbered, or (after the write landed) numbers went unused, which leaves no
 * hole and breaks no order.
 */
export async function numberScheduled(ctx: PositionStore, partitionPk: string, count: number): Promise<Numbering | undefined> {
  if (count > SCHEDULED_LOW_MAX) return undefined;
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: positionCounterKey(partitionPk),
        UpdateExpression: 'SET #sl = if_not_exists(#sl, :zero) + :count',
        ConditionExpression: 'attribute_not_exists(#gone) AND (attribute_not_exists(#sl) OR #sl <= :room)',
        ExpressionAttributeNames: { '#sl': 'sl', '#gone': 'gone' },
        ExpressionAttributeValues: { ':zero': 0, ':count': count, ':room': SCHEDULED_LOW_MAX - count },
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  if (!out) return undefined;
  const item = out.Attributes as { next?: number; sl: number };
  return { after: Number(item.next ?? 0), low: Number(item.sl) - count + 1, count };
}

/** What a request waits in its partition's line for (`joinDraw`): positions for its messages, or numbers for scheduled ones (`joinNumbers`). */
type SeatKind = 'messages' | 'scheduled';

/** A request waiting for the next draw of its partition (`joinDraw`). */
interface Seat {
  kind: SeatKind;
  count: number;
  resolve: (got: Draw | Numbering) => void;
  reject: (error: unknown) => void;
}

/** One partition's draws in this process: whether one is in flight, and who waits for the next. */
interface DrawLine {
  drawing: boolean;
  waiting: Seat[];
}

/**
 * The draw lines of this process, per client and clock (a test's crashing "process" has a
 * client of its own, so its requests never join another's draw), then per table and partition.
 */
const drawLines = new WeakMap<object, WeakMap<object, Map<string, DrawLine>>>();

function lineOf(ctx: PositionStore, partitionPk: string): { line: DrawLine; lines: Map<string, DrawLine>; key: string } {
  let byClock = drawLines.get(ctx.db);
  if (!byClock) drawLines.set(ctx.db, (byClock = new WeakMap()));
  let lines = byClock.get(ctx.clock);
  if (!lines) byClock.set(ctx.clock, (lines = new Map()));
  const key = `${ctx.tableName}\u0000${partitionPk}`;
  let line = lines.get(key);
  if (!line) lines.set(key, (line = { drawing: false, waiting: [] }));
  return { line, lines, key };
}

/**
 * `drawPositions` for one request, sharing the counter write with the process's other requests
 * to the partition: a request that arrives while a draw of the partition is in flight waits for
 * the next one, which draws for every request waiting then (one `ADD next :sum`) and hands each
 * its own contiguous range, in the order they joined. So a crowd of N concurrent sends pays one
 * counter write and the hot counter item (which tickets write too, tickets.ts) sees one update
 * instead of N; a request that finds no draw in flight draws at once, as `drawPositions` does.
 *
 * The request joins its line synchronously, in this call, before anything is awaited: a caller
 * that calls it for request A, then for request B, gets A's positions before B's (S2), which
 * is what lets a batch's requests (positioned-send.ts `DrawTurns`) join the same draw.
 *
 * Each range is one request's own (its `rf`/`rn` when put, `putAtPositions`), so a joined
 * request that fails later leaves exactly its own positions as holes, as a request that drew
 * alone does (S1). A shared draw that fails (`CounterRetired`, throttling past the SDK's
 * retries, the network) fails every request that joined it, with its error, and no other;
 * what it may have drawn is holes, as for `drawPositions`.
 */
export function joinDraw(ctx: PositionStore, partitionPk: string, count: number): Promise<Draw> {
  return join(ctx, partitionPk, count, 'messages') as Promise<Draw>;
}

/**
 * `joinDraw` for scheduled messages: numbers without positions (`numberScheduled`), drawn in
 * the same line as the process's draws of the partition, so requests keep the order they
 * joined in (S2, `DrawTurns`), one write shared by the scheduled requests that wait together.
 * Positions (to tombstone) when the numbers after the last position ran out.
 */
export function joinNumbers(ctx: PositionStore, partitionPk: string, count: number): Promise<ScheduledNumbers> {
  return join(ctx, partitionPk, count, 'scheduled');
}

function join(ctx: PositionStore, partitionPk: string, count: number, kind: SeatKind): Promise<Draw | Numbering> {
  if (!drawsSome(count)) return Promise.reject(new RangeError(DRAWS_NONE));
  const { line, lines, key } = lineOf(ctx, partitionPk);
  const drawn = new Promise<Draw | Numbering>((resolve, reject) => line.waiting.push({ kind, count, resolve, reject }));
  if (!line.drawing) void drawForLine(ctx, partitionPk, line, () => lines.get(key) === line && lines.delete(key));
  return drawn;
}

/**
 * One counter write for a run of seats of one kind; resolves to what hands each seat its own
 * range in the order it joined. The caller hands them out and goes on to the next write in one
 * synchronous step, so a request that joins once a seat's promise settles finds the next write
 * in flight and waits for the one after (as the order of a batch's requests needs, `DrawTurns`).
 */
async function writeForRun(ctx: PositionStore, partitionPk: string, run: readonly Seat[]): Promise<() => void> {
  const total = run.reduce((sum, seat) => sum + seat.count, 0);
  const numbering = run[0]!.kind === 'scheduled' ? await numberScheduled(ctx, partitionPk, total) : undefined;
  const draw = numbering ? undefined : await drawPositions(ctx, partitionPk, total, run[0]!.kind);
  return () => {
    let next = numbering ? numbering.low : draw!.first;
    for (const { count, resolve } of run) {
      resolve(numbering ? { after: numbering.after, low: next, count } : { first: next, count, at: draw!.at });
      next += count;
    }
  };
}

/**
 * Draws for whoever waits on `line`, one shared write after another, until nobody does: each
 * write for the seats at the front of the line that want the same kind (positions, or numbers).
 */
async function drawForLine(ctx: PositionStore, partitionPk: string, line: DrawLine, done: () => void): Promise<void> {
  line.drawing = true;
  try {
    while (line.waiting.length > 0) {
      const other = line.waiting.findIndex((seat) => seat.kind !== line.waiting[0]!.kind);
      const run = line.waiting.splice(0, other < 0 ? line.waiting.length : other);
      let handOut: () => void;
      try {
        handOut = await writeForRun(ctx, partitionPk, run);
      } catch (e) {
        handOut = () => run.forEach((seat) => seat.reject(e));
      }
      handOut();
    }
  } finally {
    line.drawing = false;
    done();
  }
}

/** A draw from a partition whose incarnation the reaper removed (`retireCounter`): nothing was drawn. */
export class CounterRetired extends Error {
  constructor(readonly partitionPk: string) {
    super(`the positions of ${partitionPk} are retired: its entity was deleted`);
    this.name = 'CounterRetired';
  }
}

/**
 * E4, for the reaper's last step over a deleted positioned incarnation: its partition's counter
 * becomes a marker that refuses every later draw (`drawPositions`), so a send that saw the
 * entity before its deletion creates no counter nobody would remove. Key:
 * `positionCounterKey(partition pk)`. No condition (it replaces whatever counter a late draw
 * made). The marker goes by DynamoDB's TTL after `TOMBSTONE_TTL_MS`, far past any request
 * that read the entity. Success: written; failure: throws DynamoDB's error (the reaper's next
 * run tries again).
 */
export async function retireCounter(ctx: PositionStore, partitionPk: string): Promise<void> {
  const ttl = Math.floor((ctx.clock.now() + TOMBSTONE_TTL_MS) / 1000);
  await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: { ...positionCounterKey(partitionPk), gone: 1, ttl } }));
}

/**
 * Attributes a positioned message never carries, whatever its payload holds: a `ttl` (DynamoDB's
 * TTL would empty the position, which `findHead` takes for a crashed sender's hole: it would
 * tombstone it and void the whole request, the unexpired messages of it too) and the index
 * keys (`dpk`/`dsk` would put it on the sweeper's agenda, whose move deletes it at any
 * position, with the same effect; `rpk`/`rsk` would cost an index write). Expiry (T4-T7) is
 * the claimer's and the sweeper's (broker/positioned-expiry.ts), once the cursor has passed it.
 */
const NEVER_ON_A_POSITION = ['ttl', 'dpk', 'dsk', 'rpk', 'rsk'] as const;

const positionedAttributes = (payload: Record<string, unknown>) => {
  const kept = { ...payload };
  for (const attribute of NEVER_ON_A_POSITION) delete kept[attribute];
  return kept;
};

/** A position nobody has written: no message, no tombstone. */
const positionIsFree = 'attribute_not_exists(pk)';

/** What a request's puts came to: every message is in place, or the request is void and its sender answers "retry". */
export type PutOutcome = 'written' | 'retry';

/**
 * Puts a request's messages at its positions, one PutItem each, all at once: `payloads[i]`
 * at `draw.first + i`, with `at`, and `rf`/`rn` when the request drew more than one, and
 * without `NEVER_ON_A_POSITION`. Key:
 * `positionKey(partition pk, position)`. Condition: `positionIsFree`. No transaction: a
 * partly landed request is never delivered in part, because a receiver delivers a request
 * only once all its positions hold messages, and voids it when one holds a tombstone.
 * A put the SDK retried after it landed (its answer lost) meets its own message: it counts as
 * made (`putOwnPosition`). Success: 'written', every message durable; acknowledge. Failure:
 * 'retry' when a position held a tombstone (the put came after a receiver gave up on it), or when the draw is too old
 * to put safely (`LATEST_PUT_MS`, nothing sent): the request is void, never delivered; answer
 * "retry". Other errors throw (throttling left after the SDK's retries, the network): the
 * request's fate is then decided by the receivers (void once a hole of it ages), so the
 * sender answers an error the client retries.
 */
export async function putAtPositions(ctx: PositionStore, partitionPk: string, draw: Draw, payloads: readonly Record<string, unknown>[]): Promise<PutOutcome> {
  if (payloads.length !== draw.count) throw new RangeError('one payload a drawn position');
  if (ctx.clock.now() - draw.at > LATEST_PUT_MS) return 'retry';
  const request = draw.count > 1 ? { rf: draw.first, rn: draw.count } : {};
  const made = await Promise.all(
    payloads.map((payload, i) =>
      putOwnPosition(ctx, partitionPk, draw.first + i, {
        ...positionedAttributes(payload),
        ...positionKey(partitionPk, draw.first + i),
        at: draw.at,
        ...request,
      }),
    ),
  );
  return made.every(Boolean) ? 'written' : 'retry';
}

/**
 * One put of `putAtPositions`: true when the message is at its position, false when a tombstone
 * is. A refusal that finds anything but a tombstone (a message, or on a ticketed partition the
 * `done` marker it became) is this very put, landed: only the request that drew a position
 * puts a message there, every other writer puts tombstones. That is the SDK's retry of a put
 * whose answer was lost (a 500, a timeout), which fails its own condition; read as "retry",
 * the request would answer "not stored" while its message is delivered, and the client's resend
 * would be a second copy (S1). The refused item comes with the refusal (ALL_OLD): no read unit.
 * A failure that may have come after the put landed (`mayHaveLanded`: a 500 the SDK gave up on,
 * a timeout) reads the position consistently instead (1 read unit, on that path only), and reads
 * what it finds the same way; an empty position means not put, and the failure stands.
 */
async function putOwnPosition(ctx: PositionStore, partitionPk: string, position: number, item: Record<string, unknown>): Promise<boolean> {
  try {
    await ctx.db.send(
      new PutCommand({ TableName: ctx.tableName, Item: item, ConditionExpression: positionIsFree, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
    );
    return true;
  } catch (e) {
    if (conditionFailed(e)) {
      const found = itemAtRefusal<PositionedItem>(e);
      return found !== undefined && !found.tomb;
    }
    // A failed read leaves the put's own failure standing.
    const found = mayHaveLanded(e) ? await readBack(ctx, () => readPosition(ctx, partitionPk, position)) : undefined;
    if (found === undefined || found === UNREAD) throw e;
    return !found.tomb;
  }
}

/**
 * A request's puts as parts of one transaction (TransactWriteItems), for a request that must
 * land atomically with other writes (S7's duplicate marker, copies in today's layout): the
 * same items `putAtPositions` puts. Key: `positionKey(partition pk, position)`. Condition:
 * `positionIsFree` on each. Success (the transaction went through): every message durable.
 * Failure: the caller's transaction is cancelled whole; a part that failed its condition met a
 * tombstone (answer "retry", as `putAtPositions`) or, never, a message. Undefined when the draw
 * is too old to put safely (`LATEST_PUT_MS`): answer "retry" without writing.
 *
 * A transaction that landed and whose answer was lost is not refused by the SDK's retry, as a
 * lone put would be (`putOwnPosition`): the SDK fills in TransactWriteItems' ClientRequestToken
 * when it serializes the command (an idempotency token of the DynamoDB model) and retries the
 * same request, and DynamoDB answers a repeated token within 10 minutes with the first outcome,
 * writing nothing again.
 */
export function positionPutParts(
  ctx: PositionStore,
  partitionPk: string,
  draw: Draw,
  payloads: readonly Record<string, unknown>[],
): Record<string, unknown>[] | undefined {
  if (payloads.length !== draw.count) throw new RangeError('one payload a drawn position');
  if (ctx.clock.now() - draw.at > LATEST_PUT_MS) return undefined;
  const request = draw.count > 1 ? { rf: draw.first, rn: draw.count } : {};
  return payloads.map((payload, i) => ({
    Put: {
      TableName: ctx.tableName,
      Item: { ...positionedAttributes(payload), ...positionKey(partitionPk, draw.first + i), at: draw.at, ...request },
      ConditionExpression: positionIsFree,
    },
  }));
}

/**
 * Gives up on a position: a tombstone, so a put still on its way fails and its request is
 * void. Key: `positionKey(partition pk, position)`. Condition: `positionIsFree`. The item
 * carries `tomb` and a TTL `TOMBSTONE_TTL_MS` ahead. Success: true. Failure: false when the
 * position was written meanwhile (the message landed, or another receiver's tombstone): read
 * it again. Other errors throw.
 */
export async function putTombstone(ctx: PositionStore, partitionPk: string, position: number): Promise<boolean> {
  const ttl = Math.ceil((ctx.clock.now() + TOMBSTONE_TTL_MS) / 1000);
  const out = await conditionally(
    ctx.db.send(
      new PutCommand({
        TableName: ctx.tableName,
        Item: { ...positionKey(partitionPk, position), tomb: 1, ttl },
        ConditionExpression: positionIsFree,
      }),
    ),
  );
  return out !== undefined;
}

/** One position read consistently (after a write to it failed): the item, or undefined. No condition. */
export async function readPosition(ctx: PositionStore, partitionPk: string, position: number): Promise<PositionedItem | undefined> {
  const out = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: positionKey(partitionPk, position), ConsistentRead: true }));
  return out.Item as PositionedItem | undefined;
}

/** What a receiver found from a cursor. */
export interface Head {
  /** Messages it may claim, in order (at most the number wanted). */
  take: PositionedItem[];
  /** Landed messages of void requests it passes over: never delivered, to delete once passed. */
  voided: PositionedItem[];
  /** Tombstones it passes over. */
  passed: number[];
  /** The first position it did not take or pass: the cursor's next value (never just past a tombstone it could not yet place in its request). */
  next: number;
  /** Tombstones it wrote. */
  tombstoned: number[];
}

/**
 * Finds up to `want` deliverable messages from position `from` on, and writes the tombstones
 * that lets it reach them.
 *
 * Reads a Query of the partition from `from` (eventually consistent: a message a stale read
 * misses only looks like a hole, and a tombstone's condition settles what is really there),
 * as many items a page as it still needs. Walks position by position: a tombstone is passed;
 * a message whose request has all its positions from here on holding messages is taken (part
 * of a whole request may be taken: nothing can void it any more); a request with a tombstone
 * is void and passed whole; a request with a free position, or a free position with a message
 * after it, is waited for until the newest evidence of its age (the later message's `at`, or
 * the request's own) is `holeAfterMs` old on the broker clock, then gets tombstones
 * (`putTombstone`) and is looked at again. Stops at the first position that is still being
 * waited for, at the end of the partition, once `want` messages are taken, or, with
 * `takeWhile`, at the first deliverable message it refuses (the sweeper takes only expired
 * messages, broker/positioned-expiry.ts): that message is the next one to take.
 */
export async function findHead(
  ctx: PositionStore,
  partitionPk: string,
  from: number,
  want: number,
  holeAfterMs = HOLE_AFTER_MS,
  takeWhile?: (item: PositionedItem) => boolean,
): Promise<Head> {
  const loaded = new Map<number, PositionedItem>();
  /** Every position up to this one is known: in `loaded`, or free when the Query ran. */
  let knownTo = from - 1;
  let exhausted = false;
  const load = async (needed: number) => {
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND sk >= :from',
        ExpressionAttributeValues: { ':pk': partitionPk, ':from': padPosition(knownTo + 1) },
        Limit: Math.max(1, needed),
      }),
    );
    const items = (out.Items ?? []) as PositionedItem[];
    for (const item of items) loaded.set(positionOfSk(item.sk), item);
    if (out.LastEvaluatedKey) knownTo = positionOfSk(String(out.LastEvaluatedKey.sk));
    else {
      exhausted = true;
      knownTo = Number.MAX_SAFE_INTEGER;
    }
  };
  /** Makes position `p` known, reading on while the partition has more. */
  const reach = async (p: number, batch: number) => {
    while (knownTo < p && !exhausted) await load(Math.max(batch, p - knownTo));
  };
  /** The first message after `p` already read, reading one more page if none is. */
  const nextAfter = async (p: number, batch: number): Promise<PositionedItem | undefined> => {
    for (;;) {
      const later = [...loaded.keys()].filter((q) => q > p).sort((a, b) => a - b);
      for (const q of later) if (!loaded.get(q)!.tomb) return loaded.get(q);
      if (exhausted) return undefined;
      await load(batch);
    }
  };
  const aged = (item: PositionedItem) => item.at !== undefined && item.at <= ctx.clock.now() - holeAfterMs;
  /** Tombstones position `p`, or learns what landed there. */
  const bury = async (p: number) => {
    if (await putTombstone(ctx, partitionPk, p)) {
      loaded.set(p, { ...positionKey(partitionPk, p), tomb: 1 });
      head.tombstoned.push(p);
      return;
    }
    const found = await readPosition(ctx, partitionPk, p);
    if (found) loaded.set(p, found);
  };

  const head: Head = { take: [], voided: [], passed: [], next: from, tombstoned: [] };
  let p = from;
  /**
   * The tombstones passed since the last message taken or request voided. A tombstone's own
   * request is known only from a message of it after it, so the cursor never stops just past
   * one: a later walk starting there would miss that the request holding the next messages is void.
   */
  let trailing = 0;
  while (head.take.length < want) {
    const batch = want - head.take.length;
    await reach(p, batch);
    const item = loaded.get(p);
    if (item?.tomb) {
      head.passed.push(p++);
      trailing++;
      continue;
    }
    if (item) {
      const end = (item.rf ?? p) + (item.rn ?? 1);
      await reach(end - 1, end - p);
      // From where this walk began: the part of a request before `from` was taken whole (a request is taken only once complete).
      const rest = Array.from({ length: end - Math.max(from, item.rf ?? p) }, (_, i) => Math.max(from, item.rf ?? p) + i);
      if (rest.some((q) => loaded.get(q)?.tomb)) {
        for (const q of rest.filter((r) => r >= p)) {
          const landed = loaded.get(q);
          if (landed?.tomb) head.passed.push(q);
          else if (landed) head.voided.push(landed);
        }
        p = end;
        trailing = 0;
        continue;
      }
      const free = rest.filter((q) => !loaded.has(q));
      if (free.length > 0) {
        if (!aged(item)) break;
        for (const q of free) await bury(q);
        continue;
      }
      const upTo = Math.min(end, p + batch);
      let q = p;
      while (q < upTo && (takeWhile === undefined || takeWhile(loaded.get(q)!))) head.take.push(loaded.get(q++)!);
      if (q > p) trailing = 0;
      p = q;
      if (q < upTo) break;
      continue;
    }
    const later = await nextAfter(p, batch);
    if (!later || !aged(later)) break;
    await bury(p);
  }
  head.passed.splice(head.passed.length - trailing, trailing);
  head.next = p - trailing;
  return head;
}

/**
 * Of `items` (positions of one partition), the messages of a request with a tombstone among
 * them: void (S1), never to be delivered.
 */
export function messagesOfVoidRequests<T extends PositionedItem>(items: readonly T[]): T[] {
  const tombs = items.filter((i) => i.tomb).map((i) => positionOfSk(i.sk));
  return items.filter((i) => !i.tomb && i.rf !== undefined && i.rn !== undefined && tombs.some((t) => t >= i.rf! && t < i.rf! + i.rn!));
}

/**
 * Deletes passed items nobody will deliver: the landed messages of void requests. Key: each
 * item's. No condition: the cursor has passed them, so nothing reads or writes them again.
 * Success: resolves. Failure: throws; what is left is dead weight below the cursor, never
 * delivered (a crash here strands nothing).
 */
export async function deletePassed(ctx: PositionStore, keys: readonly Key[]): Promise<void> {
  await Promise.all(keys.map((k) => ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: { pk: k.pk, sk: k.sk } }))));
}

/**
 * Peek's read of a positioned partition (R8): up to `want` messages from position `from` on,
 * in position order, each of a request that was delivered whole: every position of it holds
 * a message (no tombstone, no hole), or it has no tombstone and began below `claimedTo()`, the
 * partition's claim cursor (a receiver took it whole, and what is missing was completed since).
 * Tombstones, the messages of void requests and of requests not yet whole are left out.
 * Reads only: eventually consistent Queries of the partition from `from` (and, when the first
 * message's request began before `from`, of that request's earlier positions), page after page
 * until `want` are found or the partition ends; `claimedTo` is asked only when a request has a
 * free position, at most once. No condition, nothing written; a stale read at worst leaves out
 * a request that was just made whole.
 */
export async function peekPositions(
  ctx: PositionStore,
  partitionPk: string,
  from: number,
  want: number,
  claimedTo: () => Promise<number>,
): Promise<PositionedItem[]> {
  let cursor: Promise<number> | undefined;
  const loaded = new Map<number, PositionedItem>();
  const query = async (start: number, end: number | undefined, limit: number) => {
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: end === undefined ? 'pk = :pk AND sk >= :from' : 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': partitionPk, ':from': padPosition(start), ...(end === undefined ? {} : { ':to': padPosition(end) }) },
        Limit: limit,
      }),
    );
    for (const item of (out.Items ?? []) as PositionedItem[]) loaded.set(positionOfSk(item.sk), item);
    return out.LastEvaluatedKey ? positionOfSk(String(out.LastEvaluatedKey.sk)) : undefined;
  };
  /** Every position up to this one is known (loaded, or free when read). */
  let knownTo = from - 1;
  let exhausted = false;
  const reach = async (p: number) => {
    while (knownTo < p && !exhausted) {
      const last = await query(knownTo + 1, undefined, Math.max(want, p - knownTo) + 1);
      if (last === undefined) exhausted = true;
      else knownTo = last;
    }
  };
  const found: PositionedItem[] = [];
  let p = from;
  let first = true;
  while (found.length < want) {
    await reach(p);
    const later = [...loaded.keys()].filter((q) => q >= p).sort((a, b) => a - b);
    if (later.length === 0) break;
    p = later[0]!;
    const item = loaded.get(p)!;
    // A `done` marker is a ticketed partition's completed message, never shown.
    if (item.tomb || item.done !== undefined) {
      p++;
      continue;
    }
    const start = item.rf ?? p;
    const end = start + (item.rn ?? 1);
    if (first && start < from) await query(start, from - 1, from - start);
    first = false;
    await reach(end - 1);
    const parts = Array.from({ length: end - start }, (_, i) => loaded.get(start + i)).map((q) => (q?.done !== undefined ? undefined : q));
    const voided = parts.some((q) => q?.tomb);
    const whole = !voided && (parts.every((q) => q !== undefined) || start < (await (cursor ??= claimedTo())));
    if (whole) for (let q = p; q < end && found.length < want; q++) if (parts[q - start]) found.push(parts[q - start]!);
    p = end;
  }
  return found;
}
