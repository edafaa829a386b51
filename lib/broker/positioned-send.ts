/**
 * Sending into a positioned queue (`isPositioned`; store/positions.ts): a request's messages of
 * one partition draw their positions with one counter write and are put there, in the order
 * the request holds them. A message's sequence number is its position (sequence.ts
 * `positionedSeq`), so it is known only once drawn; its item is today's message item without
 * the `ready` and `due` indexes' attributes (receives find it by position, and its expiry is
 * not the sweeper's agenda) and without lock attributes (locks live in leases).
 *
 * What answers are given (S1): 'written' acknowledges; 'retry' (a receiver tombstoned a hole
 * of the request before its put, or the draw grew too old to put) answers `retryLater`, a
 * retryable Throttled (HTTP 503 with Retry-After, ServiceBusy to our client, ServerBusy to the
 * Azure SDK), and the request is void: a receiver never delivers a part of it.
 *
 * Scheduled messages of a positioned queue stay in today's layout (their state is Scheduled;
 * the sweeper and cancel-scheduled keep working on them), as do dead-letter copies; but a
 * scheduled message draws its number from the partition's counter with the request, so
 * numbers grow in enqueue order (S2), without taking a position (`numberedAtSend`). A move
 * into the active subqueue (a dead letter forwarded, F3; a resubmit, D7) lands on positions
 * as a send does (`drawForMove`).
 */
import { BrokerError, entityNotFound } from '../errors.js';
import type { MessageItem } from '../messages/item.js';
import { positionedPk, positionKey } from '../store/keys.js';
import { storedMessage } from '../store/message-layout.js';
import { putNewMessages, withNumber, type TransactionPart } from '../store/messages.js';
import { cancellationCodes, partFailedCondition } from '../store/outcomes.js';
import {
  CounterRetired,
  isNumbering,
  joinDraw,
  joinNumbers,
  positionPutParts,
  putAtPositions,
  putTombstone,
  type Draw,
  type Numbering,
  type PutOutcome,
} from '../store/positions.js';
import { positionedSeq, scheduledSeq } from '../store/sequence.js';
import type { BrokerContext } from './context.js';
import { announceSessionMessages, putNewMessage, type SessionAnnouncements } from './message-items.js';
import { writeApart } from './written-apart.js';

/** S1: a positioned request that is void (`putAtPositions` said 'retry'); nothing of it is ever delivered, so the sender sends again. */
export const retryLater = () =>
  new BrokerError('Throttled', 'the message was not stored (its place in the queue was given up); send it again', { retryable: true, retryAfterSeconds: 1 });

/** A message bound for a positioned queue's active subqueue: written at positions, not into today's layout. */
export const goesToPositions = (item: MessageItem, positioned: ReadonlySet<string>) =>
  positioned.has(item.eid) && item.subqueue === 'active' && item.state === 'Active';

/**
 * A scheduled message bound for a positioned queue's active subqueue: stored in today's layout
 * until due (received from there, cancelled there, S6), but numbered from its partition's
 * position counter at send (S2; sequence.ts `scheduledSeq`): after the last position drawn,
 * taking none (positions.ts `numberScheduled`), or, between two of its request's messages, after
 * the request's own position before it (`scheduledAround`), so receivers never meet it on the positions and
 * a run of scheduled messages costs a receive nothing. Only when the numbers after one position
 * run out (4,095 scheduled messages with no message sent between) do they draw positions of
 * their own, which get tombstones (`passOver`) that receivers pass over at once.
 */
export const numberedAtSend = (item: MessageItem, positioned: ReadonlySet<string>) =>
  positioned.has(item.eid) && item.subqueue === 'active' && item.state === 'Scheduled';

/** `items` split, each in its order: those bound for positions (`goesToPositions`) and the rest, for today's layout. */
export function splitForPositions(items: readonly MessageItem[], positioned: ReadonlySet<string>): { onPositions: MessageItem[]; today: MessageItem[] } {
  const onPositions: MessageItem[] = [];
  const today: MessageItem[] = [];
  for (const item of items) (goesToPositions(item, positioned) ? onPositions : today).push(item);
  return { onPositions, today };
}

/**
 * E4 for a request written beside its entity read (send.ts): the request draws its positions,
 * then waits here for the read; only when the read agrees with the entity it wrote with are the
 * messages put. When it does not, nothing was put: the drawn positions get tombstones (so no
 * receiver waits for them) and the writer throws `Withdrawn`. Nothing is taken back, because
 * nothing of a disagreeing request is ever written.
 */
export class EntityGate {
  private arrive!: () => void;
  private decide!: (agreed: boolean) => void;
  /** Resolves once the writer reached the gate (its positions drawn): the work the read runs beside. */
  readonly reached = new Promise<void>((resolve) => (this.arrive = resolve));
  private readonly decided = new Promise<boolean>((resolve) => (this.decide = resolve));

  /** The read's verdict: the entity is as the request assumed it. */
  open(agreed: boolean): void {
    this.decide(agreed);
  }

  /** Waits for the verdict (the writer, once its positions are drawn). */
  async pass(): Promise<boolean> {
    this.arrive();
    return this.decided;
  }
}

/** A positioned request that was not written because its entity read disagreed (`EntityGate`). */
export class Withdrawn extends Error {
  constructor() {
    super('withdrawn: the entity changed under the send');
    this.name = 'Withdrawn';
  }
}

/** The attributes a positioned message is put with: today's item without key, index and lock attributes. */
export function positionedPayload(item: MessageItem): Record<string, unknown> {
  const { pk: _pk, sk: _sk, rpk: _rpk, rsk: _rsk, dpk: _dpk, dsk: _dsk, lockToken: _lt, lockedUntil: _lu, ...rest } = storedMessage(item);
  return rest;
}

/** One partition's share of a request: its messages in request order, and their positions once drawn. */
interface Group {
  pk: string;
  items: MessageItem[];
  /** Scheduled messages (`numberedAtSend`): numbered without positions where the counter allows. */
  scheduled?: boolean;
  draw?: Draw;
  numbers?: Numbering;
}

function groupsOf(items: readonly MessageItem[], scheduled = false): Group[] {
  const groups = new Map<string, Group>();
  for (const item of items) {
    const pk = positionedPk(item.eid, item.subqueue, item.partition);
    let group = groups.get(pk);
    if (!group) groups.set(pk, (group = { pk, items: [], ...(scheduled ? { scheduled } : {}) }));
    group.items.push(item);
  }
  return [...groups.values()];
}

/**
 * A group of scheduled messages (`numberedAtSend`) under the numbers it drew, in today's
 * layout: after the last position (`Numbering`), or, when the counter's low bits after it ran
 * out, each at a position of its own (which `passOver` tombstones).
 */
const heldAt = (group: Group): MessageItem[] =>
  group.items.map((item, i) =>
    withNumber(
      item,
      group.numbers ? scheduledSeq(group.numbers.after, item.partition, group.numbers.low + i) : scheduledSeq(group.draw!.first + i, item.partition),
    ),
  );

/**
 * Tombstones the positions drawn for scheduled messages whose numbers ran out
 * (`numberScheduled`'s fallback), the one write that keeps receivers from waiting for them.
 * Best effort and independent of the messages' own put: a tombstone that fails (or a crash
 * before it) leaves a hole, which receivers tombstone themselves once it has aged, as a crashed
 * sender's; a message put that fails leaves only the tombstone. Neither is ever delivered from
 * the position. Numbers without positions leave nothing to pass over.
 */
async function passOver(ctx: BrokerContext, groups: readonly Group[]): Promise<void> {
  await giveUp(ctx, [...groups]);
}

/** The group's messages numbered by their positions (S2: a partition's numbers grow with its positions). */
function placed(group: Group): MessageItem[] {
  const draw = group.draw!;
  return group.items.map((item, i) => {
    const position = draw.first + i;
    return { ...item, ...positionKey(group.pk, position), seq: positionedSeq(position, item.partition).toString() };
  });
}

/** One request's place in its batch's order of draws (`DrawTurns`). */
export interface DrawTurn {
  /** Settles once the request before it in the batch has joined its draws (`joinDraw`), or will not draw. */
  wait: Promise<void>;
  /** Lets the next request draw: called once this one has joined its draws, or knows it will not draw. Idempotent. */
  end: () => void;
}

/**
 * S2 for a batch whose messages are sent one request each (duplicate detection's markers,
 * forwarding, a topic's fan-out: send.ts `deliverBatch`): requests drawing at once get their
 * positions in the order DynamoDB applies their draws, which is not the batch's, and a
 * position is the sequence number. Each request's draws wait for the request before it to
 * have joined its partitions' draws (`joinDraw`, which hands out positions in the order
 * requests join), so the batch's requests share draws instead of drawing one after
 * another; only the draws wait, the puts still run at once.
 */
export class DrawTurns {
  private readonly ends: (() => void)[] = [];
  private readonly ended: Promise<void>[];

  constructor(size: number) {
    this.ended = Array.from({ length: size }, () => new Promise<void>((resolve) => this.ends.push(resolve)));
  }

  /** The turn of the batch's request `index`. */
  turn(index: number): DrawTurn {
    return { wait: index === 0 ? Promise.resolve() : this.ended[index - 1]!, end: this.ends[index]! };
  }
}

/**
 * Draws every group's positions (one counter write each, shared with the process's other
 * requests to the partition drawing at the same time: `joinDraw`), then waits at the gate; on a
 * disagreeing read, tombstones them and throws `Withdrawn`. A partition whose incarnation was
 * already reaped (E4, `CounterRetired`) is EntityNotFound, the other groups' draws tombstoned.
 */
async function drawAll(ctx: BrokerContext, groups: Group[], gate?: EntityGate, turn?: DrawTurn): Promise<void> {
  await turn?.wait;
  let draws: Promise<void>[];
  try {
    // Each group joins its partition's line here, before anything is awaited (`joinDraw`), so
    // the batch's next request may join now: it is behind this one in every line (S2).
    draws = groups.map(async (g) => {
      if (!g.scheduled) g.draw = await joinDraw(ctx, g.pk, g.items.length);
      else {
        const got = await joinNumbers(ctx, g.pk, g.items.length);
        if (isNumbering(got)) g.numbers = got;
        else g.draw = got;
      }
    });
  } finally {
    turn?.end();
  }
  const drawn = await Promise.allSettled(draws);
  const failed = drawn.find((d): d is PromiseRejectedResult => d.status === 'rejected');
  if (failed) {
    await giveUp(ctx, groups);
    const retired = failed.reason instanceof CounterRetired ? groups.find((g) => g.pk === failed.reason.partitionPk) : undefined;
    throw retired ? entityNotFound(retired.items[0]!.entity) : failed.reason;
  }
  if (gate && !(await gate.pass())) {
    await giveUp(ctx, groups);
    throw new Withdrawn();
  }
}

/**
 * Tombstones a request's positions that nothing was put at, so receivers pass them at once
 * instead of waiting for the hole to age. Best effort: a tombstone that fails leaves a hole,
 * which receivers tombstone themselves (positions.ts `findHead`).
 */
async function giveUp(ctx: BrokerContext, groups: Group[]): Promise<void> {
  const positions = groups.flatMap((g) => (g.draw ? Array.from({ length: g.draw.count }, (_, i) => ({ pk: g.pk, position: g.draw!.first + i })) : []));
  await Promise.all(positions.map(({ pk, position }) => putTombstone(ctx, pk, position).catch(() => false)));
}

/** A move's copies drawn onto positions (`drawForMove`). */
export interface DrawnCopies {
  /** The copies in the order given, numbered by their positions. */
  items: MessageItem[];
  /** The transaction parts that put them there, each conditioned on its position being empty. */
  parts: TransactionPart[];
  /** Tombstones the drawn positions, for a move whose transaction did not go through (best effort). */
  giveUp: () => Promise<void>;
}

/**
 * D3 into a positioned queue (moves.ts `moveMessage`): draws positions for a move's copies,
 * one counter write a partition, and gives the parts that put them there, exactly as a send's
 * transaction puts them (`positionedPayload`, `positionPutParts`), for the transaction that
 * also deletes the source. A crash after the draw leaves holes that receivers tombstone; the
 * source is still where it was, so a retry moves it once.
 */
export async function drawForMove(ctx: BrokerContext, items: readonly MessageItem[]): Promise<DrawnCopies> {
  const groups = groupsOf(items);
  await drawAll(ctx, groups);
  const numbered = new Map<MessageItem, MessageItem>();
  const parts: TransactionPart[] = [];
  for (const g of groups) {
    const copies = placed(g);
    copies.forEach((n, i) => numbered.set(g.items[i]!, n));
    // Built right after the draw: never past `LATEST_PUT_MS`, so never undefined.
    parts.push(...positionPutParts(ctx, g.pk, g.draw!, copies.map(positionedPayload))!);
  }
  return { items: items.map((i) => numbered.get(i)!), parts, giveUp: () => giveUp(ctx, groups) };
}

/** What a batch's positioned messages came to, per partition: stored (numbered) or void. */
export type BatchOutcome = { stored: MessageItem } | { error: unknown };

/**
 * A batch to a positioned queue (S4): its messages, one draw per partition for all of them, then
 * their puts; its scheduled messages (`numberedAtSend`) numbered around those positions in batch
 * order (`scheduledAround`: S2) and put in today's layout, each on its own. A partition's share
 * of messages is stored whole or not at all; each outcome (its stored item, or the error that
 * kept it from being stored) is returned in `items`' order. A draw refused, or `Withdrawn` (the
 * gate closed), throws for the whole batch.
 */
export async function writePositionedBatch(ctx: BrokerContext, items: readonly MessageItem[], gate?: EntityGate): Promise<BatchOutcome[]> {
  const positioned = new Set(items.map((i) => i.eid));
  const unplaced = items.find((i) => !goesToPositions(i, positioned) && !numberedAtSend(i, positioned));
  if (unplaced) throw new Error(`not for positions: ${unplaced.subqueue} ${unplaced.state}`);
  const { groups, scheduled, passed } = await drawRequest(ctx, items, positioned, gate);
  const outcomes = new Map<MessageItem, BatchOutcome>();
  try {
    await Promise.all([
      ...groups.map(async (g) => {
        const numbered = placed(g);
        let error: unknown;
        try {
          if ((await putAtPositions(ctx, g.pk, g.draw!, numbered.map(positionedPayload))) === 'retry') error = retryLater();
        } catch (e) {
          // Throttling past the SDK's retries, the network: the share's fate is the receivers' (a hole ages into a tombstone).
          error = e;
        }
        g.items.forEach((item, i) => outcomes.set(item, error === undefined ? { stored: numbered[i]! } : { error }));
      }),
      ...[...scheduled].map(async ([item, numbered]) => {
        try {
          outcomes.set(item, { stored: await putNewMessage(ctx, numbered) });
        } catch (e) {
          outcomes.set(item, { error: e });
        }
      }),
    ]);
  } finally {
    await passed;
  }
  return items.map((item) => outcomes.get(item)!);
}

/** S7 for a request with positioned messages, from deliver.ts, which owns the marker. */
export interface DuplicateCheck {
  /** The marker's transaction part, naming the first of the copies as numbered. */
  part: (numbered: readonly MessageItem[]) => TransactionPart;
  /** The receipt of the message first sent with the id, once the marker's part refused the transaction. */
  first: () => Promise<MessageItem>;
  /** For a request too large for one transaction: that receipt when a marker within its window is there now. */
  seen: () => Promise<MessageItem | undefined>;
  /** For a request too large for one transaction: the marker, put once the copies are. */
  record: (numbered: readonly MessageItem[]) => Promise<void>;
}

/**
 * One request's copies when some go to positioned queues or subscriptions (deliver.ts; a topic
 * send's fan-out is one request, each subscription its own group): `items` in request order,
 * `positioned` the incarnations whose active subqueue is positioned. Returns the items
 * as stored (positioned ones numbered by position), or the first message's receipt when
 * `duplicate` finds the id within its window (S7). `turn`: the request's place in its batch's
 * draws (`DrawTurns`), ended once it has drawn.
 *
 * - Positioned messages of one partition only, no marker, nothing else: one draw and the puts
 *   (`putAtPositions`), the common send.
 * - Anything more (a marker, several partitions, copies in today's layout beside them): one
 *   draw per partition, then one transaction of the marker, today's copies and the positioned
 *   puts, so the request lands whole or not at all (S1, S7). A transaction cancelled by a
 *   tombstone answers `retryLater`; by the marker, the first receipt. Either way the drawn
 *   positions get tombstones. A request too large for one transaction (a fan-out of more than
 *   99 copies) writes its copies in today's layout first, then the positioned ones, then the
 *   marker, as deliver.ts's `writeOnceLarge` does: a failure part-way can let a retry through
 *   as a duplicate, never lose a copy.
 *
 * A crash after a draw leaves holes that receivers tombstone once a later message is 5 s old
 * (positions.ts); the send was never acknowledged, so its client sends again.
 */
export async function writeWithPositions(
  ctx: BrokerContext,
  items: readonly MessageItem[],
  positioned: ReadonlySet<string>,
  options: {
    duplicate?: DuplicateCheck;
    announced?: SessionAnnouncements;
    gate?: EntityGate;
    turn?: DrawTurn;
    fits: (items: MessageItem[], extra: number) => boolean;
  },
): Promise<{ items: MessageItem[]; duplicateOf?: MessageItem }> {
  const today = splitForPositions(items, positioned).today;
  const { groups, scheduled, passed } = await drawRequest(ctx, items, positioned, options.gate, options.turn);
  const others = today.map((i) => scheduled.get(i) ?? i);
  try {
    return await writeDrawn(ctx, items, groups, others, numberedIn(groups), options);
  } finally {
    await passed;
  }
}

/**
 * Draws one request's positions and numbers its scheduled messages around them in request order
 * (`scheduledAround`, S2): each partition's line is joined by the scheduled messages before its
 * messages, then its messages, then those after them; those between are numbered from the
 * request's own positions. Returns the groups of messages (drawn), the scheduled messages as
 * numbered, by the item each was made from, and the tombstoning of positions that scheduled
 * messages drew when their numbers ran out (`passOver`), to await before answering.
 */
async function drawRequest(
  ctx: BrokerContext,
  items: readonly MessageItem[],
  positioned: ReadonlySet<string>,
  gate?: EntityGate,
  turn?: DrawTurn,
): Promise<{ groups: Group[]; scheduled: Map<MessageItem, MessageItem>; passed: Promise<void> | undefined }> {
  const groups = groupsOf(items.filter((i) => goesToPositions(i, positioned)));
  const { before, between, after } = scheduledAround(items, positioned);
  const leading = groupsOf(before, true);
  const trailing = groupsOf(after, true);
  // Scheduled messages are numbered apart, never part of a request of messages (S1).
  await drawAll(ctx, [...leading, ...groups, ...trailing], gate, turn);
  const held = [...leading, ...trailing];
  const scheduled = new Map<MessageItem, MessageItem>();
  for (const g of held) heldAt(g).forEach((n, i) => scheduled.set(g.items[i]!, n));
  for (const b of between) scheduled.set(b.item, betweenAt(groups, b));
  const drawnHeld = held.filter((g) => g.draw);
  return { groups, scheduled, passed: drawnHeld.length > 0 ? passOver(ctx, drawnHeld) : undefined };
}

/** A scheduled message between two of its request's messages of one partition: numbered after the one before it (`betweenAt`). */
interface Between {
  item: MessageItem;
  pk: string;
  /** The index, in its partition's group, of the request's message right before it. */
  afterIndex: number;
  /** Its place among the scheduled messages since that message, from 1. */
  low: number;
}

/**
 * A request's scheduled messages for positioned partitions (`numberedAtSend`), by where they
 * stand among its messages of the same partition, so that numbers follow the request's order
 * (S2, S4) as today's layout's do:
 *
 * - `before` the first, or with none: numbered from the counter after the last position drawn,
 *   in a turn of the partition's line before the request's draw;
 * - `after` the last: numbered from the counter after the request's own last position, in a
 *   turn after its draw (others number after that position too, through the counter's `sl`);
 * - `between` two: numbered after the request's own position right before them, which is
 *   never the last position drawn once its draw is made, so nobody else numbers after it, and
 *   no counter write is needed.
 */
function scheduledAround(items: readonly MessageItem[], positioned: ReadonlySet<string>): { before: MessageItem[]; between: Between[]; after: MessageItem[] } {
  const pkOf = (item: MessageItem) => positionedPk(item.eid, item.subqueue, item.partition);
  const messages = new Map<string, number>();
  for (const item of items) if (goesToPositions(item, positioned)) messages.set(pkOf(item), (messages.get(pkOf(item)) ?? 0) + 1);
  const before: MessageItem[] = [];
  const between: Between[] = [];
  const after: MessageItem[] = [];
  const seen = new Map<string, { messages: number; since: number }>();
  for (const item of items) {
    const pk = pkOf(item);
    const here = seen.get(pk) ?? { messages: 0, since: 0 };
    seen.set(pk, here);
    if (goesToPositions(item, positioned)) {
      here.messages++;
      here.since = 0;
    } else if (numberedAtSend(item, positioned)) {
      if (here.messages === 0) before.push(item);
      else if (here.messages === messages.get(pk)) after.push(item);
      else between.push({ item, pk, afterIndex: here.messages - 1, low: ++here.since });
    }
  }
  return { before, between, after };
}

/** A `between` scheduled message numbered after its request's message before it, once drawn. */
function betweenAt(groups: readonly Group[], b: Between): MessageItem {
  const group = groups.find((g) => g.pk === b.pk)!;
  return withNumber(b.item, scheduledSeq(group.draw!.first + b.afterIndex, b.item.partition, b.low));
}

/** Each positioned message of `groups` by the item it was made from, numbered by its position. */
function numberedIn(groups: readonly Group[]): Map<MessageItem, MessageItem> {
  const numbered = new Map<MessageItem, MessageItem>();
  for (const g of groups) placed(g).forEach((n, i) => numbered.set(g.items[i]!, n));
  return numbered;
}

/** `writeWithPositions` once every position is drawn: `others` are today's layout's copies, in request order. */
async function writeDrawn(
  ctx: BrokerContext,
  items: readonly MessageItem[],
  groups: Group[],
  others: MessageItem[],
  numbered: Map<MessageItem, MessageItem>,
  options: { duplicate?: DuplicateCheck; announced?: SessionAnnouncements; fits: (items: MessageItem[], extra: number) => boolean },
): Promise<{ items: MessageItem[]; duplicateOf?: MessageItem }> {
  const mine = groups.flatMap((g) => g.items);
  const inOrder = (stored: readonly MessageItem[]) => {
    let next = 0;
    return items.map((i) => numbered.get(i) ?? stored[next++]!);
  };

  if (others.length === 0 && !options.duplicate && groups.length === 1) {
    const g = groups[0]!;
    const outcome = await putAtPositions(ctx, g.pk, g.draw!, placed(g).map(positionedPayload));
    if (outcome === 'retry') throw retryLater();
    return { items: inOrder([]) };
  }

  const parts: TransactionPart[] = [];
  for (const g of groups) {
    const put = positionPutParts(ctx, g.pk, g.draw!, placed(g).map(positionedPayload));
    if (!put) {
      await giveUp(ctx, groups);
      throw retryLater();
    }
    parts.push(...put);
  }
  if (!options.fits([...others, ...mine], options.duplicate ? 1 : 0)) return writeLarge(ctx, groups, others, options, inOrder);

  await announceSessionMessages(ctx, others, options.announced);
  const markers = options.duplicate ? 1 : 0;
  try {
    const stored = await putNewMessages(ctx, others, {
      ...(options.duplicate ? { before: (n: readonly MessageItem[]) => [options.duplicate!.part(inOrder(n))] } : {}),
      after: parts,
    });
    return { items: inOrder(stored) };
  } catch (e) {
    const codes = cancellationCodes(e);
    const duplicate = options.duplicate !== undefined && partFailedCondition(codes, 0);
    const tombstoned = parts.some((_, i) => partFailedCondition(codes, markers + others.length + i));
    if (!duplicate && !tombstoned) throw e;
    await giveUp(ctx, groups);
    if (duplicate) return { items: [], duplicateOf: await options.duplicate!.first() };
    throw retryLater();
  }
}

/** The copies of a request too large for one transaction: today's layout's, the positioned ones, then the marker (`writeWithPositions`). */
async function writeLarge(
  ctx: BrokerContext,
  groups: Group[],
  others: MessageItem[],
  options: { duplicate?: DuplicateCheck; announced?: SessionAnnouncements },
  inOrder: (stored: readonly MessageItem[]) => MessageItem[],
): Promise<{ items: MessageItem[]; duplicateOf?: MessageItem }> {
  if (options.duplicate) {
    // S7 checked before anything is written, as deliver.ts's writeOnceLarge does.
    const first = await options.duplicate.seen();
    if (first) {
      await giveUp(ctx, groups);
      return { items: [], duplicateOf: first };
    }
  }
  await announceSessionMessages(ctx, others, options.announced);
  // Side by side; once one landed, another's failure answers that the message may be stored (S4).
  const written = await writeApart<MessageItem | PutOutcome>(
    [
      ...others.map((o) => async () => (await putNewMessages(ctx, [o]))[0]!),
      ...groups.map((g) => () => putAtPositions(ctx, g.pk, g.draw!, placed(g).map(positionedPayload))),
    ],
    (w) => w !== 'retry',
  );
  if (written.includes('retry')) throw retryLater();
  const all = inOrder(written.slice(0, others.length) as MessageItem[]);
  await options.duplicate?.record(all);
  return { items: all };
}
