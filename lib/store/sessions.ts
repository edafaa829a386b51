/**
 * Session items' store operations (N1-N8): the entry that makes a session visible to
 * accept-next. Keys in keys.ts (`sessionKey`, `sessionQueuePk`).
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { sessionKey, sessionQueuePk } from './keys.js';
import { conditionally } from './outcomes.js';

export type SessionStore = Pick<Deps, 'db' | 'tableName'>;

/** What a new message tells its session's entry. */
export interface SessionAnnouncement {
  eid: string;
  sessionId: string;
  /** The entity's path: a released session's stream record hints the entity's waiting consumers. */
  entity: string;
  /** The message's ready sort key. */
  rsk: string;
  now: number;
}

/**
 * Puts the session in accept-next's index (N2), creating its entry if need be; an entry's
 * sort key is kept if it has one. Key: sessionKey(eid, sessionId). No condition. Success:
 * the entry as it now is (`rsk`, `lockedUntil`); errors throw.
 */
export async function announceSession(ctx: SessionStore, a: SessionAnnouncement): Promise<{ rsk?: string; lockedUntil?: number } | undefined> {
  const out = await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: sessionKey(a.eid, a.sessionId),
      UpdateExpression: 'SET rpk = :q, rsk = if_not_exists(rsk, :r), sessionId = :sid, eid = :eid, entity = :path, lastSendAt = :now',
      ExpressionAttributeValues: { ':q': sessionQueuePk(a.eid), ':r': a.rsk, ':sid': a.sessionId, ':eid': a.eid, ':path': a.entity, ':now': a.now },
      ReturnValues: 'ALL_NEW',
    }),
  );
  return out.Attributes as { rsk?: string; lockedUntil?: number } | undefined;
}

/** The entry sorts later than the message. */
const hintIsLater = 'rsk > :r';
/** No receiver holds the session now. */
const sessionUnlocked = '(attribute_not_exists(lockedUntil) OR lockedUntil <= :now)';

/**
 * Brings a session's entry forward to `rsk`. Key: sessionKey(eid, sessionId). Condition:
 * `hintIsLater` AND `sessionUnlocked`. Success and a failed condition (an earlier entry, or a
 * holder whose release recomputes it) both resolve; other errors throw.
 */
export async function bringSessionForward(ctx: SessionStore, eid: string, sessionId: string, rsk: string, now: number): Promise<void> {
  await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: sessionKey(eid, sessionId),
        UpdateExpression: 'SET rsk = :r',
        ConditionExpression: `${hintIsLater} AND ${sessionUnlocked}`,
        ExpressionAttributeValues: { ':r': rsk, ':now': now },
      }),
    ),
  );
}
