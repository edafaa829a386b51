/**
 * The positioned layout's sending side (lib/store/positions.ts), on DynamoDB Local: positions
 * drawn per request keep the order requests drew in (S2, R2); a request is delivered whole or
 * not at all (S4); a sender that dies between its draw and its puts, or part-way through its
 * puts, holds the partition back only until the hole is old enough for a tombstone, and its
 * late put then fails and answers "retry" (S1); throttled puts and racing tombstones never put
 * a message and a tombstone at one position. Crashes through test/support/faults.ts, throttles
 * through test/support/dynamo-faults.ts; time from the ManualClock.
 */
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { positionKey } from '../../lib/store/keys.js';
import { drawPositions, findHead, HOLE_AFTER_MS, putAtPositions, putTombstone } from '../../lib/store/positions.js';
import { positionedPartitions, sendAtPositions, type Deps } from '../support/positioned-partitions.js';
import { faultyDeps, InjectedCrash, is } from '../support/faults.js';
import { faultyStore, onOperations } from '../support/dynamo-faults.js';

const { clock, open, newPartition } = positionedPartitions();
let deps: Deps;

beforeAll(async () => {
  deps = await open('positions');
});

const send = sendAtPositions;

/** Waits until the puts still in flight when a sibling put died have landed at `positions`. */
async function landed(pk: string, positions: number[]) {
  for (let tries = 0; tries < 100; tries++) {
    const got = await Promise.all(
      positions.map((p) => deps.db.send(new GetCommand({ TableName: deps.tableName, Key: positionKey(pk, p), ConsistentRead: true }))),
    );
    if (got.every((g) => g.Item)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`positions ${positions.join(', ')} never landed`);
}

const bodiesOf = (items: readonly Record<string, unknown>[]) => items.map((i) => i.b);

describe('positions: order and whole requests', () => {
  it('S2, R2: requests draw contiguous positions and are read in the order they drew, part of a whole request at a time', async () => {
    const pk = newPartition();
    const first = await send(deps, pk, ['a0', 'a1', 'a2']);
    const second = await send(deps, pk, ['b0']);
    expect(first).toMatchObject({ draw: { first: 1, count: 3 }, outcome: 'written' });
    expect(second).toMatchObject({ draw: { first: 4, count: 1 }, outcome: 'written' });
    const head = await findHead(deps, pk, 1, 2);
    expect(bodiesOf(head.take)).toEqual(['a0', 'a1']);
    expect(head.next).toBe(3);
    const rest = await findHead(deps, pk, head.next, 10);
    expect(bodiesOf(rest.take)).toEqual(['a2', 'b0']);
    expect(rest.next).toBe(5);
    expect(rest.tombstoned).toEqual([]);
  });

  it('S1, S4: a sender that dies between its draw and its put holds later messages back only until the hole ages; its late put answers retry', async () => {
    const pk = newPartition();
    const draw = await drawPositions(deps, pk, 2); // the sender dies here
    await send(deps, pk, ['later']);
    expect((await findHead(deps, pk, 1, 10)).take).toEqual([]);
    clock.advance(HOLE_AFTER_MS - 1);
    expect((await findHead(deps, pk, 1, 10)).take).toEqual([]);
    clock.advance(1);
    const head = await findHead(deps, pk, 1, 10);
    expect(head.tombstoned).toEqual([1, 2]);
    expect(bodiesOf(head.take)).toEqual(['later']);
    expect(await putAtPositions(deps, pk, draw, [{ b: 'late-0' }, { b: 'late-1' }])).toBe('retry');
    // Read again from the start: the tombstones are passed, nothing of the void request shows.
    const again = await findHead(deps, pk, 1, 10);
    expect(bodiesOf(again.take)).toEqual(['later']);
    expect(again.passed).toEqual([1, 2]);
  });

  it('S4, D3: a batch whose second put never went out (the Lambda died) is never delivered in part, and voided once its hole ages', async () => {
    const pk = newPartition();
    // The three puts go out together: the third was on its way when the second died.
    const dying = faultyDeps(deps, { match: is(PutCommand), nth: 2, afterwards: 'lives' });
    const draw = await drawPositions(dying, pk, 3);
    await expect(putAtPositions(dying, pk, draw, [{ b: 'x0' }, { b: 'x1' }, { b: 'x2' }])).rejects.toThrow(InjectedCrash);
    await landed(pk, [1, 3]);
    await send(deps, pk, ['after']);
    // Positions 1 and 3 landed, 2 did not: nothing of the request, nor after it, is deliverable yet.
    const early = await findHead(deps, pk, 1, 10);
    expect(early.take).toEqual([]);
    expect(early.next).toBe(1);
    clock.advance(HOLE_AFTER_MS);
    const head = await findHead(deps, pk, 1, 10);
    expect(head.tombstoned).toEqual([2]);
    expect(bodiesOf(head.voided)).toEqual(['x0', 'x2']);
    expect(bodiesOf(head.take)).toEqual(['after']);
    // The sender's own put of position 2, were it only late, fails: its request answers retry.
    expect(await putAtPositions(deps, pk, { ...draw, first: 2, count: 1 }, [{ b: 'x1' }])).toBe('retry');
  });

  it('S4: a request whose first put never landed is voided whole once its hole ages, however little the receiver wants', async () => {
    const pk = newPartition();
    // The three puts go out together: the others were on their way when the first died.
    const dying = faultyDeps(deps, { match: is(PutCommand), nth: 1, afterwards: 'lives' });
    const draw = await drawPositions(dying, pk, 3);
    await expect(putAtPositions(dying, pk, draw, [{ b: 'v0' }, { b: 'v1' }, { b: 'v2' }])).rejects.toThrow(InjectedCrash);
    await landed(pk, [2, 3]);
    clock.advance(HOLE_AFTER_MS);
    const head = await findHead(deps, pk, 1, 1);
    expect(head.take).toEqual([]);
    expect(head.tombstoned).toEqual([1]);
    expect(bodiesOf(head.voided)).toEqual(['v1', 'v2']);
    expect(head.next).toBe(4);
  });

  it('S1: a crash after the counter write (the sender never learns its positions) leaves holes that later sends wait out, never a loss', async () => {
    const pk = newPartition();
    const dying = faultyDeps(deps, { match: is(UpdateCommand), phase: 'after' });
    await expect(drawPositions(dying, pk, 4)).rejects.toThrow(InjectedCrash);
    const { draw } = await send(deps, pk, ['y']);
    expect(draw.first).toBe(5);
    clock.advance(HOLE_AFTER_MS);
    const head = await findHead(deps, pk, 1, 10);
    expect(head.tombstoned).toEqual([1, 2, 3, 4]);
    expect(bodiesOf(head.take)).toEqual(['y']);
  });

  it('S1: a put refused for load past the SDK retries throws; the request is then decided by its hole, and a throttle the retries absorb writes it', async () => {
    const pk = newPartition();
    const store = faultyStore(deps.db, { throttle: { when: onOperations('PutItem'), attempts: 2 } }, { fastRetries: true });
    expect((await send({ ...deps, db: store.db }, pk, ['t0', 't1'])).outcome).toBe('written');
    expect(store.log.throttled).toBe(4);
    const out = faultyStore(deps.db, { throttle: { when: onOperations('PutItem') } }, { fastRetries: true });
    await expect(send({ ...deps, db: out.db }, pk, ['lost-0'])).rejects.toThrow(/throughput/i);
    await send(deps, pk, ['u']);
    clock.advance(HOLE_AFTER_MS);
    const head = await findHead(deps, pk, 1, 10);
    expect(bodiesOf(head.take)).toEqual(['t0', 't1', 'u']);
    expect(head.tombstoned).toEqual([3]);
  });

  it('S1: racing receivers and a late sender: each position ends with exactly one of a message and a tombstone', async () => {
    const pk = newPartition();
    const draws = await Promise.all(Array.from({ length: 8 }, () => drawPositions(deps, pk, 1)));
    await send(deps, pk, ['tail']);
    clock.advance(HOLE_AFTER_MS);
    const racers = draws.map((d, i) => (i % 2 === 0 ? putAtPositions(deps, pk, d, [{ b: `s${d.first}` }]) : Promise.resolve(undefined)));
    const buriers = draws.flatMap((d) => [putTombstone(deps, pk, d.first), putTombstone(deps, pk, d.first)]);
    const [puts, buried] = await Promise.all([Promise.all(racers), Promise.all(buriers)]);
    const heads = await Promise.all([findHead(deps, pk, 1, 20), findHead(deps, pk, 1, 20)]);
    expect(heads[0].take.map((i) => i.sk)).toEqual(heads[1].take.map((i) => i.sk));
    draws.forEach((d, i) => {
      const tombs = buried.slice(2 * i, 2 * i + 2).filter(Boolean).length;
      const put = puts[i] === 'written' ? 1 : 0;
      expect(tombs + put, `position ${d.first}`).toBe(1);
    });
    const delivered = new Set(bodiesOf(heads[0].take));
    for (const [i, d] of draws.entries()) expect(delivered.has(`s${d.first}`)).toBe(puts[i] === 'written');
    expect(delivered.has('tail')).toBe(true);
  });
});
