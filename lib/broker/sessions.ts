/**
 * Sessions (N1-N8): accepting a session (by name, or the next one with an available
 * message), receiving its messages in order under the session lock, renewing and releasing
 * that lock, session state, deferred messages by number, and listing sessions.
 *
 * A session is an item beside the entity (`sessionKey`) holding its lock, and, while it has
 * messages, a hint in the `ready` index (`sessionQueuePk`) sorted by when it can be taken: the
 * oldest available message when unlocked, the lock's end when locked. Accept-next reads only
 * hints visible now, so locked sessions cost it nothing (N7). Its messages sit in their own
 * `ready` partition (`sessionReadyPk`); receiving one does not move it, so after a session
 * lock lapses the message in flight is the first the next holder gets (N3).
 *
 * Every lock of a session has a generation (`gen`, one more at each accept). A message taken
 * under it records the generation (`sgen`) and the lock token (`slk`): a message is taken only
 * if it carries no generation or an older one, so a holder whose lock lapsed while its take was
 * in flight can never take a message from the next holder, whatever the clocks say.
 */
import { DeleteCommand, GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import type { RequestOf, SessionListQuery, SessionLockQuery } from '../api/schemas.js';
import { BrokerError, badRequest, sessionLockLost } from '../errors.js';
import { entityPathDisplay, type ReceiveTarget } from '../entities/paths.js';
import type { MessageItem, ReceivedMessage } from '../messages/item.js';
import { parseSessionId } from '../messages/schema.js';
import { newLockToken } from '../messages/lock-token.js';
import {
  dueShardOf,
  messageKey,
  readySortKey,
  readyUpperBound,
  SESSION_SK_PREFIX,
  sessionKey,
  sessionQueuePk,
  sessionReadyPk,
  sessionsPk,
  sessionStateKey,
  tableIndex,
  type Key,
} from '../store/keys.js';
import { partitionOfSeq } from '../store/sequence.js';
import { onCandidate } from '../fate/delivery.js';
import { type BrokerContext } from './context.js';
import { cancellationCodes, cancelledBusy, conditionally, partFailedCondition } from '../store/outcomes.js';
import { assertCanReceive, requireEntity, touchEntity, type EntityItem } from './entities.js';
import { choosePartition, SESSION_HINT_GRACE_MS, SESSION_HINT_LAG_MS } from './message-items.js';
import { deadLetter, expire, unchanged } from './moves.js';
import { longPoll, POLL_WORK_BUDGET_MS, unlessRaced } from './receive.js';
import { deleteAndPresent, keepingTaken, lockAndPresent, unlessConflict } from './hand-out.js';
import { AnswerBudget, lockedAnswerBytes } from './answer-budget.js';

/** The session item (keys.ts `sessionKey`). */
export interface SessionItem extends Key {
  sessionId: string;
  eid: string;
  /** The entity's path (as a message item's `entity`), for hints; written by sends and named accepts. */
  entity?: string;
  lockToken?: string;
  lockedUntil?: number;
  /** Generation of the lock: one more at each accept. */
  gen?: number;
  hasState?: boolean;
  lastSendAt?: number;
  rpk?: string;
  rsk?: string;
  /** On the sweeper's agenda after a named accept, at the lock's end (N8). */
  dpk?: string;
  dsk?: number;
}

export { SESSION_HINT_LAG_MS };

/** N5: a session's state, at most this many bytes. */
export const MAX_SESSION_STATE_BYTES = 256 * 1024;

/** How many hints one accept-next poll reads at most. */
const ACCEPT_PAGE = 10;

const iso = (ms: number) => new Date(ms).toISOString();

/** The entity, when its active subqueue is received through sessions; otherwise 400 naming `path`. */
async function sessionEntity(ctx: BrokerContext, target: ReceiveTarget): Promise<EntityItem> {
  if (target.kind === 'topic') throw badRequest('path', 'a topic has no sessions; use a subscription');
  if (target.subqueue !== 'active') throw badRequest('path', 'a dead-letter subqueue is received without a session (N6)');
  const entity = await requireEntity(ctx, target);
  if (!entity.requiresSession) throw badRequest('path', `'${entityPathDisplay(entity)}' does not require sessions; receive from it directly`);
  assertCanReceive(entity, target.subqueue);
  await touchEntity(ctx, entity); // a session operation is a receive (I2)
  return entity;
}

const partitionOf = (entity: EntityItem, sessionId: string) => choosePartition(entity, { sessionId });
const readyPkOf = (entity: EntityItem, sessionId: string) => sessionReadyPk(entity.eid, partitionOf(entity, sessionId), sessionId);
/** Where a locked session sorts among the hints: at its lock's end (N7). */
const lockedSortKey = (lockedUntil: number) => readySortKey(lockedUntil, 0n);
/**
 * A message in flight keeps its place in its session's order, marked with the lock generation
 * it was taken under, so a receive skips its own messages in flight by the index row alone.
 */
const inFlightSortKey = (rsk: string, gen: number) => `${rsk.split('/').slice(0, 2).join('/')}/${gen}`;

export interface AcceptedSession {
  sessionId: string;
  sessionLockToken: string;
  lockedUntil: string;
}

const presentLock = (s: SessionItem): AcceptedSession => ({ sessionId: s.sessionId, sessionLockToken: s.lockToken!, lockedUntil: iso(s.lockedUntil!) });

const serviceTimeout = (entity: EntityItem) =>
  new BrokerError('ServiceTimeout', `no session of '${entityPathDisplay(entity)}' became available within the wait time`, { retryable: false });

/** N2: POST {R}/sessions/accept, a named session or the next available one. */
export async function acceptSession(ctx: BrokerContext, target: ReceiveTarget, b: RequestOf<'AcceptSessionRequest'>): Promise<AcceptedSession> {
  const entity = await sessionEntity(ctx, target);
  if (b.sessionId !== undefined) return presentLock(await lockNamed(ctx, entity, b.sessionId));
  const session = await longPoll(ctx, entity, target, b.maxWaitTime, async () => {
    const { session, more } = await acceptNextOnce(ctx, entity);
    return { found: session, more };
  });
  if (!session) throw serviceTimeout(entity);
  return presentLock(session);
}

/** N2: a named session is locked whether or not it has messages yet; held by another, 409. */
async function lockNamed(ctx: BrokerContext, entity: EntityItem, sessionId: string): Promise<SessionItem> {
  const key = sessionKey(entity.eid, sessionId);
  // N8: a named accept may make the item for a session that holds nothing. It goes on the
  // sweeper's agenda at the lock's end, so a lock left to lapse does not keep it (sweepSession).
  const session = await lockSession(ctx, entity, key, {
    set: 'sessionId = :sid, eid = :eid, entity = :path, rpk = :q, dpk = :due, dsk = :until',
    values: { ':sid': sessionId, ':eid': entity.eid, ':path': entity.path, ':q': sessionQueuePk(entity.eid), ':due': sessionDueShard(key) },
  });
  if (!session) throw new BrokerError('SessionCannotBeLocked', `session '${sessionId}' of '${entityPathDisplay(entity)}' is locked by another receiver`);
  return session;
}

/**
 * Takes a session lock (a new token and generation, lockDuration from now) if no receiver holds
 * it and `also.condition` holds; undefined if either did not.
 */
async function lockSession(
  ctx: BrokerContext,
  entity: EntityItem,
  key: Key,
  also: { set?: string; condition?: string; values?: Record<string, unknown> },
): Promise<SessionItem | undefined> {
  const now = ctx.clock.now();
  const until = now + entity.lockDuration;
  const unlocked = 'attribute_not_exists(lockedUntil) OR lockedUntil <= :now';
  const out = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: key,
        UpdateExpression: `SET ${also.set ? `${also.set}, ` : ''}lockToken = :token, lockedUntil = :until, rsk = :locked ADD gen :one`,
        ConditionExpression: also.condition ? `${also.condition} AND (${unlocked})` : unlocked,
        ExpressionAttributeValues: { ...also.values, ':token': randomUUID(), ':until': until, ':locked': lockedSortKey(until), ':now': now, ':one': 1 },
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  return out?.Attributes as SessionItem | undefined;
}

/**
 * One accept-next poll: the hints visible now, oldest first (fair: the session whose oldest
 * available message is oldest goes first). Each is locked only if unchanged since it was read
 * and not locked; then it must have a visible message, or it is released again.
 */
async function acceptNextOnce(ctx: BrokerContext, entity: EntityItem): Promise<{ session?: SessionItem; more: boolean }> {
  const page = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.ready,
      KeyConditionExpression: 'rpk = :q AND rsk <= :upper',
      ExpressionAttributeValues: { ':q': sessionQueuePk(entity.eid), ':upper': readyUpperBound(ctx.clock.now()) },
      Limit: ACCEPT_PAGE,
    }),
  );
  const hints = (page.Items ?? []) as { pk: string; sk: string; rsk: string }[];
  for (let i = 0; i < hints.length;) {
    const hint = hints[i]!;
    const session = await lockHint(ctx, entity, hint);
    if (!session) {
      // Another acceptor was first: its neighbours are likely contended too.
      i += 1 + Math.floor(Math.random() * Math.min(3, hints.length - i));
      continue;
    }
    const first = await firstMessageSortKey(ctx, entity, session.sessionId);
    if (first !== undefined && first <= readyUpperBound(ctx.clock.now())) return { session, more: false };
    // A stale hint (its messages were settled, or a send died before its put): let it go.
    await releaseLock(ctx, entity, session, first).catch((e: unknown) => {
      if (!(e instanceof BrokerError && e.code === 'SessionLockLost')) throw e;
    });
    i++;
  }
  return { more: page.LastEvaluatedKey !== undefined && hints.length > 0 };
}

/** Locks the session of a hint if the hint is unchanged since it was read. */
function lockHint(ctx: BrokerContext, entity: EntityItem, hint: { pk: string; sk: string; rsk: string }): Promise<SessionItem | undefined> {
  return lockSession(ctx, entity, { pk: hint.pk, sk: hint.sk }, { condition: 'rsk = :seen', values: { ':seen': hint.rsk } });
}

/** The smallest `rsk` of the session's messages (in flight, scheduled and deferred included), if any. */
async function firstMessageSortKey(ctx: BrokerContext, entity: EntityItem, sessionId: string): Promise<string | undefined> {
  const out = await ctx.db.send(
    new QueryCommand({
      TableName: ctx.tableName,
      IndexName: tableIndex.ready,
      KeyConditionExpression: 'rpk = :rpk',
      ExpressionAttributeValues: { ':rpk': readyPkOf(entity, sessionId) },
      ProjectionExpression: 'rsk',
      Limit: 1,
    }),
  );
  return out.Items?.[0]?.rsk as string | undefined;
}

/**
 * Gives up the lock `session` holds: the hint goes back to the session's first message, or,
 * with none, the hint goes (and the item, unless it has state: N1, N5). A send may have put a
 * hint for a message the index does not show yet: within the grace period after the last
 * send the hint stays, to be looked at again. Lost or lapsed lock: SessionLockLost.
 */
async function releaseLock(ctx: BrokerContext, entity: EntityItem, held: SessionItem, knownFirst?: string): Promise<void> {
  const key = sessionKey(entity.eid, held.sessionId);
  let session = held;
  let first = knownFirst;
  for (let attempt = 0; ; attempt++) {
    const now = ctx.clock.now();
    const values = { ':mine': held.lockToken, ':now': now };
    const isHeld = 'lockToken = :mine AND lockedUntil > :now';
    const again = lookAgainAt(session.lastSendAt, now);
    const next = [first, again !== undefined ? readySortKey(again, 0n) : undefined].filter((k): k is string => k !== undefined).sort()[0];
    if (next === undefined && attempt < 2) {
      const quiet = '(attribute_not_exists(lastSendAt) OR lastSendAt < :cutoff)';
      const removeValues = { ...values, ':cutoff': now - SESSION_HINT_GRACE_MS };
      const removed = await conditionally(
        ctx.db.send(
          session.hasState
            ? new UpdateCommand({
                TableName: ctx.tableName,
                Key: key,
                UpdateExpression: 'REMOVE rpk, rsk, lockToken, lockedUntil, dpk, dsk',
                ConditionExpression: `${isHeld} AND ${quiet}`,
                ExpressionAttributeValues: removeValues,
              })
            : new DeleteCommand({
                TableName: ctx.tableName,
                Key: key,
                ConditionExpression: `${isHeld} AND ${quiet} AND attribute_not_exists(hasState)`,
                ExpressionAttributeValues: removeValues,
              }),
        ),
      );
      if (removed) return;
      // A send (or the lock's end) came meanwhile: look again, with what the item says now.
      const current = await readSession(ctx, key);
      if (!current || current.lockToken !== held.lockToken || (current.lockedUntil ?? 0) <= ctx.clock.now()) throw sessionLockLost();
      session = current;
      first = await firstMessageSortKey(ctx, entity, held.sessionId);
      continue;
    }
    const released = await conditionally(
      ctx.db.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: key,
          UpdateExpression: 'SET rpk = :q, rsk = :next REMOVE lockToken, lockedUntil, dpk, dsk',
          ConditionExpression: isHeld,
          ExpressionAttributeValues: { ...values, ':q': sessionQueuePk(entity.eid), ':next': next ?? readySortKey(now + SESSION_HINT_GRACE_MS, 0n) },
        }),
      ),
    );
    if (!released) throw sessionLockLost();
    return;
  }
}

/** When a session whose last send was at `lastSendAt` must be looked at again, if its hint may be ahead of the index. */
function lookAgainAt(lastSendAt: number | undefined, now: number): number | undefined {
  if (lastSendAt === undefined) return undefined;
  if (now < lastSendAt + SESSION_HINT_LAG_MS) return lastSendAt + SESSION_HINT_LAG_MS;
  if (now < lastSendAt + SESSION_HINT_GRACE_MS) return lastSendAt + SESSION_HINT_GRACE_MS;
  return undefined;
}

async function readSession(ctx: BrokerContext, key: Key): Promise<SessionItem | undefined> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true }));
  return got.Item as SessionItem | undefined;
}

/** The session, if `token` holds its lock now (one consistent read); otherwise SessionLockLost (N4). */
async function heldSession(ctx: BrokerContext, entity: EntityItem, sessionId: string, token: string): Promise<SessionItem> {
  const session = await readSession(ctx, sessionKey(entity.eid, sessionId));
  if (!session || session.lockToken !== token || (session.lockedUntil ?? 0) <= ctx.clock.now()) throw sessionLockLost();
  return session;
}

/** N3: POST {R}/sessions/{id}/receive, the session's messages in sequence order, under its lock. */
export async function receiveFromSession(
  ctx: BrokerContext,
  target: ReceiveTarget,
  sessionIdGiven: string,
  b: RequestOf<'SessionReceiveOptions'>,
): Promise<ReceivedMessage[]> {
  const sessionId = parseSessionId(sessionIdGiven);
  const entity = await sessionEntity(ctx, target);
  const found = await longPoll(ctx, entity, target, b.maxWaitTime, async () => {
    const session = await heldSession(ctx, entity, sessionId, b.sessionLockToken);
    const messages = await receiveSessionOnce(ctx, entity, session, b);
    return { found: messages.length > 0 ? messages : undefined };
  });
  return found ?? [];
}

interface Candidate {
  pk: string;
  sk: string;
  rsk: string;
  state: MessageItem['state'];
  deliveryCount?: number;
  expiresAt?: number;
}

/** Expired (T4) or past D2, by the facts the index carries. */
const isOverdue = (c: Candidate, entity: EntityItem, now: number) => {
  const kind = onCandidate(
    { state: c.state, deliveryCount: c.deliveryCount ?? 0, enqueuedAt: 0, expiresAt: c.expiresAt ?? null, inDeadLetter: false },
    entity.maxDeliveryCount,
    now,
  ).kind;
  return kind === 'expire' || kind === 'deadLetter';
};

async function receiveSessionOnce(
  ctx: BrokerContext,
  entity: EntityItem,
  session: SessionItem,
  options: RequestOf<'SessionReceiveOptions'>,
): Promise<ReceivedMessage[]> {
  const out: ReceivedMessage[] = [];
  return keepingTaken(out, () => receiveSessionInto(out, ctx, entity, session, options));
}

async function receiveSessionInto(
  out: ReceivedMessage[],
  ctx: BrokerContext,
  entity: EntityItem,
  session: SessionItem,
  options: RequestOf<'SessionReceiveOptions'>,
): Promise<void> {
  const rpk = readyPkOf(entity, session.sessionId);
  const ours = String(session.gen ?? 0);
  const workEnd = Date.now() + POLL_WORK_BUDGET_MS;
  const budget = new AnswerBudget();
  let start: Record<string, unknown> | undefined;
  do {
    const now = ctx.clock.now();
    const page = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        IndexName: tableIndex.ready,
        KeyConditionExpression: 'rpk = :rpk AND rsk <= :upper',
        ExpressionAttributeValues: { ':rpk': rpk, ':upper': readyUpperBound(now) },
        Limit: Math.min(100, (options.maxMessages - out.length) * 2 + 8),
        ExclusiveStartKey: start,
      }),
    );
    // N3: in sequence order within what was read.
    const read = ((page.Items ?? []) as Candidate[]).sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
    for (const c of read) {
      if (out.length >= options.maxMessages) break;
      // In flight under this very lock: not handed out twice (the index row says so, no read).
      if (c.rsk.split('/')[2] === ours) continue;
      if (isOverdue(c, entity, ctx.clock.now())) {
        await clearOverdue(ctx, entity, session, c);
        continue;
      }
      // R10: the answer can carry one more whatever its size, or this receive ends here.
      if (!budget.fits()) return;
      const taken = await unlessConflict(take(ctx, entity, session, c, options.mode), undefined);
      if (taken) {
        out.push(taken);
        budget.add(taken);
      }
    }
    start = page.LastEvaluatedKey;
  } while (start && out.length < options.maxMessages && Date.now() < workEnd);
}

/**
 * N6 inside a session: an expired message, or one past its last delivery under an earlier
 * lock, is moved as a plain receive moves it (D2 is applied when the next holder reaches it).
 */
async function clearOverdue(ctx: BrokerContext, entity: EntityItem, session: SessionItem, c: Candidate): Promise<void> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: { pk: c.pk, sk: c.sk }, ConsistentRead: true }));
  const item = got.Item as MessageItem | undefined;
  if (!item || (item.sgen !== undefined && item.sgen >= (session.gen ?? 0))) return; // gone, or ours in flight (T5)
  const outcome = onCandidate({ ...item, expiresAt: item.expiresAt ?? null, lockedUntil: null, inDeadLetter: false }, entity.maxDeliveryCount, ctx.clock.now());
  if (outcome.kind === 'expire') await unlessRaced(expire(ctx, entity, item, unchanged(item)));
  else if (outcome.kind === 'deadLetter') await unlessRaced(deadLetter(ctx, entity, item, unchanged(item), outcome));
}

/** Takes one message under the session lock, if no lock of this generation or a later one has it. */
async function take(
  ctx: BrokerContext,
  entity: EntityItem,
  session: SessionItem,
  c: Candidate,
  mode: 'peekLock' | 'receiveAndDelete',
): Promise<ReceivedMessage | undefined> {
  const now = ctx.clock.now();
  const gen = session.gen ?? 0;
  const values: Record<string, unknown> = {
    ':rpk': readyPkOf(entity, session.sessionId),
    ':upper': readyUpperBound(now),
    ':now': now,
    ':gen': gen,
    ':deferred': 'Deferred',
  };
  const condition =
    'rpk = :rpk AND rsk <= :upper AND (attribute_not_exists(expiresAt) OR expiresAt > :now) AND (attribute_not_exists(sgen) OR sgen < :gen) AND #state <> :deferred';
  const key = { pk: c.pk, sk: c.sk };
  // undefined from either write: ours already, or moved meanwhile.
  if (mode === 'receiveAndDelete') return deleteAndPresent(ctx, { key, condition, names: { '#state': 'state' }, values }, now);
  return lockAndPresent(
    ctx,
    {
      key,
      condition,
      names: { '#state': 'state', '#ttl': 'ttl' },
      values: {
        ...values,
        ':slk': session.lockToken,
        ':token': newLockToken(BigInt(c.sk)),
        ':until': session.lockedUntil,
        ':inflight': inFlightSortKey(c.rsk, gen),
        ':active': 'Active',
        ':one': 1,
        ':zero': 0,
      },
    },
    'SET slk = :slk, sgen = :gen, lockToken = :token, lockedUntil = :until, deliveryCount = deliveryCount + :one, rsk = :inflight, #state = :active, v = if_not_exists(v, :zero) + :one REMOVE #ttl',
    now,
  );
}

/** N4: POST {R}/sessions/{id}/renew-lock, the session lock extended by lockDuration. */
export async function renewSessionLock(
  ctx: BrokerContext,
  target: ReceiveTarget,
  sessionIdGiven: string,
  b: RequestOf<'SessionLockRequest'>,
): Promise<{ lockedUntil: string }> {
  const sessionId = parseSessionId(sessionIdGiven);
  const entity = await sessionEntity(ctx, target);
  const now = ctx.clock.now();
  const until = now + entity.lockDuration;
  const renewed = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: sessionKey(entity.eid, sessionId),
        UpdateExpression: 'SET lockedUntil = :until, rsk = :locked',
        ConditionExpression: 'lockToken = :mine AND lockedUntil > :now',
        ExpressionAttributeValues: { ':until': until, ':locked': lockedSortKey(until), ':mine': b.sessionLockToken, ':now': now },
      }),
    ),
  );
  if (!renewed) throw sessionLockLost();
  return { lockedUntil: iso(until) };
}

/** N4: POST {R}/sessions/{id}/release, the next receiver may accept the session at once. */
export async function releaseSession(ctx: BrokerContext, target: ReceiveTarget, sessionIdGiven: string, b: RequestOf<'SessionLockRequest'>): Promise<void> {
  const sessionId = parseSessionId(sessionIdGiven);
  const entity = await sessionEntity(ctx, target);
  const session = await heldSession(ctx, entity, sessionId, b.sessionLockToken);
  await releaseLock(ctx, entity, session, await firstMessageSortKey(ctx, entity, sessionId));
}

/** N5: GET {R}/sessions/{id}/state, base64 or null. */
export async function getSessionState(
  ctx: BrokerContext,
  target: ReceiveTarget,
  sessionIdGiven: string,
  b: SessionLockQuery,
): Promise<{ sessionId: string; state: string | null }> {
  const sessionId = parseSessionId(sessionIdGiven);
  const entity = await sessionEntity(ctx, target);
  const session = await heldSession(ctx, entity, sessionId, b.sessionLockToken);
  if (!session.hasState) return { sessionId, state: null };
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: sessionStateKey(entity.eid, sessionId), ConsistentRead: true }));
  const state = got.Item?.state as Uint8Array | undefined;
  return { sessionId, state: state ? Buffer.from(state).toString('base64') : null };
}

/** N5: PUT {R}/sessions/{id}/state, up to 256 KB, or null to clear it; only under the session lock. */
export async function setSessionState(ctx: BrokerContext, target: ReceiveTarget, sessionIdGiven: string, b: RequestOf<'SessionStateUpdate'>): Promise<void> {
  const sessionId = parseSessionId(sessionIdGiven);
  const bytes = b.state === null ? null : Buffer.from(b.state, 'base64');
  if (bytes && bytes.length > MAX_SESSION_STATE_BYTES) {
    throw new BrokerError('MessageSizeExceeded', `state: ${bytes.length} bytes is more than the ${MAX_SESSION_STATE_BYTES} a session state may hold`, {
      field: 'state',
    });
  }
  const entity = await sessionEntity(ctx, target);
  const now = ctx.clock.now();
  const stateKey = sessionStateKey(entity.eid, sessionId);
  try {
    await ctx.db.send(
      new TransactWriteCommand({
        TransactItems: [
          bytes
            ? { Put: { TableName: ctx.tableName, Item: { ...stateKey, sessionId, eid: entity.eid, state: new Uint8Array(bytes) } } }
            : { Delete: { TableName: ctx.tableName, Key: stateKey } },
          {
            Update: {
              TableName: ctx.tableName,
              Key: sessionKey(entity.eid, sessionId),
              UpdateExpression: bytes ? 'SET hasState = :yes' : 'REMOVE hasState',
              ConditionExpression: 'lockToken = :mine AND lockedUntil > :now',
              ExpressionAttributeValues: { ':mine': b.sessionLockToken, ':now': now, ...(bytes ? { ':yes': true } : {}) },
            },
          },
        ],
      }),
    );
  } catch (e) {
    // Only the lock's condition failing means the lock is lost; a conflict with another write
    // of the session item (a lock renewal in flight) or a throttle is worth trying again.
    const failed = cancellationCodes(e);
    if (partFailedCondition(failed, 1)) throw sessionLockLost();
    if (cancelledBusy(failed)) {
      throw new BrokerError('Throttled', 'the session is being changed by another operation; try again', { retryable: true, retryAfterSeconds: 1 });
    }
    throw e;
  }
}

/** N6/R7: POST {R}/sessions/{id}/deferred, deferred messages of this session by number, under its lock. */
export async function receiveDeferredFromSession(
  ctx: BrokerContext,
  target: ReceiveTarget,
  sessionIdGiven: string,
  b: RequestOf<'SessionDeferredRequest'>,
): Promise<ReceivedMessage[]> {
  const sessionId = parseSessionId(sessionIdGiven);
  const entity = await sessionEntity(ctx, target);
  const session = await heldSession(ctx, entity, sessionId, b.sessionLockToken);
  const partition = partitionOf(entity, sessionId);
  // All must be deferred messages of this session before any is locked: a bad number changes nothing.
  const found = await Promise.all(
    b.sequenceNumbers.map(async (text) => {
      const seq = BigInt(text);
      if (partitionOfSeq(seq) !== partition) throw notDeferred(text);
      const key = messageKey(entity.eid, 'active', partition, seq);
      const item = (await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: key, ConsistentRead: true }))).Item as MessageItem | undefined;
      if (item?.state !== 'Deferred' || item.sessionId !== sessionId) throw notDeferred(text);
      return { seq, key, item };
    }),
  );
  const out: ReceivedMessage[] = [];
  const gen = session.gen ?? 0;
  const budget = new AnswerBudget();
  return keepingTaken(out, async () => {
    for (const { seq, key, item } of found) {
      const now = ctx.clock.now();
      if (item.sgen !== undefined && item.sgen >= gen) continue; // already ours, in flight
      // R10: what the answer cannot carry stays deferred; the caller asks for it again.
      if (!budget.fits(lockedAnswerBytes(item, now))) return;
      if (item.deliveryCount >= entity.maxDeliveryCount) {
        // D2: its last delivery ran out under an earlier lock (there is no agenda entry for it).
        const outcome = onCandidate({ ...item, state: 'Active', expiresAt: null, lockedUntil: null, inDeadLetter: false }, entity.maxDeliveryCount, now);
        if (outcome.kind === 'deadLetter') await deadLetter(ctx, entity, item, unchanged(item), outcome);
        continue;
      }
      const locked = await unlessConflict(
        lockAndPresent(
          ctx,
          {
            key,
            condition: '#state = :deferred AND sessionId = :sid AND (attribute_not_exists(sgen) OR sgen < :gen)',
            names: { '#state': 'state' },
            values: {
              ':deferred': 'Deferred',
              ':sid': sessionId,
              ':gen': gen,
              ':slk': session.lockToken,
              ':token': newLockToken(seq),
              ':until': session.lockedUntil,
              ':one': 1,
              ':zero': 0,
            },
          },
          'SET slk = :slk, sgen = :gen, lockToken = :token, lockedUntil = :until, deliveryCount = deliveryCount + :one, v = if_not_exists(v, :zero) + :one',
          now,
        ),
        undefined,
      );
      // Undefined: settled or taken meanwhile (or held by a transaction in flight), not handed out twice.
      if (locked) {
        out.push(locked);
        budget.add(locked);
      }
    }
  });
}

const notDeferred = (seq: string) =>
  new BrokerError('MessageNotFound', `no deferred message of this session with sequence number ${seq}`, { field: 'sequenceNumbers' });

/**
 * N8: GET {R}/sessions, the ids of sessions with messages or state, in id order, paged. A
 * session item may outlive what it held (a named accept of an empty session, a last message
 * dead-lettered) until accept-next or the sweeper clears it, so each one without state is
 * listed only if its ready partition still holds a message (one Query of one row), or a send
 * to it was announced moments ago and its message may not be in the index yet.
 */
export async function listSessions(ctx: BrokerContext, target: ReceiveTarget, q: SessionListQuery): Promise<{ items: string[]; next: string | null }> {
  const entity = await sessionEntity(ctx, target);
  const top = q.top ?? 100;
  let start: Record<string, unknown> | undefined;
  if (q.next !== undefined) {
    const sk = Buffer.from(q.next, 'base64url').toString('utf8');
    if (!sk.startsWith(SESSION_SK_PREFIX) || sk.length > SESSION_SK_PREFIX.length + 128) throw badRequest('next', 'is not a paging token from this API');
    start = { pk: sessionsPk(entity.eid), sk };
  }
  const token = (sk: string) => Buffer.from(sk, 'utf8').toString('base64url');
  const items: string[] = [];
  const workEnd = Date.now() + POLL_WORK_BUDGET_MS;
  do {
    const page = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :s)',
        FilterExpression: 'attribute_exists(rpk) OR attribute_exists(hasState)',
        ProjectionExpression: 'sk, hasState, lastSendAt',
        ExpressionAttributeValues: { ':pk': sessionsPk(entity.eid), ':s': SESSION_SK_PREFIX },
        Limit: Math.min(100, top - items.length + 5),
        ExclusiveStartKey: start,
      }),
    );
    const rows = (page.Items ?? []) as Pick<SessionItem, 'sk' | 'hasState' | 'lastSendAt'>[];
    const holding = await Promise.all(rows.map((row) => holdsSomething(ctx, entity, row)));
    for (let i = 0; i < rows.length; i++) {
      if (holding[i]) items.push(rows[i]!.sk.slice(SESSION_SK_PREFIX.length));
      if (items.length >= top) {
        const more = i < rows.length - 1 || page.LastEvaluatedKey !== undefined;
        return { items, next: more ? token(rows[i]!.sk) : null };
      }
    }
    start = page.LastEvaluatedKey;
  } while (start && Date.now() < workEnd);
  // Out of time with the page not full: the caller goes on from where this stopped.
  return { items, next: start ? token(start.sk as string) : null };
}

/** N1: whether a session has state or messages (or a send to it announced within the index's lag). */
async function holdsSomething(ctx: BrokerContext, entity: EntityItem, s: Pick<SessionItem, 'sk' | 'hasState' | 'lastSendAt'>): Promise<boolean> {
  if (s.hasState) return true;
  if (s.lastSendAt !== undefined && ctx.clock.now() < s.lastSendAt + SESSION_HINT_LAG_MS) return true;
  return (await firstMessageSortKey(ctx, entity, s.sk.slice(SESSION_SK_PREFIX.length))) !== undefined;
}

/** The agenda shard of a session item: spread by session, not by entity, as messages are by partition. */
const sessionDueShard = (key: Key) => dueShardOf(`${key.pk}/${key.sk}`);

/** What `sweepSession` did with a session item on the agenda. */
export type SessionSweep = 'removed' | 'kept' | 'later' | 'raced';

/**
 * N8, by the sweeper: a session item whose named-accept lock has ended is removed if it holds
 * nothing (no state, no message, no send announced within the grace period), with one
 * conditional delete that fails if a send, a state or a lock came meanwhile (then it is
 * looked at again next run). A session that holds something leaves the agenda; a lock still
 * held (renewed) moves the entry to its end. A session of a deleted entity goes too.
 */
export async function sweepSession(
  ctx: BrokerContext,
  key: Key,
  entityOf: (path: string, eid: string) => Promise<EntityItem | undefined>,
): Promise<SessionSweep> {
  const session = await readSession(ctx, key);
  if (!session || session.dsk === undefined) return 'kept';
  const now = ctx.clock.now();
  const seen = { ':dsk': session.dsk };
  const unchangedEntry = 'dsk = :dsk';
  const entity = session.entity !== undefined ? await entityOf(session.entity, session.eid) : undefined;
  if (entity && session.lockedUntil !== undefined && session.lockedUntil > now) {
    const moved = await conditionally(
      ctx.db.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: key,
          UpdateExpression: 'SET dsk = :until',
          ConditionExpression: `${unchangedEntry} AND lockedUntil = :until`,
          ExpressionAttributeValues: { ...seen, ':until': session.lockedUntil },
        }),
      ),
    );
    return moved ? 'later' : 'raced';
  }
  const holds =
    entity !== undefined &&
    (session.hasState === true || recentlySent(session, now) || (await firstMessageSortKey(ctx, entity, session.sessionId)) !== undefined);
  if (holds) {
    const left = await conditionally(
      ctx.db.send(
        new UpdateCommand({
          TableName: ctx.tableName,
          Key: key,
          UpdateExpression: 'REMOVE dpk, dsk',
          ConditionExpression: unchangedEntry,
          ExpressionAttributeValues: seen,
        }),
      ),
    );
    return left ? 'kept' : 'raced';
  }
  const removed = await conditionally(
    ctx.db.send(
      new DeleteCommand({
        TableName: ctx.tableName,
        Key: key,
        ConditionExpression:
          entity === undefined
            ? 'eid = :eid'
            : `${unchangedEntry} AND (attribute_not_exists(lockedUntil) OR lockedUntil <= :now) AND attribute_not_exists(hasState) AND (attribute_not_exists(lastSendAt) OR lastSendAt < :cutoff)`,
        ExpressionAttributeValues: entity === undefined ? { ':eid': session.eid } : { ...seen, ':now': now, ':cutoff': now - SESSION_HINT_GRACE_MS },
      }),
    ),
  );
  return removed ? 'removed' : 'raced';
}

const recentlySent = (s: Pick<SessionItem, 'lastSendAt'>, now: number) => s.lastSendAt !== undefined && now < s.lastSendAt + SESSION_HINT_GRACE_MS;

/** Used by the sweeper: whether the session lock a message was taken under is still live (T5, D2). */
export async function liveSessionLock(ctx: BrokerContext, item: Pick<MessageItem, 'eid' | 'sessionId' | 'slk'>): Promise<number | undefined> {
  if (item.slk === undefined || item.sessionId === undefined) return undefined;
  const session = await readSession(ctx, sessionKey(item.eid, item.sessionId));
  if (!session || session.lockToken !== item.slk || (session.lockedUntil ?? 0) <= ctx.clock.now()) return undefined;
  return session.lockedUntil;
}
