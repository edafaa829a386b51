/**
 * The session lock (N2-N4): who holds a session, and what a receive under its lock reads and
 * takes. A session receive is the plain receive (receive.ts) with the policy below: the
 * session's own ready partition, the session lock guarding each take, strict sequence order.
 *
 * Every lock of a session has a generation (`gen`, one more at each accept). A message taken
 * under it records the generation (`sgen`) and the lock token (`slk`): a message is taken only
 * if it carries no generation or an older one, so a holder whose lock lapsed while its take was
 * in flight can never take a message from the next holder, whatever the clocks say.
 */
import { randomUUID } from 'node:crypto';
import { BrokerError, sessionLockLost } from '../errors.js';
import { onCandidate } from '../fate/delivery.js';
import type { MessageItem } from '../messages/item.js';
import { newLockToken } from '../messages/lock-token.js';
import { messageKey, readySortKey, sessionKey, sessionReadyPk } from '../store/keys.js';
import { partitionOfSeq } from '../store/sequence.js';
import { readSession, type SessionItem, type SessionLock } from '../store/sessions.js';
import type { BrokerContext } from './context.js';
import type { EntityItem } from './entities.js';
import type { MessageLock } from './hand-out.js';
import { choosePartition } from './message-items.js';
import { deadLetter, unchanged } from './moves.js';
import type { ReceivePolicy } from './receive.js';
import type { DeferredPolicy } from './settle.js';
import { rememberSession } from './session-memory.js';

/** Whether `token` holds the session's lock at `now` (N4): the item's lock is that token's and has not run out. */
export const holdsLock = (session: Pick<SessionItem, 'lockToken' | 'lockedUntil'> | undefined, token: string | undefined, now: number): boolean =>
  session !== undefined && token !== undefined && session.lockToken === token && (session.lockedUntil ?? 0) > now;

/** The session, if `token` holds its lock now (one consistent read); otherwise SessionLockLost (N4). */
export async function heldSession(ctx: BrokerContext, entity: EntityItem, sessionId: string, token: string): Promise<SessionItem> {
  const session = await readSession(ctx, sessionKey(entity.eid, sessionId));
  if (!holdsLock(session, token, ctx.clock.now())) throw sessionLockLost();
  rememberSession(ctx, session!);
  return session!;
}

/** Used by the sweeper and bulk deletion: the end of the session lock a message was taken under, if it is still live (T5, D2). */
export async function liveSessionLock(ctx: BrokerContext, item: Pick<MessageItem, 'eid' | 'sessionId' | 'slk'>): Promise<number | undefined> {
  if (item.slk === undefined || item.sessionId === undefined) return undefined;
  const session = await readSession(ctx, sessionKey(item.eid, item.sessionId));
  return holdsLock(session, item.slk, ctx.clock.now()) ? session!.lockedUntil : undefined;
}

/**
 * A session lock lockDuration long from `now`: a new one (a fresh token) for an accept, or a
 * held one (its token) renewed (N4). The session sorts among accept-next's hints at the lock's
 * end (N7), so a locked session costs accept-next nothing.
 */
export function sessionLockFrom(entity: Pick<EntityItem, 'lockDuration'>, now: number, token: string = randomUUID()): SessionLock {
  const until = now + entity.lockDuration;
  return { token, now, until, rsk: readySortKey(until, 0n) };
}

/** The partition a session's messages go to, and its own ready partition (N3). */
export const sessionPartition = (entity: EntityItem, sessionId: string) => choosePartition(entity, { sessionId });
export const sessionReadyPkOf = (entity: EntityItem, sessionId: string) => sessionReadyPk(entity.eid, sessionPartition(entity, sessionId), sessionId);

/** The generation a session's lock is; a message taken under it carries it as `sgen`. */
const generationOf = (session: Pick<SessionItem, 'gen'>) => session.gen ?? 0;

/** Not taken under this lock or a later one (`:gen`): a message a holder may take (N3). */
export const takenBefore = '(attribute_not_exists(sgen) OR sgen < :gen)';

/** Whether `item` was taken under this lock (or a later one): in flight, ours already. */
export const takenUnder = (item: Pick<MessageItem, 'sgen'>, session: Pick<SessionItem, 'gen'>) => item.sgen !== undefined && item.sgen >= generationOf(session);

/** What a message taken under the session's lock records: the session lock and its end, one delivery more. */
export function sessionMessageLock(session: SessionItem, seq: bigint): MessageLock {
  return { token: newLockToken(seq), until: session.lockedUntil!, session: { token: session.lockToken!, gen: generationOf(session) } };
}

/**
 * N6/R7: a session's receive by number: deferred messages of this session, read consistently,
 * each locked until the session lock's end unless taken under it already. A message whose last
 * delivery ran out under an earlier lock has no agenda entry: D2 is applied when it is asked for.
 */
export function sessionDeferredPolicy(ctx: BrokerContext, entity: EntityItem, session: SessionItem): DeferredPolicy {
  const partition = sessionPartition(entity, session.sessionId);
  return {
    keyOf: (seq) => (partitionOfSeq(seq) === partition ? messageKey(entity.eid, 'active', partition, seq) : undefined),
    consistent: true,
    belongs: (item) => item.sessionId === session.sessionId,
    notDeferred: (seq) => new BrokerError('MessageNotFound', `no deferred message of this session with sequence number ${seq}`, { field: 'sequenceNumbers' }),
    holds: (item) => takenUnder(item, session),
    passOver: async (item, now) => {
      if (item.deliveryCount < entity.maxDeliveryCount) return false;
      const outcome = onCandidate({ ...item, state: 'Active', expiresAt: null, lockedUntil: null, inDeadLetter: false }, entity.maxDeliveryCount, now);
      if (outcome.kind === 'deadLetter') await deadLetter(ctx, entity, item, unchanged(item), outcome);
      return true;
    },
    free: () => ({ condition: `sessionId = :sid AND ${takenBefore}`, values: { ':sid': session.sessionId, ':gen': generationOf(session) } }),
    lock: (_item, _key, seq) => sessionMessageLock(session, seq),
    recheck: false,
  };
}

/**
 * A message in flight keeps its place in its session's order, marked with the lock generation
 * it was taken under, so a receive skips its own messages in flight by the index row alone.
 */
const inFlightSortKey = (rsk: string, gen: number) => `${rsk.split('/').slice(0, 2).join('/')}/${gen}`;

/**
 * N3: a receive under a session lock. It reads the session's own ready partition in sequence
 * order, passes over its own messages in flight by their index row, takes a message not taken
 * under this lock (and not deferred), and locks it until the session lock's end.
 */
export function sessionPolicy(entity: EntityItem, session: SessionItem): ReceivePolicy {
  const ours = String(generationOf(session));
  return {
    partitions: async () => [{ pk: sessionReadyPkOf(entity, session.sessionId) }],
    holds: (c) => c.rsk.split('/')[2] === ours,
    // N6: gone, or ours in flight (T5), is left alone; D2 is applied when the next holder reaches it.
    inFlight: (item) => takenUnder(item, session),
    free: () => ({
      condition: `${takenBefore} AND #state <> :deferred`,
      names: { '#state': 'state' },
      values: { ':gen': generationOf(session), ':deferred': 'Deferred' },
    }),
    lock: (c) => ({ lock: sessionMessageLock(session, BigInt(c.sk)), entry: { rsk: inFlightSortKey(c.rsk, generationOf(session)) } }),
    inTurn: true,
  };
}
