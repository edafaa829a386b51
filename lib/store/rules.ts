/**
 * Filter rule items (F1): a subscription's rules, in its topic's partition under
 * `rule/<subscription>/<rule>` (keys.ts `ruleKey`). A new subscription's `$Default` rule is
 * written with it (entities.ts `createEntity`) and its rules go with it (`deleteEntityTree`);
 * topic fan-out reads them with the subscriptions (`readTopicPartition`).
 */
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import type { ActionSpec, FilterSpec } from '../filters/index.js';
import { ruleKey, type Key } from './keys.js';
import { queryAll } from './query.js';

type Store = Pick<Deps, 'db' | 'tableName'>;

export interface RuleItem extends Key {
  kind: 'rule';
  name: string;
  topic: string;
  subscription: string;
  /**
   * Stored as JSON text: DynamoDB's marshaller cannot write a map key named `__proto__`,
   * which a correlation filter's property may be (B2). Rules written before hold a map.
   */
  filter: FilterSpec | string;
  action?: ActionSpec;
  createdAt: number;
}

export const DEFAULT_RULE = '$Default';

/** A stored rule's filter spec, whichever form it was stored in. */
export const filterOf = (r: Pick<RuleItem, 'filter'>): FilterSpec => (typeof r.filter === 'string' ? (JSON.parse(r.filter) as FilterSpec) : r.filter);

export function defaultRuleItem(topic: string, subscription: string, now: number): RuleItem {
  return { ...ruleKey(topic, subscription, DEFAULT_RULE), kind: 'rule', name: DEFAULT_RULE, topic, subscription, filter: { true: {} }, createdAt: now };
}

/** Key: `ruleKey`. Reads the rule, strongly consistent when `consistent`; undefined when there is none. */
export async function getRule(store: Store, key: Key, consistent = false): Promise<RuleItem | undefined> {
  const got = await store.db.send(new GetCommand({ TableName: store.tableName, Key: key, ...(consistent ? { ConsistentRead: true } : {}) }));
  return got.Item as RuleItem | undefined;
}

/** Key: the rule's own. Puts it, replacing any rule of that name; no condition. */
export async function putRule(store: Store, rule: RuleItem): Promise<void> {
  await store.db.send(new PutCommand({ TableName: store.tableName, Item: rule }));
}

/** Key: `ruleKey`. Deletes the rule; no condition, so deleting a missing rule changes nothing. */
export async function deleteRule(store: Store, key: Key): Promise<void> {
  await store.db.send(new DeleteCommand({ TableName: store.tableName, Key: key }));
}

/** Key: the topic's partition, sort keys `rule/<subscription>/`. Every rule of one subscription, in name order. */
export const listSubscriptionRules = (store: Store, topic: string, subscription: string): Promise<RuleItem[]> => {
  const key = ruleKey(topic, subscription, '');
  return queryAll<RuleItem>(store, {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
    ExpressionAttributeValues: { ':pk': key.pk, ':p': key.sk },
  });
};
