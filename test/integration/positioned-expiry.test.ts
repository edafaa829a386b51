/**
 * Expiry of messages at positions (lib/broker/positioned-expiry.ts): a claim's expired messages
 * are never handed out (T4), locked ones are left alone until their lock ends (T5), and they
 * are deleted or dead-lettered with TTLExpiredException under the claim's lease (T6), by a
 * receive or, for a queue nobody receives from, by the sweeper's pass (T7). No positioned
 * message carries a TTL, so DynamoDB never empties a position a request's other messages need.
 * A remover dying before or after its write, losing to a take-back, or refused for load, loses
 * and doubles nothing (D3).
 */
import { GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { jobBudget } from '../../lib/broker/budget.js';
import {
  claimUnexpired,
  expireClaimed,
  expiredBy,
  POSITIONED_PASS_EVERY_MINUTES,
  splitExpired,
  sweepPositionedExpiry,
  SWEEP_LOCK_MS,
} from '../../lib/broker/positioned-expiry.js';
import { expiryDescription } from '../../lib/broker/moves.js';
import { sweep } from '../../lib/broker/sweeper.js';
import type { EntityItem } from '../../lib/store/entities.js';
import { messageKey, positionKey } from '../../lib/store/keys.js';
import { claim, completeAtPosition, entryOfToken } from '../../lib/store/leases.js';
import type { PositionedItem } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import { faultyDeps, inputOf, is, transactionConflict, type Fault } from '../support/faults.js';
import { bodies, positionedQueues } from '../support/positioned-seeds.js';
import { messageItems } from '../support/stream.js';
import { apiClient } from '../support/api.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const LOCK = 30 * SECOND;
const { clock, world, open, createQueue, seed, runtime } = positionedQueues('pos-expiry');

beforeAll(async () => {
  await open();
});

/** Everything at the partition's positions, tombstones left out. */
async function atPositions(pk: string): Promise<PositionedItem[]> {
  const out = await world.deps.db.send(
    new QueryCommand({ TableName: world.deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  return ((out.Items ?? []) as PositionedItem[]).filter((i) => !i.tomb);
}

const bodyOf = (m: { item: PositionedItem }) => JSON.parse(m.item.body as string) as { n: string };
const receiveLike = async (entity: EntityItem, pk: string, want = 10, ctx = world.deps) => {
  const c = await claim(ctx, pk, want, { lockMs: LOCK });
  const { live, expired } = splitExpired(c.messages, clock.now());
  const tally = await expireClaimed({ ...world.broker.ctx, db: ctx.db }, entity, pk, expired);
  return { live, expired, tally };
};

// First: the pass looks at every positioned queue of the table, and the later tests leave lapsed leases for it to delete.
describe('T7: the idle pass', () => {
  it('T7: the sweep runs the pass in the first minute of each quarter hour; a pass over nothing expired and no lapsed lease writes nothing', async () => {
    const entity = await createQueue('quiet', { defaultMessageTimeToLive: 'PT1H' });
    await seed(entity, bodies('q', 2));
    clock.advance(MINUTE);
    const quarter = POSITIONED_PASS_EVERY_MINUTES * MINUTE;
    clock.current = Math.ceil(clock.current / quarter) * quarter + 5 * SECOND;
    // Counts the writes (none trips: `times` 0).
    const watched = faultyDeps(world.deps, { match: (c) => !is(GetCommand, QueryCommand)(c), times: 0 });
    const due = await sweep({ ...world.broker.ctx, db: watched.db }, jobBudget());
    expect(due.positioned).toMatchObject({ expired: 0, left: 0, complete: true });
    expect(watched.faults.seen).toBe(0); // no write of any kind
    clock.advance(MINUTE);
    expect((await sweep(world.broker.ctx, jobBudget())).positioned).toBeUndefined();
  });
});

describe('T4, T6: a receive never hands out an expired message and removes it', () => {
  it('T4, T6: expired messages are passed and deleted when the queue does not dead-letter them', async () => {
    const entity = await createQueue('gone', { defaultMessageTimeToLive: 'PT1M' });
    const { pk } = await seed(entity, bodies('a', 3));
    clock.advance(2 * MINUTE);
    const got = await receiveLike(entity, pk);
    expect(got.live).toEqual([]);
    expect(got.expired).toHaveLength(3);
    expect(got.tally).toEqual({ expired: 3, deadLettered: 0, left: 0 });
    expect(await atPositions(pk)).toEqual([]);
    expect(await messageItems(world.deps, 'gone', 'deadletter')).toEqual([]);
    expect((await runtime('gone')).activeMessageCount).toBe(0);
  });

  it('T6: with deadLetteringOnMessageExpiration, an expired message moves to the dead-letter subqueue under its own sequence number, with the reason, and settles there', async () => {
    const entity = await createQueue('dead', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const { pk, draw } = await seed(entity, bodies('a', 1));
    clock.advance(2 * MINUTE);
    const got = await receiveLike(entity, pk);
    expect(got.tally).toEqual({ expired: 1, deadLettered: 1, left: 0 });
    const seq = positionedSeq(draw.first, 0).toString();
    const stored = await world.deps.db.send(
      new GetCommand({ TableName: world.deps.tableName, Key: messageKey(entity.eid, 'deadletter', 0, seq), ConsistentRead: true }),
    );
    expect(stored.Item).toMatchObject({ deadLetterReason: 'TTLExpiredException', deadLetterErrorDescription: expiryDescription, deliveryCount: 0 });
    expect(stored.Item!.ttl).toBeUndefined(); // T9
    const dlq = await world.api('POST', '/queues/dead/$deadletterqueue/messages/receive', {});
    expect(dlq.status).toBe(200);
    expect(dlq.body.messages).toHaveLength(1);
    expect(dlq.body.messages[0]).toMatchObject({ sequenceNumber: seq, deadLetterReason: 'TTLExpiredException', body: { n: 'a0' } });
    const done = await world.api('POST', `/queues/dead/$deadletterqueue/messages/${seq}/complete`, { lockToken: dlq.body.messages[0].lockToken });
    expect(done.status).toBe(204);
    expect(await atPositions(pk)).toEqual([]);
  });

  it('T4, T1: a request whose messages have different times to live: the expired one is removed, the others delivered, none voided; no position carries a TTL', async () => {
    const entity = await createQueue('mixed-ttl');
    const { pk, outcome } = await seed(entity, [
      { body: { n: 'short' }, timeToLive: MINUTE },
      { body: { n: 'long' }, timeToLive: 60 * MINUTE },
      { body: { n: 'forever' } },
    ]);
    expect(outcome).toBe('written');
    const stored = await atPositions(pk);
    expect(stored.map((i) => [i.ttl, i.dpk, i.dsk, i.rpk, i.rsk])).toEqual([
      [undefined, undefined, undefined, undefined, undefined],
      [undefined, undefined, undefined, undefined, undefined],
      [undefined, undefined, undefined, undefined, undefined],
    ]);
    expect(stored[0]!.expiresAt).toBeDefined();
    clock.advance(2 * MINUTE);
    const got = await receiveLike(entity, pk);
    expect(got.live.map(bodyOf)).toEqual([{ n: 'long' }, { n: 'forever' }]);
    expect(got.expired.map(bodyOf)).toEqual([{ n: 'short' }]);
    expect(got.tally.expired).toBe(1);
    expect((await atPositions(pk)).map((i) => (JSON.parse(i.body as string) as { n: string }).n)).toEqual(['long', 'forever']);
    for (const m of got.live) expect(await completeAtPosition(world.deps, pk, m.token)).toBe('completed');
  });
});

describe('T4: a receive behind expired messages', () => {
  it('T4, T6, R2: claimUnexpired claims again past the expired ones, and returns only live messages', async () => {
    const entity = await createQueue('behind', { deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, [
      { body: { n: 'e0' }, timeToLive: MINUTE },
      { body: { n: 'e1' }, timeToLive: MINUTE },
      { body: { n: 'e2' }, timeToLive: MINUTE },
    ]);
    await seed(entity, [{ body: { n: 'l0' } }, { body: { n: 'l1' } }, { body: { n: 'l2' } }]);
    clock.advance(2 * MINUTE);
    const got = await claimUnexpired(world.broker.ctx, entity, pk, 2, { lockMs: LOCK });
    expect(got.messages.map(bodyOf)).toEqual([{ n: 'l0' }, { n: 'l1' }]);
    expect(got.expiry).toEqual({ expired: 3, deadLettered: 3, left: 0 });
    expect(got.leases).toHaveLength(2); // [e0, e1], then [e2, l0], then [l1]
    for (const m of got.messages) expect(await completeAtPosition(world.deps, pk, m.token)).toBe('completed');
    expect((await runtime('behind')).activeMessageCount).toBe(1);
  });
});

describe('T5: expiry does not touch a locked message', () => {
  it('T5: a message locked past its expiry completes; one whose lock runs out after it is expired at the next claim, never redelivered', async () => {
    const entity = await createQueue('locked', { defaultMessageTimeToLive: 'PT10S', deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, bodies('m', 2));
    const held = await receiveLike(entity, pk);
    expect(held.live).toHaveLength(2);
    clock.advance(20 * SECOND); // expired, still locked
    expect(await completeAtPosition(world.deps, pk, held.live[0]!.token)).toBe('completed');
    expect((await receiveLike(entity, pk)).expired).toEqual([]); // the other is still held
    clock.advance(LOCK);
    const after = await receiveLike(entity, pk);
    expect(after.live).toEqual([]);
    expect(after.expired.map(bodyOf)).toEqual([{ n: 'm1' }]);
    expect(after.tally).toEqual({ expired: 1, deadLettered: 1, left: 0 });
    // It was delivered once: the dead letter says so.
    const dead = await messageItems(world.deps, 'locked', 'deadletter');
    expect(dead.map((d) => [d.deliveryCount, d.deadLetterReason])).toEqual([[1, 'TTLExpiredException']]);
    expect(await atPositions(pk)).toEqual([]);
  });
});

describe('T7: the sweeper removes expired messages of a queue nobody receives from', () => {
  it('T7, T6: the pass removes the expired head, stops at a live message, and counts follow', async () => {
    const entity = await createQueue('idle', { deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, [
      { body: { n: 'e1' }, timeToLive: MINUTE },
      { body: { n: 'e2' }, timeToLive: MINUTE },
    ]);
    await seed(entity, [{ body: { n: 'live' } }, { body: { n: 'e3' }, timeToLive: MINUTE }]);
    clock.advance(2 * MINUTE);
    const report = await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    expect(report).toMatchObject({ expired: 2, deadLettered: 2, left: 0, raced: 0, complete: true });
    expect(report.queues).toBeGreaterThanOrEqual(1);
    expect((await messageItems(world.deps, 'idle', 'deadletter')).map((d) => d.deadLetterReason)).toEqual(['TTLExpiredException', 'TTLExpiredException']);
    // The live message holds back the removal of the one behind it (never its delivery: T4).
    expect((await atPositions(pk)).map((i) => (JSON.parse(i.body as string) as { n: string }).n)).toEqual(['live', 'e3']);
    expect((await runtime('idle')).activeMessageCount).toBe(2);
    const got = await receiveLike(entity, pk);
    expect(got.live.map(bodyOf)).toEqual([{ n: 'live' }]);
    expect(got.expired.map(bodyOf)).toEqual([{ n: 'e3' }]);
    for (const m of got.live) await completeAtPosition(world.deps, pk, m.token);
    expect((await runtime('idle')).activeMessageCount).toBe(0);
  });
});

describe('T7, R6: what the pass takes and leaves', () => {
  it('T7, S4: the pass may take part of a request, and a receive takes the rest of it from there', async () => {
    const entity = await createQueue('part');
    const { pk } = await seed(entity, [{ body: { n: 'old' }, timeToLive: MINUTE }, { body: { n: 'new' } }, { body: { n: 'old2' }, timeToLive: MINUTE }]);
    clock.advance(2 * MINUTE);
    await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    expect((await atPositions(pk)).map((i) => (JSON.parse(i.body as string) as { n: string }).n)).toEqual(['new', 'old2']);
    const got = await receiveLike(entity, pk);
    expect(got.live.map(bodyOf)).toEqual([{ n: 'new' }]);
    expect(got.expired.map(bodyOf)).toEqual([{ n: 'old2' }]);
    expect(got.live[0]!.deliveryCount).toBe(1);
  });

  it('T7, R6: a live message the pass takes back stays first in line, and nothing behind it is taken; a receive gets it, counted again', async () => {
    const entity = await createQueue('backline');
    const { pk } = await seed(entity, [{ body: { n: 'live' } }]);
    const held = await receiveLike(entity, pk);
    expect(held.live).toHaveLength(1);
    await seed(entity, [{ body: { n: 'old' }, timeToLive: MINUTE }]);
    clock.advance(2 * MINUTE); // the lock ran out, the second message expired
    const report = await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    expect(report.left).toBe(0);
    expect((await atPositions(pk)).map((i) => (JSON.parse(i.body as string) as { n: string }).n)).toEqual(['live', 'old']);
    const got = await receiveLike(entity, pk);
    expect(got.live.map((m) => [bodyOf(m).n, m.deliveryCount])).toEqual([['live', 2]]);
    expect(got.expired.map(bodyOf)).toEqual([{ n: 'old' }]);
    expect(await atPositions(pk)).toHaveLength(1);
  });
});

describe('D3: a remover that dies, loses or is refused loses and doubles nothing', () => {
  /** Expired messages in a dead-lettering queue, a claim taking them through `fault`, and the state once everything settles. */
  async function removal(name: string, fault: Fault) {
    const entity = await createQueue(name, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, bodies('x', 2));
    clock.advance(2 * MINUTE);
    const faulty = faultyDeps(world.deps, fault);
    const first = await receiveLike(entity, pk, 10, faulty);
    clock.advance(LOCK + SECOND);
    const second = await receiveLike(entity, pk);
    const dead = await messageItems(world.deps, name, 'deadletter');
    return { first, second, dead, left: await atPositions(pk), faults: faulty.faults };
  }
  const transaction = is(TransactWriteCommand);

  it('D3, T6: a remover that dies at its first move moves nothing more; the next claim after the lapse moves both, once each', async () => {
    const r = await removal('crash-dies', { match: transaction, phase: 'before' });
    expect(r.faults.tripped).toBe(1);
    expect(r.first.tally).toEqual({ expired: 0, deadLettered: 0, left: 2 });
    expect(r.second.tally).toEqual({ expired: 2, deadLettered: 2, left: 0 });
    expect(new Set(r.dead.map((d) => d.messageId)).size).toBe(2);
    expect(r.dead).toHaveLength(2);
    expect(r.left).toEqual([]);
  });

  it('D3, T6: a move refused before it lands leaves the message under its lease; the next claim after the lapse moves it, once', async () => {
    const r = await removal('crash-before', { match: transaction, phase: 'before', afterwards: 'lives' });
    expect(r.faults.tripped).toBe(1);
    expect(r.first.tally).toEqual({ expired: 1, deadLettered: 1, left: 1 });
    expect(r.second.expired.map((m) => entryOfToken(m.token)[1])).toEqual([1]); // taken back once
    expect(r.second.tally).toEqual({ expired: 1, deadLettered: 1, left: 0 });
    expect(r.dead.map((d) => d.messageId).sort()).toHaveLength(2);
    expect(new Set(r.dead.map((d) => d.messageId)).size).toBe(2);
    expect(r.left).toEqual([]);
  });

  it('D3, T6: a move whose answer is lost after it landed: the take-back finds it gone, and no second copy is made', async () => {
    const r = await removal('crash-after', { match: transaction, phase: 'after', afterwards: 'lives' });
    expect(r.first.tally).toEqual({ expired: 1, deadLettered: 1, left: 1 });
    expect(r.second.expired).toEqual([]);
    expect(new Set(r.dead.map((d) => d.messageId)).size).toBe(2);
    expect(r.dead).toHaveLength(2);
    expect(r.left).toEqual([]);
  });

  it('D3, T6: refused for load, the message stays under its lease and is moved after the lapse', async () => {
    const throttled = () => {
      throw new ProvisionedThroughputExceededException({ $metadata: {}, message: 'injected' });
    };
    const r = await removal('throttled', { match: transaction, times: 2, interleave: async () => throttled() });
    expect(r.first.tally).toEqual({ expired: 0, deadLettered: 0, left: 2 });
    expect(r.second.tally).toEqual({ expired: 2, deadLettered: 2, left: 0 });
    expect(r.dead).toHaveLength(2);
    expect(r.left).toEqual([]);
  });

  it('D3, T6: a take-back between the claim and the move wins; the slow remover writes nothing, and the message is moved once', async () => {
    const entity = await createQueue('slow', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, bodies('s', 1));
    clock.advance(2 * MINUTE);
    let other: Awaited<ReturnType<typeof receiveLike>> | undefined;
    const slow = faultyDeps(world.deps, {
      match: is(TransactWriteCommand),
      interleave: async () => {
        // The slow remover's lease lapses; another receiver takes it back and removes it first.
        clock.advance(LOCK + SECOND);
        other = await receiveLike(entity, pk);
      },
    });
    const first = await receiveLike(entity, pk, 10, slow);
    expect(other?.tally).toEqual({ expired: 1, deadLettered: 1, left: 0 });
    expect(first.tally).toEqual({ expired: 0, deadLettered: 0, left: 1 });
    expect(await messageItems(world.deps, 'slow', 'deadletter')).toHaveLength(1);
    expect(await atPositions(pk)).toEqual([]);
  });

  it('D3, T7: a sweeper dying between its claim and the move: the next pass, after the lease runs out, moves the message once', async () => {
    const entity = await createQueue('sweep-crash', { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true });
    const { pk } = await seed(entity, bodies('w', 1));
    clock.advance(2 * MINUTE);
    const dying = faultyDeps(world.deps, { match: (c) => is(TransactWriteCommand)(c) && inputOf(c).TransactItems?.[0]?.Delete?.Key?.pk === pk });
    const first = await sweepPositionedExpiry({ ...world.broker.ctx, db: dying.db }, jobBudget());
    expect(first.left).toBeGreaterThanOrEqual(1);
    expect(await atPositions(pk)).toHaveLength(1);
    clock.advance(SWEEP_LOCK_MS + SECOND);
    await sweepPositionedExpiry(world.broker.ctx, jobBudget());
    expect(await messageItems(world.deps, 'sweep-crash', 'deadletter')).toHaveLength(1);
    expect(await atPositions(pk)).toEqual([]);
  });
});

describe('T4: the predicate the claim and the sweeper share', () => {
  it('T4: a message is expired at its expiresAt, not before; one without expiresAt never', () => {
    const at = (expiresAt?: number) => ({ ...positionKey('p', 1), ...(expiresAt !== undefined ? { expiresAt } : {}) }) as PositionedItem;
    expect(expiredBy(1000)(at(1000))).toBe(true);
    expect(expiredBy(999)(at(1000))).toBe(false);
    expect(expiredBy(10 ** 15)(at())).toBe(false);
  });
});

describe('R3: a message a peek-lock claim took only to remove it, when the removal is refused, comes back counting no delivery', () => {
  /** Every move's transaction refused: for load, or (what a move answers busy after) for conflicts. */
  const refused = (why: 'load' | 'conflict' = 'load'): Fault => ({
    match: is(TransactWriteCommand),
    times: 10,
    interleave: async () => {
      throw why === 'load' ? new ProvisionedThroughputExceededException({ $metadata: {}, message: 'injected' }) : transactionConflict(2);
    },
  });
  const receiveWith = async (api: ReturnType<typeof apiClient>, name: string) => {
    const got = await api('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT0S' });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    return got.body.messages as unknown[];
  };

  it('R3, T6: an expired message whose dead-lettering was refused is dead-lettered after the lapse with the deliveries it had (none)', async () => {
    const name = 'uncounted-expiry';
    await createQueue(name, { defaultMessageTimeToLive: 'PT1M', deadLetteringOnMessageExpiration: true, lockDuration: 'PT30S' });
    expect((await world.api('POST', `/queues/${name}/messages`, { body: 'x' })).status).toBe(201);
    clock.advance(2 * MINUTE);
    expect(await receiveWith(apiClient(faultyDeps(world.deps, refused())), name)).toEqual([]);
    clock.advance(LOCK + SECOND);
    expect(await receiveWith(world.api, name)).toEqual([]);
    const dead = await messageItems(world.deps, name, 'deadletter');
    expect(dead.map((d) => d.deliveryCount)).toEqual([0]);
  });

  it('R3, D2: a message past its last delivery whose dead-lettering was refused is dead-lettered after the lapse with the deliveries it had', async () => {
    const name = 'uncounted-d2';
    await createQueue(name, { maxDeliveryCount: 1, lockDuration: 'PT30S' });
    expect((await world.api('POST', `/queues/${name}/messages`, { body: 'y' })).status).toBe(201);
    expect(await receiveWith(world.api, name)).toHaveLength(1); // its one delivery; the lock runs out
    clock.advance(LOCK + SECOND);
    expect(await receiveWith(apiClient(faultyDeps(world.deps, refused('conflict'))), name)).toEqual([]);
    clock.advance(LOCK + SECOND);
    expect(await receiveWith(world.api, name)).toEqual([]);
    const dead = await messageItems(world.deps, name, 'deadletter');
    expect(dead.map((d) => d.deliveryCount)).toEqual([1]);
  });
});
