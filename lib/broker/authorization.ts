/**
 * Authorization rules (A2, A4): stored in the keys table (no stream carries them), under
 * `auth` as they were in the data table before it, looked up with a short
 * in-function cache so most requests cost no extra read. A regenerated key takes effect at
 * once in the function that regenerated it and within CACHE_MS everywhere else.
 *
 * An entity's rules are bound to the entity's incarnation (`eid`): a rule whose
 * entity was deleted opens nothing, whatever a cache holds and whether or not the deletion
 * got round to removing it, even after an entity of the same name is made. That costs one
 * strongly consistent read of the entity's item (1 read unit) per request a rule of an
 * entity authorizes; namespace rules (the root key) cost nothing extra.
 */
import type { RequestOf } from '../requests/schemas.js';
import { grantAllows, type AuthorizationRule, type Grant } from '../auth/grants.js';
import { canonicalPath, generateKey, type Right } from '../auth/sas.js';
import { entityPathKey, type EntityRef } from '../entities/paths.js';
import { BrokerError, badRequest } from '../errors.js';
import { validateName } from '../names.js';
import { sharedPromise } from '../single-flight.js';
import type { BrokerContext } from './context.js';
import { authRuleKey, authScopePrefix, entityKey } from '../store/keys.js';
import { getEntityIncarnation } from '../store/entities.js';
import {
  adoptLegacyAuthRule,
  deleteAuthRule,
  deleteLegacyAuthRule,
  legacyAuthRulePages,
  listAuthRuleOwners,
  listAuthRules,
  putAuthRule,
  readAuthRule,
} from '../store/authorization-rules.js';

export const ROOT_RULE = 'RootManageSharedAccessKey';
export const CACHE_MS = 30_000;

interface RuleRecord extends AuthorizationRule {
  pk: string;
  sk: string;
  createdAt: number;
  updatedAt: number;
}

const skOf = (scopePath: string, keyName: string) => authRuleKey(scopePath, keyName).sk;

/** The entity item's key for a canonical entity scope (`/queues/a`, `/topics/t/subscriptions/s`). */
function entityKeyOfScope(scopePath: string) {
  const [kind, name, sub, subName, ...more] = scopePath.split('/').slice(1);
  if (name === undefined || more.length > 0) return undefined;
  if (kind === 'queues' && sub === undefined) return entityKey('queue', name);
  if (kind === 'topics' && sub === undefined) return entityKey('topic', name);
  if (kind === 'topics' && sub === 'subscriptions' && subName !== undefined) return entityKey('subscription', subName, name);
  return undefined;
}

/** A rule as stored, if it belongs to incarnation `eid` (none for the namespace): a deleted entity's leftovers are no rule. */
const ofIncarnation = (rule: RuleRecord | undefined, eid: string | undefined) => (rule && rule.incarnation === eid ? rule : undefined);

export function ruleStore(ctx: BrokerContext) {
  const cache = new Map<string, { rule: AuthorizationRule | undefined; at: number }>();
  const read = (scopePath: string, keyName: string, consistent = false) => readAuthRule<RuleRecord>(ctx, scopePath, keyName, consistent);

  /** Lookups in flight: the requests that find a rule's cache entry stale at once share one read (it is never older than CACHE_MS either). */
  const reading = new Map<string, Promise<AuthorizationRule | undefined>>();

  /** The FindRule of lib/auth: cached for CACHE_MS, misses included (a flood of bad names costs one read each per window). */
  async function findRule(keyName: string, scopePath: string): Promise<AuthorizationRule | undefined> {
    const key = skOf(scopePath, keyName);
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.rule;
    return sharedPromise(
      reading,
      key,
      async () => {
        const at = Date.now();
        const since = changes;
        const rule = await read(scopePath, keyName);
        // Not if this function changed a rule meanwhile: that read may not show the change.
        if (changes === since) {
          if (cache.size > 10_000) cache.clear();
          cache.set(key, { rule, at });
        }
        return rule;
      },
      'untilSettled',
    );
  }

  /** Rule changes made in this function: a lookup that started before one is neither cached nor shared after it. */
  let changes = 0;
  const forget = (scopePath: string, keyName: string) => {
    changes++;
    cache.delete(skOf(scopePath, keyName));
    reading.delete(skOf(scopePath, keyName));
  };

  /** The IsCurrent of lib/auth (A2): never cached, so no function's cache outlives an entity. */
  async function isCurrent(rule: Pick<AuthorizationRule, 'scopePath' | 'incarnation'>): Promise<boolean> {
    if (rule.scopePath === '/') return true;
    const key = entityKeyOfScope(rule.scopePath);
    if (!rule.incarnation || !key) return false;
    const got = await getEntityIncarnation(ctx, key);
    return got !== undefined && got.eid === rule.incarnation && got.deleting !== true;
  }

  /** Entity scopes name the incarnation their rules are made on; the namespace has none. */
  function checkScope(scopePath: string, eid: string | undefined) {
    if ((scopePath === '/') !== (eid === undefined)) throw new Error(`rules of ${scopePath} need ${scopePath === '/' ? 'no' : "the entity's"} incarnation`);
  }

  /** The namespace root rule always exists; `key` (SLUICE_ROOT_KEY) pins its primary key. */
  async function ensureRoot(key?: string): Promise<AuthorizationRule> {
    const existing = await read('/', ROOT_RULE, true);
    if (existing && (key === undefined || existing.primaryKey === key)) return existing;
    const now = ctx.clock.now();
    const rule: RuleRecord = {
      ...authRuleKey('/', ROOT_RULE),
      keyName: ROOT_RULE,
      scopePath: '/',
      rights: ['Manage', 'Send', 'Listen'],
      primaryKey: key ?? generateKey(),
      secondaryKey: existing?.secondaryKey ?? generateKey(),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    // Not written: another instance created it first, so use that one.
    if (!(await putAuthRule(ctx, rule, { onlyIfNew: !(existing || key) }))) return (await read('/', ROOT_RULE, true))!;
    forget('/', ROOT_RULE);
    return rule;
  }

  async function put(
    scopePath: string,
    keyName: string,
    { rights }: RequestOf<'AuthorizationRuleProperties'>,
    eid?: string,
  ): Promise<{ created: boolean; rule: RuleRecord }> {
    checkScope(scopePath, eid);
    validateName('authorizationRule', keyName, 'keyName');
    if (scopePath === '/' && keyName.toLowerCase() === ROOT_RULE.toLowerCase()) {
      throw badRequest('keyName', `${ROOT_RULE} always has the Manage right and cannot be changed`);
    }
    // A rule a deleted incarnation left behind is overwritten, keys included.
    const existing = ofIncarnation(await read(scopePath, keyName, true), eid);
    const now = ctx.clock.now();
    const rule: RuleRecord = {
      ...authRuleKey(scopePath, keyName),
      keyName: existing?.keyName ?? keyName,
      scopePath,
      ...(eid !== undefined ? { incarnation: eid } : {}),
      rights: rights.includes('Manage') ? ['Manage', 'Send', 'Listen'] : rights,
      primaryKey: existing?.primaryKey ?? generateKey(),
      secondaryKey: existing?.secondaryKey ?? generateKey(),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await putAuthRule(ctx, rule);
    forget(scopePath, keyName);
    return { created: !existing, rule };
  }

  async function get(scopePath: string, keyName: string, eid?: string): Promise<RuleRecord> {
    checkScope(scopePath, eid);
    const rule = ofIncarnation(await read(scopePath, keyName, true), eid);
    if (!rule) throw new BrokerError('EntityNotFound', `authorization rule '${keyName}' does not exist`);
    return rule;
  }

  async function remove(scopePath: string, keyName: string, eid?: string): Promise<void> {
    if (scopePath === '/' && keyName.toLowerCase() === ROOT_RULE.toLowerCase()) throw badRequest('keyName', `${ROOT_RULE} cannot be deleted`);
    await get(scopePath, keyName, eid);
    await deleteAuthRule(ctx, skOf(scopePath, keyName));
    forget(scopePath, keyName);
  }

  /** A4: one key at a time, so clients can move to the other key first. */
  async function regenerate(scopePath: string, keyName: string, { key }: RequestOf<'RegenerateKeyRequest'>, eid?: string): Promise<RuleRecord> {
    const rule = await get(scopePath, keyName, eid);
    const next = { ...rule, [key === 'primary' ? 'primaryKey' : 'secondaryKey']: generateKey(), updatedAt: ctx.clock.now() };
    await putAuthRule(ctx, next);
    forget(scopePath, keyName);
    return next;
  }

  async function list(scopePath: string, eid?: string): Promise<RuleRecord[]> {
    checkScope(scopePath, eid);
    return (await listAuthRules<RuleRecord>(ctx, authScopePrefix(scopePath))).filter((r) => ofIncarnation(r, eid));
  }

  /**
   * E4: an entity's rules go with it (its subscriptions' too, for a topic). Only rules no
   * live entity owns are removed, so a late cleanup cannot take the rules of an entity of
   * the same name made meanwhile; they open nothing from the deletion on anyway (A2).
   * Reads the rules' key names and owners only, never their keys: the reaper runs this too,
   * and its role may only list those attributes and delete in the keys table (A4).
   */
  async function removeScope(scopePath: string): Promise<void> {
    if (scopePath === '/') return;
    for (const prefix of [authScopePrefix(scopePath), `${scopePath}/`]) {
      for (const item of await listAuthRuleOwners(ctx, prefix)) {
        if (await isCurrent(item)) continue;
        await deleteAuthRule(ctx, item.sk);
      }
    }
    cache.clear();
  }

  /**
   * Rules a deployment made before the keys table kept them in the data table's key
   * partition: each is copied into the keys table (unless a rule of that name is there
   * already) and then deleted from the data table, so a redeploy keeps every key and no later
   * write of a key reaches the data table's stream. Idempotent; the bootstrap runs it before
   * the api's code that reads the keys table goes live. Answers how many were moved.
   */
  async function adoptLegacyRules(): Promise<number> {
    let moved = 0;
    for await (const page of legacyAuthRulePages(ctx)) {
      for (const item of page) {
        await adoptLegacyAuthRule(ctx, item);
        await deleteLegacyAuthRule(ctx, item.sk);
        moved++;
      }
    }
    if (moved > 0) cache.clear();
    return moved;
  }

  return { findRule, isCurrent, ensureRoot, put, get, remove, regenerate, list, removeScope, adoptLegacyRules };
}

export type RuleStore = ReturnType<typeof ruleStore>;

export const presentAuthRule = (r: AuthorizationRule & { createdAt?: number }) => ({
  keyName: r.keyName,
  // Only serialised: the list is not copied to shed its readonly.
  rights: r.rights as Right[],
  primaryKey: r.primaryKey,
  secondaryKey: r.secondaryKey,
});

export const scopeOf = (entityPath: string) => canonicalPath(entityPath) ?? '/';

/** A grant that reaches nothing: what an operation gets when no token was checked. */
export const NO_GRANT: Grant = { scope: [], rights: [] };
/** The root key's reach, for the broker's own calls and for tests. */
export const NAMESPACE_GRANT: Grant = { scope: [], rights: ['Manage', 'Send', 'Listen'] };

/**
 * B3, as Service Bus does: an operation that will put messages into an entity named in
 * its body (a forwarding target, a resubmit destination) needs Send on that entity as well,
 * with the same token. Checked before the entity is looked up, so a target out of the
 * token's reach is a 403 whether it exists or not. `candidates` are every entity the name
 * may lead to (see `forwardCandidates`): all must be reachable.
 */
export function requireSendOn(grant: Grant, candidates: readonly EntityRef[], field: string): void {
  for (const target of candidates) {
    if (!grantAllows(grant, entityPathKey(target), 'Send')) {
      throw new BrokerError('Forbidden', `${field}: the token does not grant Send on the entity it names`, { field });
    }
  }
}
