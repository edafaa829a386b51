/**
 * Service Bus rule filters and actions (F1, F4): SQL filters, correlation filters,
 * true/false filters, and SQL rule actions. Pure: no I/O, no clock; the broker compiles a
 * rule when it is created (refusing bad ones with FilterSyntaxError) and evaluates it for
 * each message sent to the topic.
 */
import { compileStatements } from './action.js';
import { compileCondition } from './condition.js';
import { correlationMatcher } from './correlation.js';
import { FilterEvaluationError } from './errors.js';
import type { FilterMessage } from './message.js';
import { parseAction, parseFilter } from './parser.js';
import { bindParameters } from './parameters.js';
import type { ActionSpec, FilterSpec } from './spec.js';

export { FilterEvaluationError, FilterSyntaxError, type SourcePosition } from './errors.js';
export type { FilterMessage, PropertyValue, SystemProperties } from './message.js';
export { MAX_SQL_LENGTH } from './parser.js';
export { PARAMETER_NAME, type ParameterValue } from './parameters.js';
export { MAX_ACTION_STATEMENTS } from './action.js';
export { actionSpecSchema, correlationFilterSchema, filterSpecSchema, type ActionSpec, type CorrelationFilterSpec, type FilterSpec } from './spec.js';

export interface CompiledFilter {
  readonly kind: 'sql' | 'correlation' | 'true' | 'false';
  /**
   * True when the message matches. A SQL filter whose condition is unknown (e.g. it compares
   * a missing property) does not match. Throws FilterEvaluationError when evaluation fails.
   */
  evaluate(msg: FilterMessage): boolean;
}

export interface CompiledAction {
  /** A new message view with the statements applied; the input is left untouched. */
  apply(msg: FilterMessage): FilterMessage;
}

/** Throws FilterSyntaxError for SQL that Service Bus would refuse. */
export function compileFilter(spec: FilterSpec): CompiledFilter {
  if ('sql' in spec) {
    const condition = compileCondition(parseFilter(bindParameters(spec.sql, spec.parameters)));
    return { kind: 'sql', evaluate: (msg) => condition(msg) === true };
  }
  if ('correlation' in spec) {
    return { kind: 'correlation', evaluate: correlationMatcher(spec.correlation) };
  }
  if ('true' in spec) return { kind: 'true', evaluate: () => true };
  return { kind: 'false', evaluate: () => false };
}

/** Throws FilterSyntaxError for SQL that Service Bus would refuse. */
export function compileAction(spec: ActionSpec): CompiledAction {
  return { apply: compileStatements(parseAction(bindParameters(spec.sql, spec.parameters))) };
}

export type FilterOutcome = { matched: true } | { matched: false; error?: FilterEvaluationError };

/**
 * F4 in one place: a failing filter is no match, and the error is handed back so the
 * broker can dead-letter the message when the subscription has
 * deadLetteringOnFilterEvaluationExceptions. Errors other than evaluation errors are bugs
 * and are not swallowed.
 */
export function evaluateFilter(filter: CompiledFilter, msg: FilterMessage): FilterOutcome {
  try {
    return filter.evaluate(msg) ? { matched: true } : { matched: false };
  } catch (err) {
    if (err instanceof FilterEvaluationError) return { matched: false, error: err };
    throw err;
  }
}
