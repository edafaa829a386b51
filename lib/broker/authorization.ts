/**
 * Authorization rules (A2, A4): stored in the table under `auth`, looked up with a short
 * in-function cache so most requests cost no extra read. A regenerated key takes effect at
 * once in the function that regenerated it and within CACHE_MS everywhere else.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { canonicalPath, generateKey, RIGHTS, type AuthorizationRule, type Right } from '../auth/index.js';
import { BrokerError, badRequest } from '../errors.js';
import { validateName } from '../names.js';
import { parseOrThrow } from '../validation.js';
import type { BrokerContext } from './context.js';
import { AUTH_PK } from '../store/keys.js';

export const ROOT_RULE = 'RootManageSharedAccessKey';
export const CACHE_MS = 30_000;

interface RuleRecord extends AuthorizationRule {
  pk: string;
  sk: string;
  createdAt: number;
  updatedAt: number;
}

const skOf = (scopePath: string, keyName: string) => `${scopePath}|${keyName.toLowerCase()}`;

export function ruleStore(ctx: BrokerContext) {
  const cache = new Map<string, { rule: AuthorizationRule | undefined; at: number }>();

  async function read(scopePath: string, keyName: string, consistent = false): Promise<RuleRecord | undefined> {
    const got = await ctx.db.send(new GetCommand({ TableName: ctx.tableName, Key: { pk: AUTH_PK, sk: skOf(scopePath, keyName) }, ConsistentRead: consistent }));
    return got.Item as RuleRecord | undefined;
  }

  /** The FindRule of lib/auth: cached for CACHE_MS, misses included (a flood of bad names costs one read each per window). */
  async function findRule(keyName: string, scopePath: string): Promise<AuthorizationRule | undefined> {
    const key = skOf(scopePath, keyName);
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.rule;
    const rule = await read(scopePath, keyName);
    if (cache.size > 10_000) cache.clear();
    cache.set(key, { rule, at: Date.now() });
    return rule;
  }

  const forget = (scopePath: string, keyName: string) => cache.delete(skOf(scopePath, keyName));

  /** The namespace root rule always exists; `key` (SLUICE_ROOT_KEY) pins its primary key. */
  async function ensureRoot(key?: string): Promise<AuthorizationRule> {
    const existing = await read('/', ROOT_RULE, true);
    if (existing && (key === undefined || existing.primaryKey === key)) return existing;
    const now = ctx.clock.now();
    const rule: RuleRecord = {
      pk: AUTH_PK,
      sk: skOf('/', ROOT_RULE),
      keyName: ROOT_RULE,
      scopePath: '/',
      rights: ['Manage', 'Send', 'Listen'],
      primaryKey: key ?? generateKey(),
      secondaryKey: existing?.secondaryKey ?? generateKey(),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    try {
      await ctx.db.send(
        new PutCommand({ TableName: ctx.tableName, Item: rule, ...(existing || key ? {} : { ConditionExpression: 'attribute_not_exists(pk)' }) }),
      );
    } catch (e) {
      // Another instance created it first: use that one.
      if (e instanceof Error && e.name === 'ConditionalCheckFailedException') return (await read('/', ROOT_RULE, true))!;
      throw e;
    }
    forget('/', ROOT_RULE);
    return rule;
  }

  const rightsSchema = z.strictObject({
    rights: z.array(z.enum(RIGHTS as unknown as [Right, ...Right[]])).min(1).max(3).refine((r) => new Set(r).size === r.length, 'must not repeat a right'),
  });

  async function put(scopePath: string, keyName: string, body: unknown): Promise<{ created: boolean; rule: RuleRecord }> {
    validateName('authorizationRule', keyName, 'keyName');
    const { rights } = parseOrThrow(rightsSchema, body);
    if (scopePath === '/' && keyName.toLowerCase() === ROOT_RULE.toLowerCase()) {
      throw badRequest('keyName', `${ROOT_RULE} always has the Manage right and cannot be changed`);
    }
    const existing = await read(scopePath, keyName, true);
    const now = ctx.clock.now();
    const rule: RuleRecord = {
      pk: AUTH_PK,
      sk: skOf(scopePath, keyName),
      keyName: existing?.keyName ?? keyName,
      scopePath,
      rights: rights.includes('Manage') ? ['Manage', 'Send', 'Listen'] : rights,
      primaryKey: existing?.primaryKey ?? generateKey(),
      secondaryKey: existing?.secondaryKey ?? generateKey(),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: rule }));
    forget(scopePath, keyName);
    return { created: !existing, rule };
  }

  async function get(scopePath: string, keyName: string): Promise<RuleRecord> {
    const rule = await read(scopePath, keyName, true);
    if (!rule) throw new BrokerError('EntityNotFound', `authorization rule '${keyName}' does not exist`);
    return rule;
  }

  async function remove(scopePath: string, keyName: string): Promise<void> {
    if (scopePath === '/' && keyName.toLowerCase() === ROOT_RULE.toLowerCase()) throw badRequest('keyName', `${ROOT_RULE} cannot be deleted`);
    await get(scopePath, keyName);
    await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: { pk: AUTH_PK, sk: skOf(scopePath, keyName) } }));
    forget(scopePath, keyName);
  }

  /** A4: one key at a time, so clients can move to the other key first. */
  async function regenerate(scopePath: string, keyName: string, body: unknown): Promise<RuleRecord> {
    const { key } = parseOrThrow(z.strictObject({ key: z.enum(['primary', 'secondary']) }), body);
    const rule = await get(scopePath, keyName);
    const next = { ...rule, [key === 'primary' ? 'primaryKey' : 'secondaryKey']: generateKey(), updatedAt: ctx.clock.now() };
    await ctx.db.send(new PutCommand({ TableName: ctx.tableName, Item: next }));
    forget(scopePath, keyName);
    return next;
  }

  async function list(scopePath: string): Promise<RuleRecord[]> {
    const out = await ctx.db.send(
      new QueryCommand({
        TableName: ctx.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :scope)',
        ExpressionAttributeValues: { ':pk': AUTH_PK, ':scope': `${scopePath}|` },
      }),
    );
    return (out.Items ?? []) as RuleRecord[];
  }

  /**
   * E4: an entity's rules go with it, so a re-created entity of the same name starts without
   * them. Reads the rules' sort keys only, never their keys: the reaper runs this too, and its
   * role may only list and delete in the key partition (#10.5).
   */
  async function removeScope(scopePath: string): Promise<void> {
    for (const prefix of [`${scopePath}|`, `${scopePath}/`]) {
      const out = await ctx.db.send(
        new QueryCommand({
          TableName: ctx.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
          ExpressionAttributeValues: { ':pk': AUTH_PK, ':p': prefix },
          Select: 'SPECIFIC_ATTRIBUTES',
          ProjectionExpression: 'sk',
        }),
      );
      for (const item of out.Items ?? []) {
        await ctx.db.send(new DeleteCommand({ TableName: ctx.tableName, Key: { pk: AUTH_PK, sk: item.sk as string } }));
      }
    }
    cache.clear();
  }

  return { findRule, ensureRoot, put, get, remove, regenerate, list, removeScope };
}

export type RuleStore = ReturnType<typeof ruleStore>;

export const presentAuthRule = (r: AuthorizationRule & { createdAt?: number }) => ({
  keyName: r.keyName,
  rights: r.rights,
  primaryKey: r.primaryKey,
  secondaryKey: r.secondaryKey,
});

export const scopeOf = (entityPath: string) => canonicalPath(entityPath) ?? '/';
