/** Filter rule items (F1): how a subscription's filter rule is stored, beside its key (ruleKey). */
import type { ActionSpec, FilterSpec } from '../filters/index.js';
import { ruleKey, type Key } from '../store/keys.js';

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
