/** SQL rule actions (SET, REMOVE) to a function from message view to new message view. */
import type { PropNode, StatementNode } from './ast.js';
import { FilterEvaluationError, FilterSyntaxError } from './errors.js';
import { compileExpr, fieldOf } from './expr.js';
import type { FilterMessage } from './message.js';
import { isSettable, resolveKey, toProperty, type SettableField } from './properties.js';
import { typeName } from './values.js';

type Step = (work: FilterMessage) => void;

/** Service Bus quota: "Maximum number of expressions per rule action: 32". */
export const MAX_ACTION_STATEMENTS = 32;

/**
 * Statements run in order on one working copy, so a later one sees what an earlier one set
 * (`SET a = 1; SET b = a + 1` gives b = 2).
 */
export function compileStatements(nodes: StatementNode[]): (msg: FilterMessage) => FilterMessage {
  const extra = nodes[MAX_ACTION_STATEMENTS];
  if (extra !== undefined) {
    throw new FilterSyntaxError(`An action may have at most ${MAX_ACTION_STATEMENTS} statements`, extra.loc);
  }
  const steps = nodes.map(compileStatement);
  return (msg) => {
    const work: FilterMessage = {
      system: { ...msg.system },
      // No prototype, so a property called "__proto__" is just a property.
      properties: Object.assign(Object.create(null) as FilterMessage['properties'], msg.properties),
    };
    for (const step of steps) step(work);
    return {
      system: work.system,
      properties: Object.fromEntries(Object.entries(work.properties)),
    };
  };
}

function compileStatement(node: StatementNode): Step {
  const { target } = node;
  const field = target.scope === 'sys' ? settableField(target) : undefined;
  if (node.kind === 'remove') {
    if (field !== undefined) return (work) => void delete work.system[field];
    return (work) => {
      const key = resolveKey(work.properties, target.name);
      if (key !== undefined) delete work.properties[key];
    };
  }
  const value = compileExpr(node.value);
  if (field !== undefined) {
    return (work) => {
      const v = value(work);
      if (v === null) delete work.system[field];
      else if (typeof v === 'string') work.system[field] = v;
      else {
        throw new FilterEvaluationError(`Cannot assign a value of type ${typeName(v)} to sys.${target.name}, which is a String`);
      }
    };
  }
  return (work) => {
    const stored = toProperty(value(work), target.name);
    // SET on an existing name keeps that property's spelling (names are case-insensitive).
    work.properties[resolveKey(work.properties, target.name) ?? target.name] = stored;
  };
}

function settableField(target: PropNode): SettableField {
  const field = fieldOf(target);
  if (!isSettable(field)) {
    // Refused at creation, like an unknown system property, rather than per message.
    throw new FilterSyntaxError(`System property 'sys.${target.name}' cannot be changed by a rule action`, target.loc);
  }
  return field;
}
