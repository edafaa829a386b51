/**
 * Which copies a subscription gets of a message sent to its topic (F1, F4). Pure.
 * Service Bus semantics: rules without actions are OR'ed into one copy; each matching rule
 * with an action makes a copy of its own, stamped with the rule's name (`RuleName`).
 */
import { evaluateFilter, FilterEvaluationError, type CompiledAction, type CompiledFilter, type FilterMessage } from '../filters/index.js';

export interface CompiledRule {
  name: string;
  filter: CompiledFilter;
  action?: CompiledAction;
}

export type CopyPlan = { kind: 'copy'; message: FilterMessage } | { kind: 'filterError'; description: string };

export function planCopies(rules: CompiledRule[], message: FilterMessage, deadLetterOnFilterError: boolean): CopyPlan[] {
  const copies: CopyPlan[] = [];
  let plainMatch = false;
  for (const rule of [...rules].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const outcome = evaluateFilter(rule.filter, message);
    if (!outcome.matched) {
      // F4: an evaluation error is no match, unless the subscription dead-letters it.
      if (outcome.error && deadLetterOnFilterError) return [{ kind: 'filterError', description: `rule '${rule.name}': ${outcome.error.message}` }];
      continue;
    }
    if (!rule.action) {
      plainMatch = true;
      continue;
    }
    try {
      const changed = rule.action.apply(message);
      copies.push({ kind: 'copy', message: { ...changed, properties: { ...changed.properties, RuleName: rule.name } } });
    } catch (e) {
      if (!(e instanceof FilterEvaluationError)) throw e;
      if (deadLetterOnFilterError) return [{ kind: 'filterError', description: `rule '${rule.name}' action: ${e.message}` }];
    }
  }
  if (plainMatch) copies.unshift({ kind: 'copy', message });
  return copies;
}
