/**
 * Entity items (E1-E6, I1-I4): queues and topics (`queues`/`topics` partitions), a topic's
 * subscriptions and filter rules (its `topic/<name>` partition), and the `gc` tombstone a
 * deleted incarnation leaves for the reaper (E4). Key formats in keys.ts; what an entity
 * means, and which write to make when, is the broker's (lib/broker/entities.ts).
 *
 * Each operation is one request (or one transaction) to the data table. A write whose
 * condition did not hold answers false; any other refusal of DynamoDB throws.
 */
import { DeleteCommand, GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps, EntityLayout } from '../deps.js';
import type { EntityKind, EntityProperties } from '../entities/properties.js';
import { cancelledOnCondition } from './outcomes.js';
import { entityKey, IDLE_DUE_PK, SUBSCRIPTION_SK_PREFIX, tableIndex, tombstoneKey, TOMBSTONE_PK, topicPartitionPk, type Key } from './keys.js';
import { queryAll } from './query.js';

type Store = Pick<Deps, 'db' | 'tableName'>;
type Item = Record<string, unknown>;
type TransactItems = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>;

export interface EntityItem extends EntityProperties, Key {
  kind: EntityKind;
  name: string;
  topic?: string;
  /** Incarnation id: messages are keyed by it, so a re-created entity starts empty (E4). */
  eid: string;
  /** `queues/orders`: the lower-case path stored on this entity's messages. */
  path: string;
  partitions: number;
  createdAt: number;
  updatedAt: number;
  accessedAt: number;
  /** Set when a deletion too large for one transaction has begun: the entity is gone for every use. */
  deleting?: boolean;
  /**
   * I2: the latest time a message scheduled into this queue or topic is due; until then the
   * entity is not idle. Raised by each scheduling send, lowered when a queue's latest
   * schedule is cancelled; read by the reaper with no count to consult.
   */
  scheduledUntil?: number;
  /**
   * The message layout, set at creation and never changed: absent for today's `ready` index,
   * `positions` for a queue whose messages sit at counter positions and are taken by a claim
   * cursor and leases (store/positions.ts, store/leases.ts), or by ticket (`ticketed`).
   */
  layout?: 'positions';
  /**
   * A positioned entity whose partitions' heads are taken by ticket (store/tickets.ts), set at
   * creation and never changed: every removal of its messages leaves a `done` marker, and a
   * lock token at take-back count 0 is a ticket's (design.md, "A claim that cannot lose").
   */
  ticketed?: true;
  /** Partitioned and created since ready marks exist: receives read the marks (ready-marks.ts). */
  readyMarks?: boolean;
  /**
   * S6, R2 on a positioned entity: from this time a receive reads today's layout before the
   * positions (broker/today-first.ts). Set when a message there became receivable (a scheduled
   * one activated, one abandoned); moved to the earliest lock end there, or removed, by a receive
   * that finds nothing receivable in it. Absent on every other entity.
   */
  todayFrom?: number;
  /** Raised by every write of `todayFrom`, which a receive's move is conditioned on (a mark made since it read stands). */
  todayVersion?: number;
  /** I1: on the reaper's agenda (`due` index, partition IDLE_DUE_PK) at its idle deadline. */
  dpk?: string;
  dsk?: number;
}

/** A deleted incarnation the reaper still has to clear (E4): `gc` / eid. */
export interface Tombstone {
  eid: string;
  partitions?: number;
  path?: string;
  deletedAt?: number;
  /** The incarnation's message layout: a positioned one leaves positioned partitions to clear too. */
  layout?: EntityLayout;
}

// Named condition parts.
const entityIsNew = 'attribute_not_exists(pk)';
const sameIncarnation = 'eid = :eid';
const notDeleting = 'attribute_not_exists(deleting)';
const usedLongAgo = 'accessedAt < :stale';
const unusedSince = 'accessedAt = :accessedAt';
const nameFree = 'attribute_not_exists(pk) OR deleting = :yes';
const heldForLess = '(attribute_not_exists(scheduledUntil) OR scheduledUntil < :at)';
const todayAsSeen = 'todayVersion = :seen';
const all = (...parts: string[]) => parts.join(' AND ');

const madeUnlessCondition = async (write: Promise<unknown>): Promise<boolean> => {
  try {
    await write;
    return true;
  } catch (e) {
    if (cancelledOnCondition(e)) return false;
    throw e;
  }
};

/**
 * Key: the entity's key (keys.ts `entityKey`). Reads the entity item, strongly consistent when
 * `consistent`. Returns it, or undefined when there is none (deleting ones included).
 */
export async function getEntity(store: Store, key: Key, consistent = false): Promise<EntityItem | undefined> {
  const out = await store.db.send(new GetCommand({ TableName: store.tableName, Key: { pk: key.pk, sk: key.sk }, ConsistentRead: consistent }));
  return out.Item as EntityItem | undefined;
}

/**
 * Key: the entity's key. Reads only its incarnation and deletion claim (`eid, deleting`),
 * strongly consistent: what A2's check of a rule's entity needs. Undefined when there is no item.
 */
export async function getEntityIncarnation(store: Store, key: Key): Promise<{ eid: string; deleting?: boolean } | undefined> {
  const got = await store.db.send(new GetCommand({ TableName: store.tableName, Key: key, ConsistentRead: true, ProjectionExpression: 'eid, deleting' }));
  return got.Item as { eid: string; deleting?: boolean } | undefined;
}

/**
 * Key: a new entity's key, plus `namesake`'s (E1) and the `companions`' own keys.
 * Condition: `entityIsNew`; on the namesake, `nameFree` (absent, or being deleted).
 * One transaction puts the entity with its companions (its stats, ready marks, default rule).
 * True when made; false when either condition failed (the name is taken, or was just now).
 */
export async function createEntity(store: Store, entity: EntityItem, options: { namesake?: Key; companions: readonly object[] }): Promise<boolean> {
  const { namesake, companions } = options;
  const items: TransactItems = [
    { Put: { TableName: store.tableName, Item: entity, ConditionExpression: entityIsNew } },
    // Transactions are serializable, so of two racing creates of namesakes at most one succeeds.
    ...(namesake
      ? [{ ConditionCheck: { TableName: store.tableName, Key: namesake, ConditionExpression: nameFree, ExpressionAttributeValues: { ':yes': true } } }]
      : []),
    ...companions.map((Item) => ({ Put: { TableName: store.tableName, Item } })),
  ];
  return madeUnlessCondition(store.db.send(new TransactWriteCommand({ TransactItems: items })));
}

/**
 * Key: the entity's. Sets `accessedAt` to `now` (and the idle deadline `dsk` when given).
 * Condition: `sameIncarnation AND notDeleting`, and `usedLongAgo` (than `stale`) when given.
 * True when written; false when the condition failed (another toucher was first, or the entity went).
 */
export async function recordEntityUse(
  store: Store,
  entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>,
  use: { now: number; deadline?: number | null; stale?: number },
) {
  const { now, deadline, stale } = use;
  const idle = deadline !== undefined && deadline !== null;
  return madeUnlessCondition(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        UpdateExpression: `SET accessedAt = :now${idle ? ', dsk = :deadline' : ''}`,
        ConditionExpression: stale === undefined ? all(sameIncarnation, notDeleting) : all(sameIncarnation, notDeleting, usedLongAgo),
        ExpressionAttributeValues: {
          ':now': now,
          ':eid': entity.eid,
          ...(stale === undefined ? {} : { ':stale': stale }),
          ...(idle ? { ':deadline': deadline } : {}),
        },
      }),
    ),
  );
}

/**
 * Key: the entity's. Sets `scheduledUntil` to `at` and the idle agenda entry to `deadline` (I2).
 * Condition: `sameIncarnation AND heldForLess` (than `at`).
 * True when written; false when another send holds it longer already, or the entity went.
 */
export async function holdEntityUntil(store: Store, entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>, at: number, deadline: number): Promise<boolean> {
  return madeUnlessCondition(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        UpdateExpression: 'SET scheduledUntil = :at, dpk = :idle, dsk = :deadline',
        ConditionExpression: all(sameIncarnation, heldForLess),
        ExpressionAttributeValues: { ':at': at, ':idle': IDLE_DUE_PK, ':deadline': deadline, ':eid': entity.eid },
      }),
    ),
  );
}

/**
 * Key: the entity's. Sets `todayFrom` to `at` (now: a later time than one standing only brings
 * today-first sooner) and raises `todayVersion`. Condition: `sameIncarnation AND notDeleting`.
 * True when written; false when the entity went. One write unit (more for a large entity item).
 */
export async function markTodayFrom(store: Store, entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>, at: number): Promise<boolean> {
  return madeUnlessCondition(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        UpdateExpression: 'SET todayFrom = :at ADD todayVersion :one',
        ConditionExpression: all(sameIncarnation, notDeleting),
        ExpressionAttributeValues: { ':at': at, ':one': 1, ':eid': entity.eid },
      }),
    ),
  );
}

/**
 * Key: the entity's. Sets `todayFrom` to `next`, or removes it when `next` is undefined, and
 * raises `todayVersion` (kept, so a version is never used twice). Condition: `sameIncarnation
 * AND todayAsSeen` (`todayVersion` as the receive read it: a mark made since stands). True when
 * written; false otherwise.
 */
export async function moveTodayFrom(store: Store, entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>, seen: number, next: number | undefined): Promise<boolean> {
  return madeUnlessCondition(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        UpdateExpression: next === undefined ? 'REMOVE todayFrom ADD todayVersion :one' : 'SET todayFrom = :next ADD todayVersion :one',
        ConditionExpression: all(sameIncarnation, todayAsSeen),
        ExpressionAttributeValues: { ':seen': seen, ':one': 1, ':eid': entity.eid, ...(next === undefined ? {} : { ':next': next }) },
      }),
    ),
  );
}

/**
 * Key: the entity's. Sets each attribute of `set` (by name, so reserved words are fine) and
 * removes each of `remove`. Condition: `sameIncarnation`.
 * True when written; false when the entity was deleted or re-created meanwhile.
 */
export async function updateEntityAttributes(store: Store, entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>, set: Item, remove: string[] = []): Promise<boolean> {
  const names: Record<string, string> = {};
  const values: Item = { ':eid': entity.eid };
  const sets = Object.entries(set).map(([attr, value]) => {
    names[`#${attr}`] = attr;
    values[`:${attr}`] = value;
    return `#${attr} = :${attr}`;
  });
  for (const attr of remove) names[`#${attr}`] = attr;
  return madeUnlessCondition(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        UpdateExpression: `SET ${sets.join(', ')}${remove.length ? ` REMOVE ${remove.map((a) => `#${a}`).join(', ')}` : ''}`,
        ConditionExpression: sameIncarnation,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    ),
  );
}

/**
 * Key: `topic/<name>` (keys.ts `topicPartitionPk`). Every item of a topic's partition: its
 * subscriptions (`sub/…`) and their filter rules (`rule/…`), page after page; strongly
 * consistent when `consistent` (a deletion must see what was just written).
 */
export const readTopicPartition = <T = Item>(store: Store, topic: string, consistent = false): Promise<T[]> =>
  queryAll<T>(store, {
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': topicPartitionPk(topic) },
    ...(consistent ? { ConsistentRead: true } : {}),
  });

/**
 * Key: the partition of `kind`'s entities (of `topic`'s subscriptions), in name order from
 * after `after` (an sk). One page of at most `limit` entities; `last` is the sk to go on from,
 * undefined on the last page.
 */
export async function listEntityPage(
  store: Store,
  kind: EntityKind,
  topic: string | undefined,
  page: { after?: string; limit: number },
): Promise<{ entities: EntityItem[]; last?: string }> {
  const { pk } = entityKey(kind, 'x', topic);
  const subscriptions = kind === 'subscription';
  const out = await store.db.send(
    new QueryCommand({
      TableName: store.tableName,
      KeyConditionExpression: subscriptions ? 'pk = :pk AND begins_with(sk, :sub)' : 'pk = :pk',
      ExpressionAttributeValues: subscriptions ? { ':pk': pk, ':sub': SUBSCRIPTION_SK_PREFIX } : { ':pk': pk },
      ExclusiveStartKey: page.after === undefined ? undefined : { pk, sk: page.after },
      Limit: page.limit,
    }),
  );
  return { entities: (out.Items ?? []) as EntityItem[], last: out.LastEvaluatedKey?.sk as string | undefined };
}

/** What deleting one entity incarnation writes: the entity goes, with its stats; its tombstone comes. */
export interface DoomedEntity {
  entity: Pick<EntityItem, 'pk' | 'sk' | 'eid' | 'partitions' | 'path' | 'layout'>;
  /** Its stats item (a marker the stream keeps), deleted with it. */
  stats: Key;
  /** E4/I1: deleted only if nobody used it since (the reaper's decision). */
  unusedSince?: number;
}

const deleteOf = (store: Store, d: DoomedEntity, guarded = true) => ({
  Delete: {
    TableName: store.tableName,
    Key: { pk: d.entity.pk, sk: d.entity.sk },
    ConditionExpression: guarded && d.unusedSince !== undefined ? all(sameIncarnation, unusedSince) : sameIncarnation,
    ExpressionAttributeValues: { ':eid': d.entity.eid, ...(guarded && d.unusedSince !== undefined ? { ':accessedAt': d.unusedSince } : {}) },
  },
});

const removalOf = (store: Store, d: DoomedEntity, now: number): TransactItems => [
  deleteOf(store, d),
  { Delete: { TableName: store.tableName, Key: d.stats } },
  {
    Put: {
      TableName: store.tableName,
      Item: {
        ...tombstoneKey(d.entity.eid),
        eid: d.entity.eid,
        partitions: d.entity.partitions,
        path: d.entity.path,
        deletedAt: now,
        ...(d.entity.layout ? { layout: d.entity.layout } : {}),
      },
    },
  },
];

/** DynamoDB's limit of items in one transaction. */
const TRANSACTION_ITEMS = 100;

/**
 * Keys: each doomed entity's (the first is the one asked for, the rest its subscriptions),
 * their stats, their `gc` tombstones (put), and `children` (their rules, deleted).
 * Condition on each entity: `sameIncarnation`, and `unusedSince` where the doomed entry says so.
 * When all fits one transaction, one transaction. Otherwise the first entity is claimed first
 * (`deleting`, on the reaper's agenda now; same condition), from then on gone for every use;
 * then the rest go in transactions of 100, then the first entity with `sameIncarnation` alone.
 * A crash part-way leaves a claimed entity that a repeated delete, or the reaper, finishes.
 * True when done; false when a condition failed (the entity changed meanwhile).
 */
export async function deleteEntityTree(store: Store, doomed: [DoomedEntity, ...DoomedEntity[]], children: Key[], now: number): Promise<boolean> {
  const [first] = doomed;
  const items: TransactItems = [
    ...doomed.flatMap((d) => removalOf(store, d, now)),
    ...children.map((Key) => ({ Delete: { TableName: store.tableName, Key } })),
  ];
  const send = (batch: TransactItems) => store.db.send(new TransactWriteCommand({ TransactItems: batch }));
  return madeUnlessCondition(
    (async () => {
      if (items.length <= TRANSACTION_ITEMS) return send(items);
      const guarded = first.unusedSince !== undefined;
      await store.db.send(
        new UpdateCommand({
          TableName: store.tableName,
          Key: { pk: first.entity.pk, sk: first.entity.sk },
          UpdateExpression: 'SET deleting = :yes, dpk = :idle, dsk = :now',
          ConditionExpression: guarded ? all(sameIncarnation, unusedSince) : sameIncarnation,
          ExpressionAttributeValues: {
            ':yes': true,
            ':idle': IDLE_DUE_PK,
            ':now': now,
            ':eid': first.entity.eid,
            ...(guarded ? { ':accessedAt': first.unusedSince } : {}),
          },
        }),
      );
      const [, ...firstRest] = removalOf(store, first, now);
      const rest = items.slice(3);
      for (let i = 0; i < rest.length; i += TRANSACTION_ITEMS) await send(rest.slice(i, i + TRANSACTION_ITEMS));
      return send([deleteOf(store, first, false), ...firstRest]);
    })(),
  );
}

/**
 * Key: the `due` index's IDLE_DUE_PK partition up to `now` (I1). One page of at most 100
 * entity keys whose idle deadline has passed, from `start`; `next` to go on from, if any.
 */
export async function dueIdleEntities(store: Store, now: number, start?: Item): Promise<{ keys: Key[]; next?: Item }> {
  const due = await store.db.send(
    new QueryCommand({
      TableName: store.tableName,
      IndexName: tableIndex.due,
      KeyConditionExpression: 'dpk = :idle AND dsk <= :now',
      ExpressionAttributeValues: { ':idle': IDLE_DUE_PK, ':now': now },
      Limit: 100,
      ExclusiveStartKey: start,
    }),
  );
  // Index rows carry the index keys too; the table wants its own.
  return { keys: ((due.Items ?? []) as Key[]).map((k) => ({ pk: k.pk, sk: k.sk })), next: due.LastEvaluatedKey };
}

/**
 * Key: the entity's. Moves its idle agenda entry to `at`, or off the agenda when null.
 * Condition: `sameIncarnation`. True when written; false when the entity went or was re-created.
 */
export async function postponeIdleEntity(store: Store, entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>, at: number | null): Promise<boolean> {
  try {
    await store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        UpdateExpression: at === null ? 'REMOVE dpk, dsk' : 'SET dsk = :at',
        ConditionExpression: sameIncarnation,
        ExpressionAttributeValues: { ':eid': entity.eid, ...(at === null ? {} : { ':at': at }) },
      }),
    );
    return true;
  } catch (e) {
    if (e instanceof Error && e.name === 'ConditionalCheckFailedException') return false;
    throw e;
  }
}

/**
 * Key: the `gc` partition. One page of at most `limit` tombstones, oldest incarnation id first;
 * `more` when further tombstones wait for the next run.
 */
export async function listTombstones(store: Store, limit: number): Promise<{ tombstones: Tombstone[]; more: boolean }> {
  const out = await store.db.send(
    new QueryCommand({ TableName: store.tableName, KeyConditionExpression: 'pk = :gc', ExpressionAttributeValues: { ':gc': TOMBSTONE_PK }, Limit: limit }),
  );
  return { tombstones: (out.Items ?? []) as Tombstone[], more: out.LastEvaluatedKey !== undefined };
}

/** Key: `gc` / eid. Deletes the tombstone of a cleared incarnation (E4); unconditional, so repeating it is harmless. */
export async function clearTombstone(store: Store, eid: string): Promise<void> {
  await store.db.send(new DeleteCommand({ TableName: store.tableName, Key: tombstoneKey(eid) }));
}

/** The hold a reader saw is still the entity's (a send has not raised it since), and it is on the idle agenda. */
const holdUnchanged = 'eid = :eid AND scheduledUntil = :held AND attribute_exists(dpk)';

/**
 * I2 after a cancel: moves the entity's scheduled hold back to `latest` (0: no hold) and its
 * idle agenda entry to `deadline`. Key: the entity's. Condition: `holdUnchanged` (`held`).
 * Success: true. Failure: false when the hold changed or the entity went; other errors throw.
 */
export async function lowerScheduledHold(
  store: Store,
  entity: Pick<EntityItem, 'pk' | 'sk' | 'eid'>,
  held: number,
  latest: number,
  deadline: number | null,
): Promise<boolean> {
  try {
    await store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: { pk: entity.pk, sk: entity.sk },
        // The agenda entry moves back too (the reaper re-checks the entity when it comes).
        UpdateExpression: `SET dsk = :deadline ${latest > 0 ? ', scheduledUntil = :latest' : 'REMOVE scheduledUntil'}`,
        ConditionExpression: holdUnchanged,
        ExpressionAttributeValues: { ':eid': entity.eid, ':held': held, ':deadline': deadline, ...(latest > 0 ? { ':latest': latest } : {}) },
      }),
    );
    return true;
  } catch (e) {
    if (e instanceof Error && e.name === 'ConditionalCheckFailedException') return false;
    throw e;
  }
}
