/**
 * Who waits on what: WebSocket connections and their entity subscriptions, in the one table.
 *
 * Items (keys.ts): the connection (`conn/<id>`, listing its entities), one watch item per
 * entity and connection (`watch/<entity>`), and one `watched/<entity>` entry per entity for
 * the sweeper's lock-lapse check. Every item expires with DynamoDB TTL shortly after API
 * Gateway's 2-hour connection limit, so a missed `$disconnect` costs nothing to clean up.
 * Connection lifetimes are API Gateway's and DynamoDB's real time, not the broker's
 * movable clock (like token expiry).
 */
import { createHash } from 'node:crypto';
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { authorize, parseAuthorizationHeader, verifySignature, type AuthorizationRule, type FindRule, type IsCurrent } from '../auth/index.js';
import { connectionKey, watchedKey, watchKey, watchPk } from '../store/keys.js';
import { type BrokerContext } from '../broker/context.js';
import { conditionally } from '../store/outcomes.js';
import { findEntity } from '../broker/entities.js';
import { refFromPathKey } from '../entities/paths.js';
import { hintPath, MAX_CONNECTION_MS, type ServerFrame } from './protocol.js';
import { queryAll } from '../store/query.js';

/** Sends one frame to one connection; false when the connection is gone (API Gateway's 410). */
export interface ConnectionPoster {
  post(connectionId: string, frame: ServerFrame): Promise<boolean>;
}

export interface Connection {
  connectionId: string;
  /** Epoch ms, real time (API Gateway's `connectedAt`). */
  connectedAt: number;
}

/** A few minutes past API Gateway's limit, in epoch seconds. */
const expiryOf = (c: Connection) => Math.ceil((c.connectedAt + MAX_CONNECTION_MS + 5 * 60_000) / 1000);

/**
 * How many entities one connection may wait on. The connection item lists them, and an item
 * may not pass DynamoDB's 400 KB (each subscribe rewrites it, paying for its size too).
 */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;

/** Which rule, and which of its keys, let a watcher subscribe (H2): the subscription lasts while they do. */
export interface WatchRule {
  keyName: string;
  scopePath: string;
  /** The entity incarnation the rule was made on; absent for a namespace rule. */
  incarnation?: string;
  /** A fingerprint of the key that signed the token: regenerating that key ends the subscription. */
  keyPrint: string;
}

/** A watch item: one connection waiting on one entity incarnation (keys.ts `watchKey`). */
interface WatchItem {
  pk: string;
  sk: string;
  ttl: number;
  /** The incarnation subscribed to (H2): a later entity of the same name gives it no hints. */
  eid?: string;
  /** The token's expiry, epoch seconds. */
  exp?: number;
  rule?: WatchRule;
}

const keyPrint = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 16);

/** Whether a watcher's rule and key still stand: the rule exists on its incarnation and the key is one of its two. */
export type RuleCheck = (rule: WatchRule) => Promise<boolean>;

/** The RuleCheck over a FindRule (cached as the HTTP path's is, so a removed rule ends subscriptions within that window). */
export function ruleCheck(findRule: FindRule): RuleCheck {
  return async (watch) => {
    const rule = await findRule(watch.keyName, watch.scopePath);
    if (!rule || rule.incarnation !== watch.incarnation) return false;
    return keyPrint(rule.primaryKey) === watch.keyPrint || keyPrint(rule.secondaryKey) === watch.keyPrint;
  };
}

const refused = (entity: string, status: number, message: string): ServerFrame => ({ type: 'refused', entity, status, message });

/**
 * The subscribe route (H2): the token must allow a receive from the entity (Listen, A1-A3,
 * B3), checked exactly as the HTTP API checks `POST {entity}/messages/receive`, a deleted
 * entity's rules included (`isCurrent`), and the entity must exist (404 as a receive answers).
 * The watch is bound to the entity's incarnation, the token's expiry and the rule's key.
 * Three writes, connection first, so a `$disconnect` always finds what it has to delete.
 */
export async function subscribe(
  ctx: BrokerContext,
  findRule: FindRule,
  connection: Connection,
  body: unknown,
  isCurrent: IsCurrent = () => true,
): Promise<ServerFrame> {
  const input = (body ?? {}) as { entity?: unknown; token?: unknown };
  const given = typeof input.entity === 'string' ? input.entity : '';
  const path = hintPath(given);
  if (!path) return refused(given, 400, 'entity: must name a queue or subscription, e.g. queues/orders');
  const token = typeof input.token === 'string' ? input.token : undefined;
  let chosen: AuthorizationRule | undefined;
  const decision = await authorize({ method: 'POST', path: `/${path}/messages/receive` }, token, Math.floor(Date.now() / 1000), findRule, async (rule) => {
    const current = await isCurrent(rule);
    if (current) chosen ??= rule;
    return current;
  });
  if (!decision.ok || !chosen || token === undefined) {
    const status = decision.ok ? 401 : decision.status;
    return refused(path, status, status === 401 ? 'a valid SharedAccessSignature is required' : 'the token does not grant Listen on this entity');
  }
  const ref = refFromPathKey(entityPathOf(path));
  const entity = ref ? await findEntity(ctx, ref, true) : undefined;
  if (!entity || entity.deleting) return refused(path, 404, `no entity '${entityPathOf(path)}' exists`);
  const parsed = parseAuthorizationHeader(token);
  const rule: WatchRule = {
    keyName: chosen.keyName,
    scopePath: chosen.scopePath,
    ...(chosen.incarnation !== undefined ? { incarnation: chosen.incarnation } : {}),
    keyPrint: keyPrint(signedBy(parsed, chosen)),
  };
  const ttl = expiryOf(connection);
  const listed = await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: connectionKey(connection.connectionId),
        UpdateExpression: 'ADD entities :e SET #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(entities) OR size(entities) < :max OR contains(entities, :path)',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':e': new Set([path]), ':ttl': ttl, ':max': MAX_SUBSCRIPTIONS_PER_CONNECTION, ':path': path },
      }),
    ),
  );
  if (!listed) {
    return refused(path, 403, `a connection may wait on at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} entities; open another connection for more`);
  }
  const watch: WatchItem = { ...watchKey(path, connection.connectionId), ttl, eid: entity.eid, exp: parsed.expiry, rule };
  await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: watch }));
  // Only ever lengthened: the entry lives as long as its longest-lived watcher.
  await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: watchedKey(path),
        UpdateExpression: 'SET #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(#ttl) OR #ttl < :ttl',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':ttl': ttl },
      }),
    ),
  );
  return { type: 'subscribed', entity: path };
}

/** The entity of a hint path: without its dead-letter subqueue segment. */
const entityPathOf = (path: string) => path.replace(/\/\$(deadletterqueue|transferdeadletterqueue)$/, '');

/** Which of the rule's keys signed the token (the token verified against one of them). */
function signedBy(token: ReturnType<typeof parseAuthorizationHeader>, rule: AuthorizationRule): string {
  return verifySignature(token, rule.primaryKey, Math.floor(Date.now() / 1000)) ? rule.primaryKey : rule.secondaryKey;
}

/** `$disconnect`: deletes the connection and its watch items (TTL does it when this never runs). */
export async function disconnect(ctx: BrokerContext, connectionId: string): Promise<void> {
  const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: connectionKey(connectionId), ConsistentRead: true }));
  const entities = [...((got.Item?.entities as Set<string> | undefined) ?? [])];
  const keys = [connectionKey(connectionId), ...entities.map((e) => watchKey(e, connectionId))];
  for (let i = 0; i < keys.length; i += 25) {
    let requests: Record<string, unknown>[] | undefined = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
    for (let attempt = 0; requests && requests.length > 0 && attempt < 5; attempt++) {
      const out = await ctx.db.send(new BatchWriteCommand({ RequestItems: { [ctx.tableName]: requests } }));
      requests = out.UnprocessedItems?.[ctx.tableName] as Record<string, unknown>[] | undefined;
    }
  }
}

/** The watch items of `path` whose TTL has not passed (DynamoDB's TTL deletes lag). */
async function watchesOf(ctx: BrokerContext, path: string): Promise<WatchItem[]> {
  return queryAll<WatchItem>(ctx, {
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: '#ttl > :now',
    ExpressionAttributeNames: { '#ttl': 'ttl' },
    ExpressionAttributeValues: { ':pk': watchPk(path), ':now': Math.floor(Date.now() / 1000) },
  });
}

/** The connections waiting on `path` whose TTL has not passed. */
export async function watchersOf(ctx: BrokerContext, path: string): Promise<string[]> {
  return (await watchesOf(ctx, path)).map((item) => item.sk);
}

/** What ends a watcher's subscription instead of a hint (H2), if anything. */
async function endingOf(watch: WatchItem, eid: string | undefined, check: RuleCheck | undefined): Promise<ServerFrame | undefined> {
  const entity = watch.pk.slice(watchPk('').length);
  if (eid !== undefined && watch.eid !== undefined && watch.eid !== eid) return refused(entity, 404, 'the entity subscribed to was deleted');
  if (watch.exp !== undefined && watch.exp <= Math.floor(Date.now() / 1000)) return refused(entity, 401, 'the token of this subscription has expired');
  if (check && watch.rule && !(await check(watch.rule))) return refused(entity, 401, "the subscription's authorization rule or key was removed");
  return undefined;
}

/**
 * Posts one hint to every watcher of `path` on incarnation `eid`; a gone connection's watch
 * item is deleted. A watcher of another incarnation, or whose token expired or whose rule
 * (checked with `check`, where the caller may read rules) went, gets a `refused` frame and
 * its subscription ends (H2). Returns hints delivered.
 */
export async function hintWatchers(ctx: BrokerContext, poster: ConnectionPoster, path: string, eid?: string, check?: RuleCheck): Promise<number> {
  const watches = await watchesOf(ctx, path);
  const frame: ServerFrame = { type: 'available', entity: path };
  const delivered = await Promise.all(
    watches.map(async (watch) => {
      const ending = await endingOf(watch, eid, check);
      if (ending) {
        await endWatch(ctx, poster, watch, ending);
        return 0;
      }
      if (await poster.post(watch.sk, frame).catch(() => true)) return 1;
      await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: watchKey(path, watch.sk) }));
      return 0;
    }),
  );
  return delivered.reduce<number>((a, b) => a + b, 0);
}

/** H2: every subscription to `path` ends (its entity is gone); the sweeper's watched entry goes too. */
export async function endWatchers(ctx: BrokerContext, poster: ConnectionPoster, path: string): Promise<number> {
  const watches = await watchesOf(ctx, path);
  await Promise.all(watches.map((watch) => endWatch(ctx, poster, watch, refused(path, 404, 'the entity subscribed to was deleted'))));
  await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: watchedKey(path) }));
  return watches.length;
}

async function endWatch(ctx: BrokerContext, poster: ConnectionPoster, watch: WatchItem, frame: ServerFrame): Promise<void> {
  const path = watch.pk.slice(watchPk('').length);
  await poster.post(watch.sk, frame).catch(() => false);
  await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: watchKey(path, watch.sk) }));
  await conditionally(
    ctx.db.send(
      new UpdateCommand({
        TableName: ctx.tableName,
        Key: connectionKey(watch.sk),
        UpdateExpression: 'DELETE entities :e',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':e': new Set([path]) },
      }),
    ),
  );
}
