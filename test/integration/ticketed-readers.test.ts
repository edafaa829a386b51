/**
 * The readers of a positioned partition on a ticketed one (lib/store/tickets.ts), on DynamoDB
 * Local: the cursor stands at `TICKETED`, the head is past the counter's `taken`, a complete
 * leaves a `done` marker and a ticket in flight holds its messages. Peek (R8, R3: untaken
 * messages at delivery count 0, held ones at their count, markers and tombstones never shown),
 * the counts (E6: held and untaken messages once, markers not at all) and `partitionIsEmpty`
 * (R2: not empty while a ticket holds a message or one waits past `taken`). The partitions are
 * built with tickets.ts's own operations.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { partitionIsEmpty, peekedDeliveryCount, readHeadCursor } from '../../lib/store/leases.js';
import { tallyPartition } from '../../lib/store/positioned-counts.js';
import { positionOfSk } from '../../lib/store/keys.js';
import { peekPositions, type PositionStore } from '../../lib/store/positions.js';
import { completeTicketed, forgetTickets, giveBack, lapsedTickets, markTicketed, readTicket, takeBackTickets, takeTicket } from '../../lib/store/tickets.js';
import { positionedPartitions, sendAtPositions, type Deps } from '../support/positioned-partitions.js';
import { faultyClient, InjectedCrash, is } from '../support/faults.js';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const { clock, open, newPartition } = positionedPartitions();
let deps: Deps;

beforeAll(async () => {
  deps = await open('ticketed-readers');
});

const range = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const send = async (ctx: PositionStore, pk: string, bodies: string[]) => (await sendAtPositions(ctx, pk, bodies)).outcome;

async function ticketed(): Promise<string> {
  const pk = newPartition();
  expect(await markTicketed(deps, pk)).toBe(true);
  return pk;
}

/** What peek shows of the partition: position and delivery count, in order. */
async function peeked(pk: string): Promise<[number, number][]> {
  const cursor = await readHeadCursor(deps, pk);
  const items = await peekPositions(deps, pk, 1, 100, async () => cursor.pos);
  return items.map((i) => [positionOfSk(i.sk), peekedDeliveryCount(i, cursor)]);
}

describe('readers of a ticketed partition', () => {
  it('R8/E6/R2: a marker, a held message and untaken ones each read right', async () => {
    const pk = await ticketed();
    for (const body of range('m', 5)) expect(await send(deps, pk, [body])).toBe('written');
    // R2: nothing taken yet, five wait past `taken`.
    expect(await partitionIsEmpty(deps, pk)).toBe(false);
    expect(await peeked(pk)).toEqual([
      [1, 0],
      [2, 0],
      [3, 0],
      [4, 0],
      [5, 0],
    ]);
    const take = await takeTicket(deps, pk, 2, { lockMs: LOCK });
    const read = await readTicket(deps, pk, take.ticket!);
    expect(read.messages.map((m) => positionOfSk(m.item.sk))).toEqual([1, 2]);
    expect(await completeTicketed(deps, pk, read.messages[0]!.token)).toBe('completed');
    expect(await readHeadCursor(deps, pk)).toMatchObject({ pos: 3, tickets: 1 });
    // R8/R3: the marker at 1 is never shown; 2 is held (delivered once); 3..5 not yet delivered.
    expect(await peeked(pk)).toEqual([
      [2, 1],
      [3, 0],
      [4, 0],
      [5, 0],
    ]);
    // E6: the held message and the untaken ones once each, the marker not at all.
    expect(await tallyPartition(deps, pk)).toMatchObject({ active: 4, held: 1, unread: 0 });
    expect(await partitionIsEmpty(deps, pk)).toBe(false);

    // Everything taken and completed: only markers are left, and the tickets in flight.
    expect(await completeTicketed(deps, pk, read.messages[1]!.token)).toBe('completed');
    const rest = await takeTicket(deps, pk, 3, { lockMs: LOCK });
    const restRead = await readTicket(deps, pk, rest.ticket!);
    for (const m of restRead.messages) expect(await completeTicketed(deps, pk, m.token)).toBe('completed');
    expect(await peeked(pk)).toEqual([]);
    expect(await tallyPartition(deps, pk)).toMatchObject({ active: 0, sizeInBytes: 0, held: 0 });
    // R2: a ticket still on the counter may yet be taken back, so the partition is not empty...
    expect(await partitionIsEmpty(deps, pk)).toBe(false);
    // ...until its entry leaves (settled whole).
    await forgetTickets(deps, pk, [take.ticket!.id, rest.ticket!.id]);
    expect(await partitionIsEmpty(deps, pk)).toBe(true);
  });

  it('R8/R3/E6/R2: a lapsed ticket taken back into `back`, and a ticket given back', async () => {
    const pk = await ticketed();
    expect(await send(deps, pk, range('r', 3))).toBe('written');
    const take = await takeTicket(deps, pk, 3, { lockMs: LOCK });
    const read = await readTicket(deps, pk, take.ticket!);
    expect(read.messages).toHaveLength(3);
    expect(await completeTicketed(deps, pk, read.messages[0]!.token)).toBe('completed');
    clock.advance(LOCK + SECOND);
    const counter = (await takeTicket(deps, pk, 1, { lockMs: LOCK, look: true })).counter;
    const outcomes = await takeBackTickets(deps, pk, lapsedTickets(counter, clock.now()));
    expect([...outcomes.values()]).toEqual(['returned']);
    const cursor = await readHeadCursor(deps, pk);
    expect(cursor).toMatchObject({ pos: 4, tickets: 0 });
    expect((cursor.back ?? []).map(([p]) => p)).toEqual([2, 3]);
    // R3: queued back after one delivery, each waits for its second.
    expect(await peeked(pk)).toEqual([
      [2, 1],
      [3, 1],
    ]);
    expect(await tallyPartition(deps, pk)).toMatchObject({ active: 2, held: 2 });
    // R2: `back` holds them.
    expect(await partitionIsEmpty(deps, pk)).toBe(false);

    // A ticket given back whole holds its message in an entry of its own (R10): not empty.
    const other = await ticketed();
    expect(await send(deps, other, ['g0'])).toBe('written');
    const held = await takeTicket(deps, other, 1, { lockMs: LOCK });
    expect(await giveBack(deps, other, held.ticket!, 0, clock.now())).toBeDefined();
    expect(await tallyPartition(deps, other)).toMatchObject({ active: 1, held: 1 });
    expect(await partitionIsEmpty(deps, other)).toBe(false);
    // R3: a message given back before it was handed out peeks at delivery count 0.
    expect(await peeked(other)).toEqual([[1, 0]]);
  });

  it('R8/R3: a lapsed ticket whose take-back marked its messages but died before queuing them peeks at the deliveries so far, as before the lapse', async () => {
    const pk = await ticketed();
    expect(await send(deps, pk, range('c', 2))).toBe('written');
    const take = await takeTicket(deps, pk, 2, { lockMs: LOCK });
    expect((await readTicket(deps, pk, take.ticket!)).messages).toHaveLength(2);
    expect(await peeked(pk)).toEqual([
      [1, 1],
      [2, 1],
    ]);
    // Lapsed, not yet taken back: each was delivered once.
    clock.advance(LOCK + SECOND);
    expect(await peeked(pk)).toEqual([
      [1, 1],
      [2, 1],
    ]);
    // A take-back dies at its last step (the transaction that queues them in `back`): both are marked, neither queued.
    const dying = faultyClient(deps.db, { match: is(TransactWriteCommand) });
    const counter = (await takeTicket(deps, pk, 1, { lockMs: LOCK, look: true })).counter;
    await expect(takeBackTickets({ ...deps, db: dying.db }, pk, lapsedTickets(counter, clock.now()))).rejects.toBeInstanceOf(InjectedCrash);
    expect(dying.log.tripped).toBe(1);
    expect((await readHeadCursor(deps, pk)).back ?? []).toEqual([]);
    expect(await peeked(pk)).toEqual([
      [1, 1],
      [2, 1],
    ]);
    // The next take-back queues them; each waits for its second delivery, and gets it.
    const again = (await takeTicket(deps, pk, 1, { lockMs: LOCK, look: true })).counter;
    expect([...(await takeBackTickets(deps, pk, lapsedTickets(again, clock.now()))).values()]).toEqual(['returned']);
    expect(await peeked(pk)).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it('a cursor-claimed partition reads as before: no counter read, no tickets', async () => {
    const pk = newPartition();
    expect(await send(deps, pk, ['c0'])).toBe('written');
    expect(await readHeadCursor(deps, pk)).toMatchObject({ pos: 1, tickets: 0 });
    expect(await peeked(pk)).toEqual([[1, 0]]);
    expect(await tallyPartition(deps, pk)).toMatchObject({ active: 1, held: 0 });
    expect(await partitionIsEmpty(deps, pk)).toBe(false);
  });
});
