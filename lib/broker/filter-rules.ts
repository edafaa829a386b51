/** Subscription filter rules (F1): stored filter and action specs, compiled when created and when used. */
import type { RequestOf } from '../requests/schemas.js';
import { BrokerError, badRequest } from '../errors.js';
import { compileAction, compileFilter, FilterSyntaxError, type ActionSpec, type FilterSpec } from '../filters/index.js';
import { validateName } from '../names.js';
import { ruleKey } from '../store/keys.js';
import {
  DEFAULT_RULE,
  deleteRule as deleteRuleItem,
  filterOf,
  getRule as getRuleItem,
  listSubscriptionRules,
  putRule as putRuleItem,
  type RuleItem,
} from '../store/rules.js';
import type { CompiledRule } from '../fate/fanout.js';
import type { BrokerContext } from './context.js';
import { requireEntity, touchEntity } from './entities.js';

export { DEFAULT_RULE, defaultRuleItem, filterOf, type RuleItem } from '../store/rules.js';

/** Refuses filter or action text that does not parse, with the position of the error (F1). */
function compileChecked(filter: FilterSpec, action: ActionSpec | undefined): CompiledRule & { name: string } {
  try {
    const compiledFilter = compileFilter(filter);
    const compiledAction = action ? compileAction(action) : undefined;
    return { name: '', filter: compiledFilter, ...(compiledAction ? { action: compiledAction } : {}) };
  } catch (e) {
    if (e instanceof FilterSyntaxError) {
      const field = e.message.includes('action') ? 'action.sql' : 'filter.sql';
      throw badRequest(action && !safeCompiles(() => compileAction(action)) ? 'action.sql' : field, e.message);
    }
    throw e;
  }
}

const safeCompiles = (f: () => unknown) => {
  try {
    f();
    return true;
  } catch {
    return false;
  }
};

function validateRuleName(name: string): string {
  if (name === DEFAULT_RULE) return name;
  return validateName('rule', name, 'ruleName');
}

export async function putRule(
  ctx: BrokerContext,
  topic: string,
  subscription: string,
  name: string,
  b: RequestOf<'RuleProperties'>,
): Promise<{ created: boolean; rule: RuleItem }> {
  validateRuleName(name);
  const filter = b.filter ?? { true: {} };
  const action = b.action ?? undefined;
  compileChecked(filter, action);
  const sub = await requireEntity(ctx, { kind: 'subscription', topic, name: subscription });
  const key = ruleKey(topic, subscription, name);
  const existing = await getRuleItem(ctx, key, true);
  const rule: RuleItem = {
    ...key,
    kind: 'rule',
    name,
    topic: sub.topic ?? topic,
    subscription: sub.name,
    filter: JSON.stringify(filter),
    ...(action ? { action } : {}),
    createdAt: existing?.createdAt ?? ctx.clock.now(),
  };
  await putRuleItem(ctx, rule);
  await touchEntity(ctx, sub, true); // I2: a new rule counts as use of the subscription
  return { created: !existing, rule };
}

export const presentRule = (r: RuleItem) => ({ name: r.name, filter: filterOf(r), action: r.action ?? null, createdAt: new Date(r.createdAt).toISOString() });

export async function getRule(ctx: BrokerContext, topic: string, subscription: string, name: string): Promise<RuleItem> {
  validateRuleName(name);
  await requireEntity(ctx, { kind: 'subscription', topic, name: subscription });
  const rule = await getRuleItem(ctx, ruleKey(topic, subscription, name));
  if (!rule) throw new BrokerError('EntityNotFound', `rule '${name}' does not exist`);
  return rule;
}

export async function deleteRule(ctx: BrokerContext, topic: string, subscription: string, name: string): Promise<void> {
  await getRule(ctx, topic, subscription, name);
  await deleteRuleItem(ctx, ruleKey(topic, subscription, name));
}

export async function listRules(ctx: BrokerContext, topic: string, subscription: string): Promise<{ items: ReturnType<typeof presentRule>[]; next: null }> {
  await requireEntity(ctx, { kind: 'subscription', topic, name: subscription });
  return { items: (await listSubscriptionRules(ctx, topic, subscription)).map(presentRule), next: null };
}

const compiledCache = new Map<string, CompiledRule>();

/** Compiled rules, cached by their text: a busy topic parses each rule once per instance. */
export function compiledRule(r: RuleItem): CompiledRule {
  const filter = filterOf(r);
  const cacheKey = JSON.stringify([filter, r.action ?? null]);
  let compiled = compiledCache.get(cacheKey);
  if (!compiled) {
    compiled = compileChecked(filter, r.action);
    if (compiledCache.size > 5000) compiledCache.clear();
    compiledCache.set(cacheKey, compiled);
  }
  return { ...compiled, name: r.name };
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { putRule, deleteRule, listRules };
