/**
 * Authorization rule items (A2, A4): the keys table's `auth` partition, one item per rule
 * (keys.ts `authRuleKey`: `<scope>|<key name>`). Only the api, notify and the bootstrap may
 * read a rule's keys; the reaper may list the attributes of `ruleListingAttributes` and
 * delete (infra/constructs/access.ts, checked call by call in test/infra/iam-grants.test.ts),
 * so each operation's projection is part of its contract. Deployments from before the keys
 * table kept the same items in the data table; the `legacy…` operations move them.
 */
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { keysTableOf, type Deps } from '../deps.js';
import { conditionally } from './outcomes.js';
import { AUTH_PK, authRuleKey, ruleListingAttributes } from './keys.js';
import { queryPages } from './query.js';

type Store = Pick<Deps, 'db' | 'tableName' | 'keysTableName'>;

/** A rule as stored: its key, scope, owning incarnation (none for the namespace), rights and two keys. */
export interface AuthRuleItem {
  pk: string;
  sk: string;
  keyName: string;
  scopePath: string;
  incarnation?: string;
  rights: readonly string[];
  primaryKey: string;
  secondaryKey: string;
  createdAt: number;
  updatedAt: number;
}

/** What `listAuthRuleOwners` reads of a rule: never its keys. */
export type AuthRuleListing = Pick<AuthRuleItem, 'pk' | 'sk' | 'scopePath' | 'incarnation'>;

// Named condition parts.
const ruleIsNew = 'attribute_not_exists(pk)';

/** Key: `authRuleKey(scopePath, keyName)` in the keys table; strongly consistent when `consistent`. The rule, or undefined. */
export async function readAuthRule<T extends AuthRuleItem = AuthRuleItem>(
  store: Store,
  scopePath: string,
  keyName: string,
  consistent = false,
): Promise<T | undefined> {
  const got = await store.db.send(new GetCommand({ TableName: keysTableOf(store), Key: authRuleKey(scopePath, keyName), ConsistentRead: consistent }));
  return got.Item as T | undefined;
}

/**
 * Key: the rule's own, in the keys table. Puts it; with `onlyIfNew`, condition `ruleIsNew`.
 * True when written; false when `onlyIfNew` and a rule of that key exists (another writer was first).
 */
export async function putAuthRule(store: Store, rule: AuthRuleItem, options: { onlyIfNew?: boolean } = {}): Promise<boolean> {
  try {
    await store.db.send(new PutCommand({ TableName: keysTableOf(store), Item: rule, ...(options.onlyIfNew ? { ConditionExpression: ruleIsNew } : {}) }));
    return true;
  } catch (e) {
    if (options.onlyIfNew && e instanceof Error && e.name === 'ConditionalCheckFailedException') return false;
    throw e;
  }
}

/** Key: `auth` / `sk` in the keys table. Deletes the rule; no condition, so repeating it is harmless. */
export async function deleteAuthRule(store: Store, sk: string): Promise<void> {
  await store.db.send(new DeleteCommand({ TableName: keysTableOf(store), Key: { pk: AUTH_PK, sk } }));
}

/** Key: `auth`, sort keys from `prefix`, in the keys table. One Query (its first page), every attribute: keys included. */
export async function listAuthRules<T extends AuthRuleItem = AuthRuleItem>(store: Store, prefix: string): Promise<T[]> {
  const out = await store.db.send(
    new QueryCommand({
      TableName: keysTableOf(store),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :scope)',
      ExpressionAttributeValues: { ':pk': AUTH_PK, ':scope': prefix },
    }),
  );
  return (out.Items ?? []) as T[];
}

/**
 * Key: `auth`, sort keys from `prefix`, in the keys table. One Query (its first page) of
 * `ruleListingAttributes` alone (Select SPECIFIC_ATTRIBUTES): what the reaper's role may read.
 */
export async function listAuthRuleOwners(store: Store, prefix: string): Promise<AuthRuleListing[]> {
  const out = await store.db.send(
    new QueryCommand({
      TableName: keysTableOf(store),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': AUTH_PK, ':p': prefix },
      Select: 'SPECIFIC_ATTRIBUTES',
      ProjectionExpression: ruleListingAttributes.join(', '),
    }),
  );
  return (out.Items ?? []) as AuthRuleListing[];
}

/** Key: `auth` in the data table (where older deployments kept rules). Its rules page by page, strongly consistent. */
export const legacyAuthRulePages = (store: Store): AsyncGenerator<AuthRuleItem[]> =>
  queryPages<AuthRuleItem>(store, { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': AUTH_PK }, ConsistentRead: true });

/**
 * Key: the rule's own, in the keys table. Condition: `ruleIsNew`, so a rule of that name made
 * there since is kept. Copies a legacy rule across: true when copied, false when one was there.
 */
export async function adoptLegacyAuthRule(store: Store, rule: AuthRuleItem): Promise<boolean> {
  return (await conditionally(store.db.send(new PutCommand({ TableName: keysTableOf(store), Item: rule, ConditionExpression: ruleIsNew })))) !== undefined;
}

/** Key: `auth` / `sk` in the data table. Deletes a legacy rule (after `adoptLegacyAuthRule`); no condition. */
export async function deleteLegacyAuthRule(store: Store, sk: string): Promise<void> {
  await store.db.send(new DeleteCommand({ TableName: store.tableName, Key: { pk: AUTH_PK, sk } }));
}
