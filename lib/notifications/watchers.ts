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
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { authorize, type FindRule } from '../auth/index.js';
import { connectionKey, watchedKey, watchKey, watchPk } from '../store/keys.js';
import { conditionally, type BrokerContext } from '../broker/context.js';
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
 * The subscribe route: the token must allow a receive from the entity (Listen, A1-A3, B3),
 * checked exactly as the HTTP API checks `POST {entity}/messages/receive`. Three writes,
 * connection first, so a `$disconnect` always finds what it has to delete.
 */
export async function subscribe(ctx: BrokerContext, findRule: FindRule, connection: Connection, body: unknown): Promise<ServerFrame> {
  const input = (body ?? {}) as { entity?: unknown; token?: unknown };
  const given = typeof input.entity === 'string' ? input.entity : '';
  const path = hintPath(given);
  if (!path) return { type: 'refused', entity: given, status: 400, message: 'entity: must name a queue or subscription, e.g. queues/orders' };
  const decision = await authorize(
    { method: 'POST', path: `/${path}/messages/receive` },
    typeof input.token === 'string' ? input.token : undefined,
    Math.floor(Date.now() / 1000),
    findRule,
  );
  if (!decision.ok) {
    return {
      type: 'refused',
      entity: path,
      status: decision.status,
      message: decision.status === 401 ? 'a valid SharedAccessSignature is required' : 'the token does not grant Listen on this entity',
    };
  }
  const ttl = expiryOf(connection);
  await ctx.db.send(
    new UpdateCommand({
      TableName: ctx.tableName,
      Key: connectionKey(connection.connectionId),
      UpdateExpression: 'ADD entities :e SET #ttl = :ttl',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: { ':e': new Set([path]), ':ttl': ttl },
    }),
  );
  await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: { ...watchKey(path, connection.connectionId), ttl } }));
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

/** The connections waiting on `path` whose TTL has not passed (DynamoDB's TTL deletes lag). */
export async function watchersOf(ctx: BrokerContext, path: string): Promise<string[]> {
  const items = await queryAll(ctx, {
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: '#ttl > :now',
    ExpressionAttributeNames: { '#ttl': 'ttl' },
    ExpressionAttributeValues: { ':pk': watchPk(path), ':now': Math.floor(Date.now() / 1000) },
  });
  return items.map((item) => item.sk as string);
}

/** Posts one hint to every watcher of `path`; a gone connection's watch item is deleted. Returns hints delivered. */
export async function hintWatchers(ctx: BrokerContext, poster: ConnectionPoster, path: string): Promise<number> {
  const ids = await watchersOf(ctx, path);
  const frame: ServerFrame = { type: 'available', entity: path };
  const delivered = await Promise.all(
    ids.map(async (id) => {
      if (await poster.post(id, frame).catch(() => true)) return 1;
      await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: watchKey(path, id) }));
      return 0;
    }),
  );
  return delivered.reduce<number>((a, b) => a + b, 0);
}
