/**
 * touchEntity (lib/broker/entities.ts), the one place a use of an entity is recorded:
 * `accessedAt` for E6 and the reaper's idle deadline (`dsk` on the `due` index) for I1/I2.
 * A fake `db` records the commands, so these run without DynamoDB.
 */
import { describe, expect, it } from 'vitest';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TOUCH_INTERVAL_MS, touchEntity, type EntityItem } from '../../lib/broker/entities.js';
import type { BrokerContext } from '../../lib/broker/context.js';
import { SequenceGenerator } from '../../lib/store/sequence.js';
import { defaults } from '../../lib/entities/properties.js';
import { ManualClock } from '../support/table.js';
import type { Json } from '../support/api.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);

function fakeContext(fail?: () => Error) {
  const clock = new ManualClock(T0);
  const sent: unknown[] = [];
  const db = {
    send: async (command: unknown) => {
      sent.push(command);
      // After a failed touch the entity is read back, to tell a lost race from a deleted entity.
      if (command instanceof GetCommand) return { Item: queue() };
      if (fail) throw fail();
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  const ctx: BrokerContext = { clock, db, tableName: 'fake', sequences: new SequenceGenerator() };
  return { ctx, clock, sent };
}

function queue(overrides: Partial<EntityItem> = {}): EntityItem {
  return {
    ...defaults,
    pk: 'queues',
    sk: 'q',
    kind: 'queue',
    name: 'q',
    eid: 'e1',
    path: 'queues/q',
    partitions: 1,
    createdAt: T0,
    updatedAt: T0,
    accessedAt: T0,
    autoDeleteOnIdle: 5 * MINUTE,
    ...overrides,
  };
}

const inputOf = (c: unknown): Json => (c as UpdateCommand).input;

describe('touchEntity: recording a use (I2, E6)', () => {
  it('E6/I2: a use less than a minute after the recorded access writes nothing', async () => {
    const { ctx, clock, sent } = fakeContext();
    const entity = queue();
    clock.advance(TOUCH_INTERVAL_MS - 1);

    await touchEntity(ctx, entity);

    expect(sent).toHaveLength(0);
    expect(entity.accessedAt).toBe(T0);
  });

  it('E6/I2: a use a minute or more after the recorded access writes accessedAt and moves the idle deadline', async () => {
    const { ctx, clock, sent } = fakeContext();
    const entity = queue();
    const now = clock.advance(4 * MINUTE);

    await touchEntity(ctx, entity);

    expect(sent).toHaveLength(1);
    const update = sent[0];
    expect(update).toBeInstanceOf(UpdateCommand);
    const input = inputOf(update);
    expect(input.Key).toEqual({ pk: 'queues', sk: 'q' });
    expect(input.UpdateExpression).toMatch(/accessedAt = :now/);
    expect(input.UpdateExpression).toMatch(/dsk = :deadline/);
    expect(input.ExpressionAttributeValues[':now']).toBe(now);
    expect(input.ExpressionAttributeValues[':deadline']).toBe(now + 5 * MINUTE + TOUCH_INTERVAL_MS); // idle time plus the grace for an unrecorded use
    // Only one of several concurrent users wins: the write is conditional on a stale accessedAt.
    expect(input.ConditionExpression).toMatch(/accessedAt < :stale/);
    expect(input.ExpressionAttributeValues[':stale']).toBe(now - TOUCH_INTERVAL_MS);
    expect(entity.accessedAt).toBe(now);
  });

  it('E6: two uses within the same minute write once', async () => {
    const { ctx, clock, sent } = fakeContext();
    const entity = queue();
    clock.advance(2 * MINUTE);

    await touchEntity(ctx, entity);
    clock.advance(30_000);
    await touchEntity(ctx, entity);

    expect(sent).toHaveLength(1);
  });

  it('E6: an entity without autoDeleteOnIdle gets accessedAt but no idle deadline (I1 does not apply)', async () => {
    const { ctx, clock, sent } = fakeContext();
    const entity = queue({ autoDeleteOnIdle: null });
    clock.advance(2 * MINUTE);

    await touchEntity(ctx, entity);

    expect(sent).toHaveLength(1);
    const input = inputOf(sent[0]);
    expect(input.UpdateExpression).not.toMatch(/dsk/);
    expect(input.ExpressionAttributeValues[':deadline']).toBeUndefined();
  });

  it('I2: a forced touch (update, new rule) writes even within the minute', async () => {
    const { ctx, clock, sent } = fakeContext();
    const entity = queue();
    const now = clock.advance(10_000);

    await touchEntity(ctx, entity, true);

    expect(sent).toHaveLength(1);
    const input = inputOf(sent[0]);
    expect(input.ConditionExpression).not.toMatch(/:stale/);
    expect(input.ExpressionAttributeValues[':deadline']).toBe(now + 5 * MINUTE + TOUCH_INTERVAL_MS); // idle time plus the grace for an unrecorded use
  });

  it('I2: losing the race to another user (condition failed) is no error', async () => {
    const failed = () => Object.assign(new Error('conditional'), { name: 'ConditionalCheckFailedException' });
    const { ctx, clock } = fakeContext(failed);
    const entity = queue();
    clock.advance(2 * MINUTE);

    await expect(touchEntity(ctx, entity)).resolves.toBeUndefined();
    expect(entity.accessedAt).toBe(T0);
  });

  it('I2: a store failure other than the condition is not swallowed', async () => {
    const throttled = () => Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' });
    const { ctx, clock } = fakeContext(throttled);
    const entity = queue();
    clock.advance(2 * MINUTE);

    await expect(touchEntity(ctx, entity)).rejects.toThrow('slow down');
  });

  describe('concurrent uses in one process', () => {
    /** A db whose writes wait for the test; reads answer `current`. */
    function heldContext(current: () => EntityItem | undefined) {
      const clock = new ManualClock(T0);
      const sent: unknown[] = [];
      const writes: { done: () => void; fail: (e: Error) => void }[] = [];
      const db = {
        send: (command: unknown) => {
          sent.push(command);
          if (command instanceof GetCommand) return Promise.resolve({ Item: current() });
          return new Promise((resolve, reject) => writes.push({ done: () => resolve({}), fail: reject }));
        },
      } as unknown as DynamoDBDocumentClient;
      const ctx: BrokerContext = { clock, db, tableName: 'fake', sequences: new SequenceGenerator() };
      return { ctx, clock, sent, writes };
    }
    const tick = () => new Promise((r) => setImmediate(r));

    it('E6/I2: uses whose reads all show a stale accessedAt write it once, and each takes it', async () => {
      const { ctx, clock, sent, writes } = heldContext(() => queue());
      const now = clock.advance(2 * MINUTE);
      const copies = [queue(), queue(), queue()];

      const touches = copies.map((e) => touchEntity(ctx, e));
      await tick();
      expect(sent).toHaveLength(1);
      writes[0]!.done();
      await Promise.all(touches);

      expect(copies.map((e) => e.accessedAt)).toEqual([now, now, now]);
      // A use whose read was made before that write landed writes nothing either.
      clock.advance(1_000);
      const late = queue();
      await touchEntity(ctx, late);
      expect(sent).toHaveLength(1);
      expect(late.accessedAt).toBe(now);
      // A minute after it, the next use writes again.
      clock.advance(TOUCH_INTERVAL_MS);
      const next = touchEntity(ctx, queue());
      await tick();
      expect(sent).toHaveLength(2);
      writes[1]!.done();
      await next;
    });

    it('E4/I2: uses of an entity deleted meanwhile: one write fails, one read tells, and every one is refused (404)', async () => {
      const { ctx, clock, sent, writes } = heldContext(() => undefined);
      clock.advance(2 * MINUTE);

      const touches = [queue(), queue(), queue()].map((e) =>
        touchEntity(ctx, e).then(
          () => 'touched',
          (e: Error) => e.name,
        ),
      );
      await tick();
      writes[0]!.fail(Object.assign(new Error('conditional'), { name: 'ConditionalCheckFailedException' }));

      expect(await Promise.all(touches)).toEqual(['BrokerError', 'BrokerError', 'BrokerError']);
      expect(sent.map((c) => (c as object).constructor.name)).toEqual(['UpdateCommand', 'GetCommand']);
      // Nothing remembered from a failed touch: the next use tries again.
      const again = touchEntity(ctx, queue());
      await tick();
      expect(sent).toHaveLength(3);
      writes[1]!.done();
      await again;
    });

    it('E4/I2: a touch of another incarnation of the same name is its own', async () => {
      const { ctx, clock, sent, writes } = heldContext(() => queue());
      clock.advance(2 * MINUTE);
      const touches = [touchEntity(ctx, queue({ eid: 'e1' })), touchEntity(ctx, queue({ eid: 'e2' }))];
      await tick();
      expect(sent).toHaveLength(2);
      writes.forEach((w) => w.done());
      await Promise.all(touches);
    });
  });
});
