/**
 * Watch items (H1, H2): who waits on what. A connection item (`conn/<id>`) lists the hint
 * paths it waits on; one watch item per hint path and connection (`watch/<path>` / id) says
 * on which incarnation, until when and under which rule; one `watched` / path entry per
 * hint path tells the sweeper what to check for lapsed locks (keys.ts). Every item carries
 * a `ttl` a little past API Gateway's 2-hour connection limit, so a missed `$disconnect`
 * costs nothing; reads skip items whose TTL passed (DynamoDB's deletes lag). TTLs are
 * epoch seconds of real time, not the broker's clock.
 */
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { conditionally } from './outcomes.js';
import { connectionKey, WATCHED_PK, watchedKey, watchKey, watchPk } from './keys.js';
import { queryAll } from './query.js';

type Store = Pick<Deps, 'db' | 'tableName'>;

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
export interface WatchItem {
  pk: string;
  sk: string;
  ttl: number;
  /** The incarnation subscribed to (H2): a later entity of the same name gives it no hints. */
  eid?: string;
  /** The token's expiry, epoch seconds. */
  exp?: number;
  rule?: WatchRule;
}

/** The hint path a watch item is about. */
export const pathOfWatch = (watch: Pick<WatchItem, 'pk'>) => watch.pk.slice(watchPk('').length);

// Named condition parts (`#ttl` is `ttl`, a reserved word).
const roomForOneMore = 'attribute_not_exists(entities) OR size(entities) < :max OR contains(entities, :path)';
const livesShorter = 'attribute_not_exists(#ttl) OR #ttl < :ttl';
const connectionExists = 'attribute_exists(pk)';
const notExpired = '#ttl > :now';
const entryNotExpired = '#ttl > :real';

/**
 * Key: `connectionKey`. Adds `path` to the connection's list and sets its TTL.
 * Condition: `roomForOneMore` (fewer than `max` paths listed, or `path` among them already).
 * True when listed; false when the connection waits on `max` other paths already.
 */
export async function listWatchedPath(store: Store, connectionId: string, path: string, ttl: number, max: number): Promise<boolean> {
  const listed = await conditionally(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: connectionKey(connectionId),
        UpdateExpression: 'ADD entities :e SET #ttl = :ttl',
        ConditionExpression: roomForOneMore,
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':e': new Set([path]), ':ttl': ttl, ':max': max, ':path': path },
      }),
    ),
  );
  return listed !== undefined;
}

/**
 * Key: `connectionKey`. Removes `path` from the connection's list.
 * Condition: `connectionExists` (a gone connection is not made again). Answers nothing either way.
 */
export async function unlistWatchedPath(store: Store, connectionId: string, path: string): Promise<void> {
  await conditionally(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: connectionKey(connectionId),
        UpdateExpression: 'DELETE entities :e',
        ConditionExpression: connectionExists,
        ExpressionAttributeValues: { ':e': new Set([path]) },
      }),
    ),
  );
}

/** Key: `connectionKey`, strongly consistent. The hint paths the connection waits on; none when it is gone. */
export async function connectionPaths(store: Store, connectionId: string): Promise<string[]> {
  const got = await store.db.send(new GetCommand({ TableName: store.tableName, Key: connectionKey(connectionId), ConsistentRead: true }));
  return [...((got.Item?.entities as Set<string> | undefined) ?? [])];
}

/**
 * Keys: `connectionKey` and the `watchKey` of each of `paths`. Deletes them in batches of 25,
 * each batch's unprocessed deletes retried up to 4 more times; no condition. What is left
 * then goes with its TTL.
 */
export async function deleteConnection(store: Store, connectionId: string, paths: string[]): Promise<void> {
  const keys = [connectionKey(connectionId), ...paths.map((p) => watchKey(p, connectionId))];
  for (let i = 0; i < keys.length; i += 25) {
    let requests: Record<string, unknown>[] | undefined = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
    for (let attempt = 0; requests && requests.length > 0 && attempt < 5; attempt++) {
      const out = await store.db.send(new BatchWriteCommand({ RequestItems: { [store.tableName]: requests } }));
      requests = out.UnprocessedItems?.[store.tableName] as Record<string, unknown>[] | undefined;
    }
  }
}

/** Key: the watch's own (`watchKey`). Puts it, replacing an earlier watch of the same connection and path; no condition. */
export async function putWatch(store: Store, watch: WatchItem): Promise<void> {
  await store.db.send(new PutCommand({ TableName: store.tableName, Item: watch }));
}

/** Key: `watchKey(path, connectionId)`. Deletes the watch; no condition. */
export async function deleteWatch(store: Store, path: string, connectionId: string): Promise<void> {
  await store.db.send(new DeleteCommand({ TableName: store.tableName, Key: watchKey(path, connectionId) }));
}

/** Key: `watchPk(path)`. Every watch of the path whose TTL is after `nowSeconds` (`notExpired`), page after page. */
export const liveWatches = (store: Store, path: string, nowSeconds: number): Promise<WatchItem[]> =>
  queryAll<WatchItem>(store, {
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: notExpired,
    ExpressionAttributeNames: { '#ttl': 'ttl' },
    ExpressionAttributeValues: { ':pk': watchPk(path), ':now': nowSeconds },
  });

/**
 * Key: `watchedKey(path)`. Sets the entry's TTL to `ttl`. Condition: `livesShorter`, so the
 * entry lives as long as its longest-lived watcher. Answers nothing either way.
 */
export async function extendWatched(store: Store, path: string, ttl: number): Promise<void> {
  await conditionally(
    store.db.send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: watchedKey(path),
        UpdateExpression: 'SET #ttl = :ttl',
        ConditionExpression: livesShorter,
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':ttl': ttl },
      }),
    ),
  );
}

/** Key: `watchedKey(path)`. Deletes the sweeper's entry for the path; no condition. */
export async function deleteWatched(store: Store, path: string): Promise<void> {
  await store.db.send(new DeleteCommand({ TableName: store.tableName, Key: watchedKey(path) }));
}

/** Key: the `watched` partition. Every watched hint path whose entry's TTL is after `nowSeconds`, page after page. */
export async function watchedPaths(store: Store, nowSeconds: number): Promise<string[]> {
  const items = await queryAll<{ sk: string }>(store, {
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: entryNotExpired,
    ExpressionAttributeNames: { '#ttl': 'ttl' },
    ExpressionAttributeValues: { ':pk': WATCHED_PK, ':real': nowSeconds },
  });
  return items.map((item) => item.sk);
}
