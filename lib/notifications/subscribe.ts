/**
 * The WebSocket API's `subscribe` route (H2), apart from the watchers' store (watchers.ts) so
 * that the functions which only hint or end watchers (the sweeper, the stream) do not bundle
 * the authorization code and the HTTP route table it checks against.
 */
import { parseAuthorizationHeader, verifySignature, type AuthorizationRule } from '../auth/index.js';
import { authorize, type FindRule, type IsCurrent } from '../api/authorize.js';
import { watchKey } from '../store/keys.js';
import { extendWatched, listWatchedPath, putWatch, type WatchItem, type WatchRule } from '../store/watches.js';
import type { BrokerContext } from '../broker/context.js';
import { wallSeconds } from '../deps.js';
import { findEntity } from '../broker/entities.js';
import { refFromPathKey } from '../entities/paths.js';
import { hintPath, type ServerFrame } from './protocol.js';
import { expiryOf, keyPrint, MAX_SUBSCRIPTIONS_PER_CONNECTION, refused, type Connection } from './watchers.js';

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
  const nowSeconds = wallSeconds(ctx);
  const decision = await authorize({ method: 'POST', path: `/${path}/messages/receive` }, token, nowSeconds, findRule, async (rule) => {
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
    keyPrint: keyPrint(signedBy(parsed, chosen, nowSeconds)),
  };
  const ttl = expiryOf(connection);
  if (!(await listWatchedPath(ctx, connection.connectionId, path, ttl, MAX_SUBSCRIPTIONS_PER_CONNECTION))) {
    return refused(path, 403, `a connection may wait on at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} entities; open another connection for more`);
  }
  const watch: WatchItem = { ...watchKey(path, connection.connectionId), ttl, eid: entity.eid, exp: parsed.expiry, rule };
  await putWatch(ctx, watch);
  // Only ever lengthened: the entry lives as long as its longest-lived watcher.
  await extendWatched(ctx, path, ttl);
  return { type: 'subscribed', entity: path };
}

/** The entity of a hint path: without its dead-letter subqueue segment. */
const entityPathOf = (path: string) => path.replace(/\/\$(deadletterqueue|transferdeadletterqueue)$/, '');

/** Which of the rule's keys signed the token (the token verified against one of them). */
function signedBy(token: ReturnType<typeof parseAuthorizationHeader>, rule: AuthorizationRule, nowSeconds: number): string {
  return verifySignature(token, rule.primaryKey, nowSeconds) ? rule.primaryKey : rule.secondaryKey;
}
