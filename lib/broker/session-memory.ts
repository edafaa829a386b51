/**
 * What this process last read of each session under a lock (its last send, whether it has
 * state), so that a release can write without reading the session item first (N4). A guess and
 * nothing more: the release states what it assumed in its write's condition, and a refusal
 * returns the item as it is (lib/store/sessions.ts `releaseSessionLock`, `releaseEmptySession`).
 */
import type { SessionItem } from '../store/sessions.js';
import type { BrokerContext } from './context.js';

/** What a release needs to know of a session item besides its lock: its last send and whether it has state. */
export type SessionSeen = Pick<SessionItem, 'lastSendAt' | 'hasState'>;

/** Sessions remembered per process at most; past that the oldest is forgotten. */
const REMEMBERED = 1_000;
const seenByClient = new WeakMap<object, Map<string, SessionSeen>>();
const seenId = (eid: string, sessionId: string, token: string) => `${eid}/${sessionId}/${token}`;

function seenOf(ctx: BrokerContext): Map<string, SessionSeen> {
  let seen = seenByClient.get(ctx.db);
  if (!seen) seenByClient.set(ctx.db, (seen = new Map()));
  return seen;
}

/**
 * Remembers what this process last read of a session under its lock (an accept's write, a
 * receive's or a settlement's read), for its release to guess from instead of reading the item
 * again. Only ever a guess: the release's write states it in its condition (sessions.ts).
 */
export function rememberSession(ctx: BrokerContext, session: SessionItem): void {
  if (session.lockToken === undefined) return;
  const seen = seenOf(ctx);
  const id = seenId(session.eid, session.sessionId, session.lockToken);
  seen.delete(id);
  seen.set(id, { lastSendAt: session.lastSendAt, hasState: session.hasState });
  if (seen.size > REMEMBERED) seen.delete(seen.keys().next().value!);
}

/** What this process last read of the session under lock `token`, if it did; forgotten once asked (the release ends the lock). */
export function recallSession(ctx: BrokerContext, eid: string, sessionId: string, token: string): SessionSeen | undefined {
  const seen = seenOf(ctx);
  const id = seenId(eid, sessionId, token);
  const got = seen.get(id);
  seen.delete(id);
  return got;
}

/** A state written or cleared under lock `token` (N5): what is remembered of the session says so too. */
export function rememberState(ctx: BrokerContext, eid: string, sessionId: string, token: string, hasState: boolean): void {
  const seen = seenOf(ctx).get(seenId(eid, sessionId, token));
  if (seen) seen.hasState = hasState || undefined;
}
