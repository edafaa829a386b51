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
import type { FindRule } from '../api/authorize.js';
import {
  connectionPaths,
  deleteConnection,
  deleteWatch,
  deleteWatched,
  liveWatches,
  pathOfWatch,
  unlistWatchedPath,
  type WatchItem,
  type WatchRule,
} from '../store/watches.js';
import type { BrokerContext } from '../broker/context.js';
import { wallSeconds } from '../deps.js';
import { MAX_CONNECTION_MS, type ServerFrame } from './protocol.js';

export type { WatchRule } from '../store/watches.js';

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
export const expiryOf = (c: Connection) => Math.ceil((c.connectedAt + MAX_CONNECTION_MS + 5 * 60_000) / 1000);

/**
 * How many entities one connection may wait on. The connection item lists them, and an item
 * may not pass DynamoDB's 400 KB (each subscribe rewrites it, paying for its size too).
 */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;

/** A short print of a rule's key, kept with a watch to tell later whether the key still stands. */
export const keyPrint = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 16);

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

/** A frame that ends a subscription, or refuses one. */
export const refused = (entity: string, status: number, message: string): ServerFrame => ({ type: 'refused', entity, status, message });

/** `$disconnect`: deletes the connection and its watch items (TTL does it when this never runs). */
export async function disconnect(ctx: BrokerContext, connectionId: string): Promise<void> {
  await deleteConnection(ctx, connectionId, await connectionPaths(ctx, connectionId));
}

/** The watch items of `path` whose TTL has not passed (DynamoDB's TTL deletes lag). */
const watchesOf = (ctx: BrokerContext, path: string): Promise<WatchItem[]> => liveWatches(ctx, path, wallSeconds(ctx));

/** The connections waiting on `path` whose TTL has not passed. */
export async function watchersOf(ctx: BrokerContext, path: string): Promise<string[]> {
  return (await watchesOf(ctx, path)).map((item) => item.sk);
}

/** What ends a watcher's subscription instead of a hint (H2), if anything. */
async function endingOf(watch: WatchItem, eid: string | undefined, check: RuleCheck | undefined, nowSeconds: number): Promise<ServerFrame | undefined> {
  const entity = pathOfWatch(watch);
  if (eid !== undefined && watch.eid !== undefined && watch.eid !== eid) return refused(entity, 404, 'the entity subscribed to was deleted');
  if (watch.exp !== undefined && watch.exp <= nowSeconds) return refused(entity, 401, 'the token of this subscription has expired');
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
  const nowSeconds = wallSeconds(ctx);
  const delivered = await Promise.all(
    watches.map(async (watch) => {
      const ending = await endingOf(watch, eid, check, nowSeconds);
      if (ending) {
        await endWatch(ctx, poster, watch, ending);
        return 0;
      }
      if (await poster.post(watch.sk, frame).catch(() => true)) return 1;
      await deleteWatch(ctx, path, watch.sk);
      return 0;
    }),
  );
  return delivered.reduce<number>((a, b) => a + b, 0);
}

/** H2: every subscription to `path` ends (its entity is gone); the sweeper's watched entry goes too. */
export async function endWatchers(ctx: BrokerContext, poster: ConnectionPoster, path: string): Promise<number> {
  const watches = await watchesOf(ctx, path);
  await Promise.all(watches.map((watch) => endWatch(ctx, poster, watch, refused(path, 404, 'the entity subscribed to was deleted'))));
  await deleteWatched(ctx, path);
  return watches.length;
}

async function endWatch(ctx: BrokerContext, poster: ConnectionPoster, watch: WatchItem, frame: ServerFrame): Promise<void> {
  const path = pathOfWatch(watch);
  await poster.post(watch.sk, frame).catch(() => false);
  await deleteWatch(ctx, path, watch.sk);
  await unlistWatchedPath(ctx, watch.sk, path);
}
