/**
 * Sessions (N1-N8), what only sessions have: accepting a session (by name, or the next one
 * with an available message), renewing and releasing its lock, session state, and listing
 * sessions. Receiving under the session lock is the plain receive with the session's policy
 * (session-lock.ts); settlement is the plain settlement (settle.ts).
 *
 * A session is an item beside the entity (`sessionKey`) holding its lock, and, while it has
 * messages, a hint in the `ready` index (`sessionQueuePk`) sorted by when it can be taken: the
 * oldest available message when unlocked, the lock's end when locked. Accept-next reads only
 * hints visible now, so locked sessions cost it nothing (N7). Its messages sit in their own
 * `ready` partition (`sessionReadyPk`); receiving one does not move it, so after a session
 * lock lapses the message in flight is the first the next holder gets (N3). A session released
 * empty moments after a send keeps its hint for two looks (the send's message may not be in
 * the index yet), which accept-next takes without locking a session that holds nothing.
 */
import type { RequestOf, SessionListQuery, SessionLockQuery } from '../requests/schemas.js';
import { BrokerError, badRequest, sessionLockLost } from '../errors.js';
import { entityPathDisplay, type ReceiveTarget } from '../entities/paths.js';
import type { ReceivedMessage } from '../messages/item.js';
import { parseSessionId } from '../messages/schema.js';
import { dueShardOf, padSeq, readySortKey, readyUpperBound, SESSION_SK_PREFIX, sessionKey, sessionQueuePk, sessionsPk, type Key } from '../store/keys.js';
import { firstReadySortKey, readReadyPage } from '../store/ready-index.js';
import {
  deleteIdleSession,
  deleteLookedSession,
  deleteOrphanSession,
  listSessionPage,
  lockHintedSession,
  lockNamedSession,
  moveSessionLook,
  postponeSessionSweep,
  readSession,
  readSessionState,
  releaseEmptySession,
  releaseSessionLock,
  type SendPremise,
  takeSessionOffAgenda,
  writeSessionState,
  type ListedSession,
  type SessionItem,
} from '../store/sessions.js';
import { type BrokerContext } from './context.js';
import { assertCanReceive, requireEntity, touchEntity, type EntityItem } from './entities.js';
import { SESSION_HINT_GRACE_MS, SESSION_HINT_LAG_MS } from './message-items.js';
import { longPoll, receiveOnce, POLL_WORK_BUDGET_MS } from './receive.js';
import { receiveDeferredWith } from './settle.js';
import { recallSession, rememberSession, rememberState, type SessionSeen } from './session-memory.js';
import {
  heldSession,
  holdsLock,
  renewHeldLock,
  sessionDeferredPolicy,
  sessionLockFrom,
  sessionPolicy,
  sessionReadyPkOf,
  takeBackHeld,
} from './session-lock.js';

export type { SessionItem };
export { liveSessionLock } from './session-lock.js';

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
  // N8: a named accept may make the item for a session that holds nothing. It goes on the
  // sweeper's agenda at the lock's end, so a lock left to lapse does not keep it (sweepSession).
  const named = { sessionId, eid: entity.eid, entity: entity.path, due: sessionDueShard(sessionKey(entity.eid, sessionId)) };
  const session = await lockNamedSession(ctx, named, sessionLockFrom(entity, ctx.clock.now()));
  if (!session) throw new BrokerError('SessionCannotBeLocked', `session '${sessionId}' of '${entityPathDisplay(entity)}' is locked by another receiver`);
  rememberSession(ctx, session);
  return session;
}

/**
 * One accept-next poll: the hints visible now, oldest first (fair: the session whose oldest
 * available message is oldest goes first). Each is locked only if unchanged since it was read
 * and not locked; then it must have a visible message, or it is released again.
 */
async function acceptNextOnce(ctx: BrokerContext, entity: EntityItem): Promise<{ session?: SessionItem; more: boolean }> {
  const page = await readReadyPage<Key & { rsk: string }>(ctx, { pk: sessionQueuePk(entity.eid), upper: readyUpperBound(ctx.clock.now()), limit: ACCEPT_PAGE });
  const hints = page.items;
  for (let i = 0; i < hints.length;) {
    const hint = hints[i]!;
    if (await lookedWithoutLock(ctx, entity, hint)) {
      i++;
      continue;
    }
    const session = await lockHintedSession(ctx, hint, sessionLockFrom(entity, ctx.clock.now()));
    if (!session) {
      // Another acceptor was first: its neighbours are likely contended too.
      i += 1 + Math.floor(Math.random() * Math.min(3, hints.length - i));
      continue;
    }
    const first = await firstMessageSortKey(ctx, entity, session.sessionId);
    if (first !== undefined && first <= readyUpperBound(ctx.clock.now())) {
      rememberSession(ctx, session);
      return { session, more: false };
    }
    // A stale hint (its messages were settled, or a send died before its put): let it go.
    await releaseLock(ctx, entity, session.sessionId, session.lockToken!, session, true, first).catch((e: unknown) => {
      if (!(e instanceof BrokerError && e.code === 'SessionLockLost')) throw e;
    });
    i++;
  }
  return { more: page.next !== undefined && hints.length > 0 };
}

/**
 * The looks a release leaves at a session it found empty moments after a send (its message may
 * not be in the index yet): SESSION_HINT_LAG_MS after that send, then at the end of the grace.
 * A look's hint says which it is in the sequence part of its sort key, where no message's
 * number is this small, and so when the send was.
 */
const LOOKS = { lag: { seq: 1n, after: SESSION_HINT_LAG_MS }, grace: { seq: 2n, after: SESSION_HINT_GRACE_MS } } as const;
type Look = keyof typeof LOOKS;
const lookKey = (look: Look, lastSendAt: number) => readySortKey(lastSendAt + LOOKS[look].after, LOOKS[look].seq);

/** The look a hint is, and the send it is for; undefined for any other hint. */
function lookOf(rsk: string): { look: Look; lastSendAt: number } | undefined {
  const [time, seq] = rsk.split('/');
  for (const look of ['lag', 'grace'] as const) if (seq === padSeq(LOOKS[look].seq)) return { look, lastSendAt: Number(time) - LOOKS[look].after };
  return undefined;
}

/**
 * N2: a release's look at a session that holds no message at all is taken without locking the
 * session: at the first look its hint moves on to the last, at the last the session goes (N1,
 * N8), each one conditional write that fails if another acceptor, a lock, state (for the
 * removal) or a send came meanwhile. Any other hint, a session with a message, or a failed
 * condition goes the way of every hint: locked, looked at, released. True when the look was taken.
 */
async function lookedWithoutLock(ctx: BrokerContext, entity: EntityItem, hint: Key & { rsk: string }): Promise<boolean> {
  const seen = lookOf(hint.rsk);
  if (!seen) return false;
  if ((await firstMessageSortKey(ctx, entity, hint.sk.slice(SESSION_SK_PREFIX.length))) !== undefined) return false;
  const key = { pk: hint.pk, sk: hint.sk };
  const now = ctx.clock.now();
  if (seen.look === 'lag') return moveSessionLook(ctx, key, hint.rsk, lookKey('grace', seen.lastSendAt), now, seen.lastSendAt + 1);
  return deleteLookedSession(ctx, key, hint.rsk, now, now - SESSION_HINT_GRACE_MS);
}

/** The smallest `rsk` of the session's messages (in flight, scheduled and deferred included), if any. */
const firstMessageSortKey = (ctx: BrokerContext, entity: EntityItem, sessionId: string) => firstReadySortKey(ctx, sessionReadyPkOf(entity, sessionId));

/**
 * Gives up lock `token` of a session that holds no message visible now (`knownFirst`, its
 * first message's sort key, is later or none): the hint goes to that message or, with none,
 * the hint goes (and the item, unless it has state: N1, N5). A send may have put a hint for a
 * message the index does not show yet: within the grace period after the last send the hint
 * stays, to be looked at again. What the release decides rests on the session's last send and
 * state: `seen` says them, read (`exact`) or remembered, and the write's condition states what
 * it assumed (N4). A refusal returns the item as it is, to decide again from without a read;
 * a refusal of what was read means a send came, so the index is asked again too. Lost or
 * lapsed lock: SessionLockLost.
 */
async function releaseLock(
  ctx: BrokerContext,
  entity: EntityItem,
  sessionId: string,
  token: string,
  seen: SessionSeen,
  exact: boolean,
  knownFirst?: string,
): Promise<void> {
  const key = sessionKey(entity.eid, sessionId);
  let session = seen;
  let known = exact;
  let first = knownFirst;
  // Two tries at releasing a session found empty, as read (a third, the first, may be a guess).
  const emptyTries = exact ? 2 : 3;
  for (let attempt = 0; ; attempt++) {
    const now = ctx.clock.now();
    const lock = { token, now };
    const again = lookAgain(session.lastSendAt, now);
    const next = [first, again].filter((k): k is string => k !== undefined).sort()[0];
    const outcome =
      next === undefined && attempt < emptyTries
        ? await releaseEmptySession(ctx, key, lock, now - SESSION_HINT_GRACE_MS, session.hasState === true)
        : await releaseSessionLock(
            ctx,
            key,
            entity.eid,
            lock,
            next ?? readySortKey(now + SESSION_HINT_GRACE_MS, 0n),
            known ? undefined : premiseOf(session, again, now),
          );
    if (outcome.released) return;
    // Past the tries above only the lock's own condition can refuse; a clock set back may not show it lost.
    if (!holdsLock(outcome.found, token, ctx.clock.now()) || attempt > emptyTries) throw sessionLockLost();
    // A send (or a state) came meanwhile, or the guess was wrong: decide again with what the item says now.
    if (known) first = await firstMessageSortKey(ctx, entity, sessionId);
    session = outcome.found!;
    known = true;
  }
}

/** What a release that guessed the session's last send assumed: that send (the hint's look is for it), or none within the grace. */
const premiseOf = (guess: SessionSeen, again: string | undefined, now: number): SendPremise =>
  again !== undefined ? { lastSendAt: guess.lastSendAt! } : { quietSince: now - SESSION_HINT_GRACE_MS };

/** The hint of the look due next at a session whose last send was at `lastSendAt`, if its hint may be ahead of the index. */
function lookAgain(lastSendAt: number | undefined, now: number): string | undefined {
  if (lastSendAt === undefined) return undefined;
  if (now < lastSendAt + SESSION_HINT_LAG_MS) return lookKey('lag', lastSendAt);
  if (now < lastSendAt + SESSION_HINT_GRACE_MS) return lookKey('grace', lastSendAt);
  return undefined;
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
    const session = await takeBackHeld(ctx, entity, await heldSession(ctx, entity, sessionId, b.sessionLockToken));
    const { messages } = await receiveOnce(ctx, entity, target, b, sessionPolicy(ctx, entity, session));
    return { found: messages.length > 0 ? messages : undefined };
  });
  return found ?? [];
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
  const lock = sessionLockFrom(entity, ctx.clock.now(), b.sessionLockToken);
  if (!(await renewHeldLock(ctx, entity, sessionId, lock))) throw sessionLockLost();
  return { lockedUntil: iso(lock.until) };
}

/** N4: POST {R}/sessions/{id}/release, the next receiver may accept the session at once. */
export async function releaseSession(ctx: BrokerContext, target: ReceiveTarget, sessionIdGiven: string, b: RequestOf<'SessionLockRequest'>): Promise<void> {
  const sessionId = parseSessionId(sessionIdGiven);
  const entity = await sessionEntity(ctx, target);
  const first = await firstMessageSortKey(ctx, entity, sessionId);
  const now = ctx.clock.now();
  const token = b.sessionLockToken;
  const seen = recallSession(ctx, entity.eid, sessionId, token);
  if (first !== undefined && first <= readyUpperBound(now)) {
    // The hint goes to a message visible now whatever the last send was (a look-again time is
    // always later), and the release's own condition checks the lock: nothing to read first.
    if (!(await releaseSessionLock(ctx, sessionKey(entity.eid, sessionId), entity.eid, { token, now }, first)).released) throw sessionLockLost();
    return;
  }
  // Unread: what this process saw under the lock; the write checks it. A release reaching a
  // process that saw nothing reads the item: a wrong guess would be refused at 1 write unit,
  // and a session sent to within the grace (most, while a sender is active) would make it one.
  if (seen) await releaseLock(ctx, entity, sessionId, token, seen, false, first);
  else await releaseLock(ctx, entity, sessionId, token, await heldSession(ctx, entity, sessionId, token), true, first);
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
  const state = await readSessionState(ctx, entity.eid, sessionId);
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
  const held = { token: b.sessionLockToken, now: ctx.clock.now() };
  const written = await writeSessionState(ctx, entity.eid, sessionId, bytes ? new Uint8Array(bytes) : null, held);
  // Only the lock's condition failing means the lock is lost; a conflict with another write
  // of the session item (a lock renewal in flight) or a throttle is worth trying again.
  if (written === 'written') rememberState(ctx, entity.eid, sessionId, b.sessionLockToken, bytes !== null);
  if (written === 'lockLost') throw sessionLockLost();
  if (written === 'busy') {
    throw new BrokerError('Throttled', 'the session is being changed by another operation; try again', { retryable: true, retryAfterSeconds: 1 });
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
  return receiveDeferredWith(ctx, b.sequenceNumbers, sessionDeferredPolicy(ctx, entity, session));
}

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
    const page = await listSessionPage(ctx, entity.eid, Math.min(100, top - items.length + 5), start);
    const rows = page.items;
    const holding = await Promise.all(rows.map((row) => holdsSomething(ctx, entity, row)));
    for (let i = 0; i < rows.length; i++) {
      if (holding[i]) items.push(rows[i]!.sk.slice(SESSION_SK_PREFIX.length));
      if (items.length >= top) {
        const more = i < rows.length - 1 || page.next !== undefined;
        return { items, next: more ? token(rows[i]!.sk) : null };
      }
    }
    start = page.next;
  } while (start && Date.now() < workEnd);
  // Out of time with the page not full: the caller goes on from where this stopped.
  return { items, next: start ? token(start.sk as string) : null };
}

/** N1: whether a session has state or messages (or a send to it announced within the index's lag). */
async function holdsSomething(ctx: BrokerContext, entity: EntityItem, s: ListedSession): Promise<boolean> {
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
  const entity = session.entity !== undefined ? await entityOf(session.entity, session.eid) : undefined;
  if (entity && session.lockedUntil !== undefined && session.lockedUntil > now) {
    return (await postponeSessionSweep(ctx, key, session.dsk, session.lockedUntil)) ? 'later' : 'raced';
  }
  const holds =
    entity !== undefined &&
    (session.hasState === true || recentlySent(session, now) || (await firstMessageSortKey(ctx, entity, session.sessionId)) !== undefined);
  if (holds) return (await takeSessionOffAgenda(ctx, key, session.dsk)) ? 'kept' : 'raced';
  const removed =
    entity === undefined ? await deleteOrphanSession(ctx, key, session.eid) : await deleteIdleSession(ctx, key, session.dsk, now, now - SESSION_HINT_GRACE_MS);
  return removed ? 'removed' : 'raced';
}

const recentlySent = (s: Pick<SessionItem, 'lastSendAt'>, now: number) => s.lastSendAt !== undefined && now < s.lastSendAt + SESSION_HINT_GRACE_MS;

/** The operations the broker binds to its context (index.ts); each is one route's (N1-N8). */
export const operations = {
  acceptSession,
  listSessions,
  receiveFromSession,
  renewSessionLock,
  releaseSession,
  getSessionState,
  setSessionState,
  receiveDeferredFromSession,
};
