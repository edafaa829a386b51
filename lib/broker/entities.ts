/** Entity management (E1-E6): create, update, read with runtime counts, delete, list. */
import * as z from 'zod/mini';
import { BrokerError, badRequest, entityNotFound } from '../errors.js';
import {
  assertNotForwardingToItself,
  defaults,
  presentProperties,
  shownPropertiesSchemas,
  type EntityKind,
  type EntityProperties,
} from '../entities/properties.js';
import { entityPathDisplay, entityPathKey, forwardCandidates, type EntityRef } from '../entities/paths.js';
import { docSchema } from '../validation.js';
import type { Grant } from '../auth/grants.js';
import { requireSendOn } from './authorization.js';
import { entityKey, keyId, statsKey, IDLE_DUE_PK, SUBSCRIPTION_SK_PREFIX, subscriptionRulesPrefix, type Key } from '../store/keys.js';
import type { Subqueue } from '../entities/kinds.js';
import { MAX_PARTITIONS } from '../store/sequence.js';
import {
  createEntity,
  deleteEntityTree,
  getEntity,
  holdEntityUntil,
  listEntityPage,
  readTopicPartition,
  recordEntityUse,
  updateEntityAttributes,
  type DoomedEntity,
  type EntityItem,
} from '../store/entities.js';
import { randomId, type BrokerContext } from './context.js';
import { entityReadsOf } from './entity-reads.js';
import { sharedPromise } from '../single-flight.js';
import { defaultRuleItem } from '../store/rules.js';
import { getCounts } from '../store/counts.js';
import { isStoreBusy } from '../store/outcomes.js';
import { keepsReadyMarks, readyMarksItem } from './ready-marks.js';
import { positionsCanCarry } from './layouts.js';
import { DEFAULT_NEW_ENTITY_LAYOUT } from '../deps.js';
import { withPositionedCounts, type CountedEntity } from './positioned-counts.js';

export type { EntityItem } from '../store/entities.js';

export interface EntityStats {
  active?: number;
  deadLetter?: number;
  scheduled?: number;
  transfer?: number;
  deferred?: number;
  sizeInBytes?: number;
}

export const keyOf = (ref: EntityRef) => entityKey(ref.kind, ref.name, ref.topic);

export const findEntity = (ctx: BrokerContext, ref: EntityRef, consistent = false): Promise<EntityItem | undefined> => getEntity(ctx, keyOf(ref), consistent);

/**
 * The entity as a read started no earlier than this call finds it: shared with the requests
 * that asked at the same time (entity-reads.ts), eventually consistent like a read of its own.
 * `beside`: the request's own work meanwhile, before whose end the answer is not needed.
 */
export const currentEntity = (ctx: BrokerContext, ref: EntityRef, beside?: Promise<unknown>): Promise<EntityItem | undefined> =>
  entityReadsOf(ctx).current(ctx, keyOf(ref), beside);

/**
 * `currentEntity`, asked once more when the store refused the read for load (throttled past the
 * SDK's retries, 0.5 read unit on that path only): the read decides the answer of a request whose
 * write runs beside it (a send's, a settlement's: E4), and a refusal for load answered as such
 * would say nothing was written (S4, R4) when the write was made.
 */
export async function currentEntityOnceMore(ctx: BrokerContext, ref: EntityRef, beside?: Promise<unknown>): Promise<EntityItem | undefined> {
  try {
    return await currentEntity(ctx, ref, beside);
  } catch (e) {
    if (!isStoreBusy(e)) throw e;
    return currentEntity(ctx, ref);
  }
}

/**
 * How recent a read of the entity must be for a request to act on it before its own read
 * answers (a send's write, a receive's first page). A send's write under a stale incarnation
 * is taken back when its read disagrees; should the Lambda die in between, it is an orphan of
 * a deleted incarnation, which nothing reads and the reaper removes while the incarnation's
 * tombstone lasts: a recent read keeps such a write within seconds of the deletion (E4).
 */
export const ACT_AHEAD_WITHIN_MS = 10_000;

/** The entity as a read of this process saw it within ACT_AHEAD_WITHIN_MS, unless it was being deleted then. */
export function recentEntity(ctx: BrokerContext, ref: EntityRef): EntityItem | undefined {
  const seen = entityReadsOf(ctx).lastSeen(keyOf(ref));
  if (!seen?.entity || seen.entity.deleting || Date.now() - seen.at > ACT_AHEAD_WITHIN_MS) return undefined;
  return seen.entity;
}

/** `current` is the live incarnation `known` was read from: not deleted, not deleted and re-created (E4). */
export const sameIncarnation = (known: EntityItem, current: EntityItem | undefined): current is EntityItem =>
  current !== undefined && !current.deleting && current.eid === known.eid;

/** What a use of the entity changes by itself (I1, I2): anything else may change how a request is served. */
const USE_FIELDS = new Set(['accessedAt', 'scheduledUntil', 'todayFrom', 'todayVersion', 'dpk', 'dsk']);

/**
 * The same incarnation with the same properties and status: what a request acted on ahead of
 * its read may stand. `updatedAt` alone would miss an update within the same millisecond.
 */
export function unchangedEntity(assumed: EntityItem, current: EntityItem | undefined): boolean {
  if (!sameIncarnation(assumed, current)) return false;
  const a = assumed as unknown as Record<string, unknown>;
  const b = current as unknown as Record<string, unknown>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (USE_FIELDS.has(key) || a[key] === b[key]) continue;
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) return false;
  }
  return true;
}

/**
 * The live entity, its topic's use recorded for a subscription (I2); 404 when it or its topic
 * is gone. `beside` as for `currentEntity`.
 */
export async function requireEntity(ctx: BrokerContext, ref: EntityRef, beside?: Promise<unknown>): Promise<EntityItem> {
  const [entity, topic] = await Promise.all([
    currentEntity(ctx, ref, beside),
    ref.kind === 'subscription' ? currentEntity(ctx, { kind: 'topic', name: ref.topic ?? '' }, beside) : undefined,
  ]);
  if (ref.kind === 'subscription' && (!topic || topic.deleting)) throw entityNotFound(`topics/${ref.topic ?? ''}`);
  if (!entity || entity.deleting) throw entityNotFound(entityPathDisplay(ref));
  // I2: an operation on a subscription is use of its topic too.
  if (topic) await touchEntity(ctx, topic);
  return entity;
}

/** How stale `accessedAt` may get before a use writes it again: about one write a minute. */
export const TOUCH_INTERVAL_MS = 60_000;

/**
 * Touches of an incarnation in flight in this process. Concurrent requests whose reads all
 * show a stale `accessedAt` would each write it and all but one fail, each failure followed by
 * a consistent read to tell a lost race from a deleted entity: one write (and at most one
 * read) answers them all, and a request whose read was made before that write landed takes
 * its `accessedAt` from this process, as a request whose read showed it would. A use so
 * recorded is at most the interval later than `accessedAt` says, which the idle deadline's
 * slack of a minute covers (I1).
 */
interface Touches {
  inFlight: Map<string, Promise<number>>;
  /** The `accessedAt` this process last wrote or found, per incarnation: a request whose read came before it need not write again. */
  known: Map<string, number>;
}
/** Per client, as entity reads are shared (entity-reads.ts): a client of its own (a test's) touches for itself. */
const touchesByClient = new WeakMap<object, Touches>();
function touchesOf(ctx: BrokerContext): Touches {
  let touches = touchesByClient.get(ctx.db);
  if (!touches) touchesByClient.set(ctx.db, (touches = { inFlight: new Map(), known: new Map() }));
  return touches;
}

/**
 * I2/E6: records a use of the entity. Writes only when `accessedAt` is older than a minute,
 * and only one of several concurrent callers wins the condition (in one process, only one
 * tries), so a busy entity costs about one write a minute. `force` (updates, new rules)
 * always writes. 404 when the entity turns out to be gone.
 */
export async function touchEntity(ctx: BrokerContext, entity: EntityItem, force = false): Promise<void> {
  const now = ctx.clock.now();
  if (!force && now - entity.accessedAt < TOUCH_INTERVAL_MS) return;
  if (force) {
    entity.accessedAt = await recordUse(ctx, entity, now, false);
    return;
  }
  const { inFlight, known } = touchesOf(ctx);
  const key = `${ctx.tableName}|${keyId(entity)}|${entity.eid}`;
  const last = known.get(key);
  if (last !== undefined && now - last < TOUCH_INTERVAL_MS) {
    entity.accessedAt = last;
    return;
  }
  entity.accessedAt = await sharedPromise(
    inFlight,
    key,
    () =>
      recordUse(ctx, entity, now, true).then(
        (at) => {
          if (known.size > 10_000) known.clear();
          known.set(key, at);
          return at;
        },
        (e: unknown) => {
          known.delete(key);
          throw e;
        },
      ),
    'untilSettled',
  );
}

/** Writes `now` as the entity's last use (unless another use a minute recent is there, `stale`); the `accessedAt` it has then. */
async function recordUse(ctx: BrokerContext, entity: EntityItem, now: number, stale: boolean): Promise<number> {
  const deadline = idleDeadline({ ...entity, accessedAt: now });
  if (await recordEntityUse(ctx, entity, { now, deadline, ...(stale ? { stale: now - TOUCH_INTERVAL_MS } : {}) })) return now;
  // Lost the race to another toucher, or the entity is gone: only the second matters.
  const current = await findEntity(ctx, entity, true);
  if (!sameIncarnation(entity, current)) throw entityNotFound(entityPathDisplay(entity));
  return current.accessedAt;
}

/** The properties that name an entity this one will put messages into (B3). */
const FORWARD_FIELDS = ['forwardTo', 'forwardDeadLetteredMessagesTo'] as const;

/**
 * PUT {M}: creates (created: true) or updates only the given properties. A forwarding
 * target set here needs Send on it under the request's `grant` too (B3).
 */
export async function putEntity(
  ctx: BrokerContext,
  ref: EntityRef,
  given: Partial<EntityProperties>,
  grant: Grant,
): Promise<{ created: boolean; entity: EntityItem }> {
  assertNotForwardingToItself(ref, given);
  for (const field of FORWARD_FIELDS) {
    const named = given[field];
    if (named) requireSendOn(grant, forwardCandidates(named, field), field);
  }
  if (ref.kind === 'subscription') {
    // I2: creating or updating a subscription is an operation on its topic.
    const topic = await requireEntity(ctx, { kind: 'topic', name: ref.topic ?? '' });
    await touchEntity(ctx, topic);
  }
  const existing = await findEntity(ctx, ref, true);
  if (existing) return { created: false, entity: await updateEntity(ctx, existing, given) };
  const rival = namesakeOf(ref);
  if (rival) {
    const other = await findEntity(ctx, rival, true);
    if (other && !other.deleting) throw nameTaken(ref, other);
  }

  const now = ctx.clock.now();
  const key = keyOf(ref);
  const entity: EntityItem = {
    ...key,
    ...defaults,
    ...given,
    kind: ref.kind,
    name: ref.name,
    ...(ref.topic !== undefined ? { topic: ref.topic } : {}),
    eid: randomId(6),
    path: entityPathKey(ref),
    partitions: given.enablePartitioning ? MAX_PARTITIONS : 1,
    createdAt: now,
    updatedAt: now,
    accessedAt: now,
  };
  if (entity.partitions > 1) entity.readyMarks = true;
  const layout = ctx.newEntityLayout ?? DEFAULT_NEW_ENTITY_LAYOUT;
  if (layout !== 'index' && positionsCanCarry(entity)) {
    entity.layout = 'positions';
    if (layout === 'tickets') entity.ticketed = true;
  }
  const created = await createEntity(ctx, withIdleDeadline(entity), {
    // E1: a namesake of the other kind created since the read above cancels this one.
    ...(rival ? { namesake: keyOf(rival) } : {}),
    companions: [
      { ...statsKey(entity.eid), eid: entity.eid, wm: {} },
      ...(keepsReadyMarks(entity) ? [readyMarksItem(entity.eid)] : []),
      // F1: a new subscription gets the rule $Default with a true filter.
      ...(ref.kind === 'subscription' ? [defaultRuleItem(ref.topic ?? '', ref.name, now)] : []),
    ],
  });
  if (!created) {
    const other = rival ? await findEntity(ctx, rival, true) : undefined;
    if (other && !other.deleting) throw nameTaken(ref, other);
    throw new BrokerError('EntityAlreadyExists', `entity '${entityPathDisplay(ref)}' was just created by another request`);
  }
  return { created: true, entity };
}

/** E1: queues and topics share one namespace of names; the entity a new one of `ref`'s name must not clash with. */
function namesakeOf(ref: EntityRef): EntityRef | undefined {
  if (ref.kind === 'queue') return { kind: 'topic', name: ref.name };
  if (ref.kind === 'topic') return { kind: 'queue', name: ref.name };
  return undefined;
}

const nameTaken = (ref: EntityRef, other: EntityItem) =>
  new BrokerError(
    'EntityAlreadyExists',
    `cannot create ${ref.kind} '${ref.name}': ${other.kind} '${other.name}' exists, and queues and topics share one namespace of names (E1)`,
  );

/**
 * I1: when an entity may be deleted for idleness. `accessedAt` is written at most once per
 * TOUCH_INTERVAL_MS, so the last use may be up to that much later than it says: the deadline
 * waits that long too, and I4's two minutes still hold with a reaper every minute.
 */
export const idleDeadline = (entity: Pick<EntityItem, 'accessedAt' | 'autoDeleteOnIdle' | 'scheduledUntil'>) =>
  entity.autoDeleteOnIdle === null ? null : Math.max(entity.accessedAt + entity.autoDeleteOnIdle + TOUCH_INTERVAL_MS, entity.scheduledUntil ?? 0);

/**
 * I2: a message scheduled for `at` keeps the entity from being idle until then. One write,
 * only when the entity can be deleted for idleness and `at` is later than what it already
 * waits for; the agenda entry moves with it, so the reaper needs no count of scheduled messages.
 */
export async function holdUntil(ctx: BrokerContext, entity: EntityItem, at: number): Promise<void> {
  if (entity.autoDeleteOnIdle === null || (entity.scheduledUntil ?? 0) >= at) return;
  const deadline = idleDeadline({ ...entity, scheduledUntil: at })!;
  // Not held: another send scheduled later still, or the entity is gone; either way nothing to do.
  if (await holdEntityUntil(ctx, entity, at, deadline)) entity.scheduledUntil = at;
}

/** I1: entities with autoDeleteOnIdle sit on the reaper's agenda at their idle deadline. */
function withIdleDeadline(entity: EntityItem): EntityItem {
  const deadline = idleDeadline(entity);
  if (deadline === null) return entity;
  return { ...entity, dpk: IDLE_DUE_PK, dsk: deadline };
}

async function updateEntity(ctx: BrokerContext, existing: EntityItem, given: Partial<EntityProperties>): Promise<EntityItem> {
  if (given.enablePartitioning !== undefined && given.enablePartitioning !== existing.enablePartitioning) {
    throw badRequest('enablePartitioning', 'cannot be changed after the entity is created');
  }
  // As in Service Bus: a session entity's messages are keyed and indexed by session (N1), so
  // switching would strand the messages already stored the other way.
  if (given.requiresSession !== undefined && given.requiresSession !== existing.requiresSession) {
    throw badRequest('requiresSession', 'cannot be changed after the entity is created');
  }
  const now = ctx.clock.now();
  const next: EntityItem = { ...existing, ...given, updatedAt: now, accessedAt: now };
  const idle = withIdleDeadline(next);
  const onAgenda = idle.dsk !== undefined;
  const written = await updateEntityAttributes(
    ctx,
    existing,
    { ...given, updatedAt: now, accessedAt: now, ...(onAgenda ? { dpk: IDLE_DUE_PK, dsk: idle.dsk } : {}) },
    onAgenda ? [] : ['dpk', 'dsk'],
  );
  if (!written) throw new BrokerError('Conflict', 'the entity was deleted or re-created meanwhile; try again', { retryable: true });
  return next;
}

/** E4: the entity and everything under it go at once; the reaper removes the messages later. */
export async function deleteEntity(ctx: BrokerContext, ref: EntityRef, onlyIf?: { accessedAt: number }): Promise<void> {
  const entity = await findEntity(ctx, ref, true);
  if (!entity) throw entityNotFound(entityPathDisplay(ref));
  if (entity.deleting) onlyIf = undefined; // finishing a claimed deletion
  // The reaper deletes only if nobody used the entity since it decided (I1).
  const doomed: [DoomedEntity, ...DoomedEntity[]] = [{ entity, stats: statsKey(entity.eid), ...(onlyIf ? { unusedSince: onlyIf.accessedAt } : {}) }];
  const children: Key[] = [];
  if (ref.kind === 'topic') {
    for (const child of await readTopicPartition<EntityItem>(ctx, entity.name, true)) {
      if (child.sk.startsWith(SUBSCRIPTION_SK_PREFIX)) doomed.push({ entity: child, stats: statsKey(child.eid) });
      else children.push({ pk: child.pk, sk: child.sk });
    }
  }
  if (ref.kind === 'subscription') {
    // E4: the subscription's rules go with it.
    const prefix = subscriptionRulesPrefix(entity.name);
    for (const child of await readTopicPartition<Key>(ctx, entity.topic ?? '', true)) {
      if (child.sk.startsWith(prefix)) children.push({ pk: child.pk, sk: child.sk });
    }
  }
  if (!(await deleteEntityTree(ctx, doomed, children, ctx.clock.now()))) {
    throw new BrokerError('Conflict', 'the entity changed while it was being deleted; try again', { retryable: true });
  }
}

/**
 * E6: the runtime counts of `entities` by eid, from the stream, with a positioned entity's
 * messages at positions added (positioned-counts.ts); an entity counted by neither is absent.
 */
export const getStats = async (ctx: BrokerContext, entities: readonly CountedEntity[]): Promise<Map<string, EntityStats>> =>
  withPositionedCounts(
    ctx,
    entities,
    await getCounts(
      ctx,
      entities.map((e) => e.eid),
    ),
  );

const iso = (ms: number) => new Date(ms).toISOString();
const count = (n: number | undefined) => Math.max(0, n ?? 0);

const instant = (description = 'ISO 8601 UTC instant') => z.string().check(z.meta({ format: 'date-time', description }));
const counter = (description: string) => z.number().check(z.int(), z.minimum(0), z.meta({ description }));

// The fields alone: zod omits fields only from an object without checks, and metadata is one.
const runtimeFields = /* @__PURE__ */ docSchema(() =>
  z.object({
    activeMessageCount: counter('Messages ready to receive (or locked).'),
    deadLetterMessageCount: counter('Messages in the dead-letter subqueue.'),
    scheduledMessageCount: counter('Messages scheduled for later (S6).'),
    transferDeadLetterMessageCount: counter('Messages in the transfer dead-letter subqueue.'),
    deferredMessageCount: counter('Deferred messages (R7).'),
    totalMessageCount: counter('Sum of the counts above.'),
    sizeInBytes: counter('Bytes of the stored messages.'),
    createdAt: instant(),
    updatedAt: instant(),
    accessedAt: instant('Last use (I2); written at most about once a minute.'),
  }),
);
/** E6 runtime information of a queue or subscription, as `presentEntity` shows it. */
export const runtimeSchema = /* @__PURE__ */ docSchema(() =>
  runtimeFields().check(z.meta({ description: 'Runtime information of a queue or subscription (E6).' })),
);

/** A topic keeps no dead letters and defers nothing (D8). */
export const topicRuntimeSchema = /* @__PURE__ */ docSchema(() =>
  z
    .omit(runtimeFields(), { deadLetterMessageCount: true, transferDeadLetterMessageCount: true, deferredMessageCount: true })
    .check(z.meta({ description: 'Runtime information of a topic (E6). A topic has no dead-letter, transfer dead-letter or deferred counts (D8).' })),
);

const viewNote = (kind: EntityKind) => `A ${kind}: its properties (durations as ISO 8601, null for unlimited) and runtime information (E2, E6).`;

/** An entity as GET answers it (`presentEntity`): name, every visible property, runtime. */
export const entityViewSchemas = /* @__PURE__ */ docSchema(() => {
  const nameField = z.string().check(z.meta({ description: 'The name as first given (names are case-insensitive, E1).' }));
  const shown = shownPropertiesSchemas();
  return {
    queue: z.object({ name: nameField, ...shown.queue.shape, runtime: runtimeSchema() }).check(z.meta({ description: viewNote('queue') })),
    topic: z.object({ name: nameField, ...shown.topic.shape, runtime: topicRuntimeSchema() }).check(z.meta({ description: viewNote('topic') })),
    subscription: z
      .object({ name: nameField, topicName: z.string(), ...shown.subscription.shape, runtime: runtimeSchema() })
      .check(z.meta({ description: viewNote('subscription') })),
  };
});

const pageOf = <T extends z.ZodMiniType>(item: T, kind: EntityKind) =>
  z
    .object({
      items: z.array(item),
      next: z.nullable(z.string()).check(z.meta({ description: 'Paging token for the next page (query `next`); null on the last page.' })),
    })
    .check(z.meta({ description: `A page of ${kind}s in name order.` }));

/** A page of entities (`listEntities`). */
export const entityListSchemas = /* @__PURE__ */ docSchema(() => {
  const views = entityViewSchemas();
  return {
    queue: pageOf(views.queue, 'queue'),
    topic: pageOf(views.topic, 'topic'),
    subscription: pageOf(views.subscription, 'subscription'),
  };
});

export type EntityView = z.input<ReturnType<typeof entityViewSchemas>[EntityKind]>;
type Runtime = z.input<ReturnType<typeof runtimeSchema>>;

/** E6 runtime counts as the API shows them; a topic has no dead-letter count (D8). */
export function presentEntity(entity: EntityItem, stats: EntityStats | undefined): EntityView {
  const s = stats ?? {};
  const runtime: Runtime = {
    activeMessageCount: count(s.active),
    deadLetterMessageCount: count(s.deadLetter),
    scheduledMessageCount: count(s.scheduled),
    transferDeadLetterMessageCount: count(s.transfer),
    deferredMessageCount: count(s.deferred),
    totalMessageCount: count(s.active) + count(s.deadLetter) + count(s.scheduled) + count(s.transfer) + count(s.deferred),
    sizeInBytes: count(s.sizeInBytes),
    createdAt: iso(entity.createdAt),
    updatedAt: iso(entity.updatedAt),
    accessedAt: iso(entity.accessedAt),
  };
  const named = { name: entity.name, ...(entity.topic !== undefined ? { topicName: entity.topic } : {}) };
  if (entity.kind === 'topic') {
    const { deadLetterMessageCount: _d, transferDeadLetterMessageCount: _t, deferredMessageCount: _f, ...topicRuntime } = runtime;
    return { ...named, ...presentProperties('topic', entity), runtime: topicRuntime };
  }
  if (entity.kind === 'subscription') return { name: entity.name, topicName: entity.topic!, ...presentProperties('subscription', entity), runtime };
  return { ...named, ...presentProperties('queue', entity), runtime };
}

export async function describeEntity(ctx: BrokerContext, ref: EntityRef): Promise<EntityView> {
  const entity = await requireEntity(ctx, ref);
  const stats = await getStats(ctx, [entity]);
  return presentEntity(entity, stats.get(entity.eid));
}

/** GET /queues, /topics, /topics/{t}/subscriptions: pages in name order. */
export async function listEntities(
  ctx: BrokerContext,
  kind: EntityKind,
  topic: string | undefined,
  page: { next?: string; top?: number },
): Promise<{ items: EntityView[]; next: string | null }> {
  if (kind === 'subscription') await requireEntity(ctx, { kind: 'topic', name: topic ?? '' });
  const top = page.top ?? 100;
  let after: string | undefined;
  if (page.next) {
    let sk: string;
    try {
      sk = Buffer.from(page.next, 'base64url').toString('utf8');
    } catch {
      throw badRequest('next', 'is not a paging token from this API');
    }
    const shape = kind === 'subscription' ? /^sub\/[a-z0-9._-]{1,50}$/ : /^[a-z0-9._-]{1,260}$/;
    if (!shape.test(sk)) throw badRequest('next', 'is not a paging token from this API');
    after = sk;
  }
  const { entities, last } = await listEntityPage(ctx, kind, topic, { ...(after !== undefined ? { after } : {}), limit: top });
  const stats = await getStats(ctx, entities);
  return {
    items: entities.map((e) => presentEntity(e, stats.get(e.eid))),
    next: last ? Buffer.from(last, 'utf8').toString('base64url') : null,
  };
}

/** E5: the entity's status may refuse sends. */
export function assertCanSend(entity: EntityItem): void {
  if (entity.status === 'Disabled' || entity.status === 'SendDisabled') {
    throw new BrokerError('EntityDisabled', `entity '${entityPathDisplay(entity)}' is ${entity.status}: sends are refused`);
  }
}

/** N1: an entity with `requiresSession` delivers its active messages only through a session receiver. */
export function assertNoSession(entity: EntityItem, target: { subqueue: Subqueue }): void {
  if (entity.requiresSession && target.subqueue === 'active') {
    throw new BrokerError('BadRequest', `path: '${entityPathDisplay(entity)}' requires a session receiver (N1); accept a session first`, { field: 'path' });
  }
}

export function assertCanReceive(entity: EntityItem, subqueue: Subqueue): void {
  if (entity.status === 'Disabled' || (entity.status === 'ReceiveDisabled' && subqueue === 'active')) {
    throw new BrokerError('EntityDisabled', `entity '${entityPathDisplay(entity)}' is ${entity.status}: receives are refused`);
  }
}
