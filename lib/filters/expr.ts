/**
 * Expressions to closures. What can be known from the text alone (system property names,
 * integer ranges) is checked here, once, and reported as FilterSyntaxError with a position,
 * so a bad rule is refused at creation (F1) instead of failing on every message (F4).
 */
import { randomUUID } from 'node:crypto';
import type { ExprNode, PropNode, Value } from './ast.js';
import { FilterEvaluationError, FilterSyntaxError } from './errors.js';
import type { FilterMessage, SystemField } from './message.js';
import { readSystem, readUser, systemField } from './properties.js';
import { arith, INT64_MAX, INT64_MIN, negate, typeName } from './values.js';

export type Expr = (msg: FilterMessage) => Value;

export function fieldOf(prop: PropNode): SystemField {
  const field = systemField(prop.name);
  if (field === undefined) {
    // Service Bus refuses these too: "The specified property does not exist or is not allowed".
    throw new FilterSyntaxError(`Unknown system property 'sys.${prop.name}'`, prop.loc);
  }
  return field;
}

export function compileExpr(node: ExprNode): Expr {
  switch (node.kind) {
    case 'lit': {
      const { value } = node;
      if (typeof value === 'bigint' && (value < INT64_MIN || value > INT64_MAX)) {
        throw new FilterSyntaxError(`Integer constant ${value} is outside the 64-bit range`, node.loc ?? { offset: 0, line: 1, column: 1 });
      }
      return () => value;
    }
    case 'prop': {
      if (node.scope === 'user') {
        const { name } = node;
        return (msg) => readUser(msg, name);
      }
      const field = fieldOf(node);
      return (msg) => readSystem(msg, field);
    }
    case 'neg':
    case 'pos': {
      const operand = compileExpr(node.operand);
      const { kind } = node;
      return (msg) => negate(kind, operand(msg));
    }
    case 'arith': {
      const left = compileExpr(node.left);
      const right = compileExpr(node.right);
      const { op } = node;
      return (msg) => arith(op, left(msg), right(msg));
    }
    case 'call': {
      if (node.name === 'newid') return () => randomUUID();
      const [argNode] = node.args;
      if (argNode === undefined) throw new Error('property() without its argument');
      const arg = compileExpr(argNode);
      return (msg) => readByName(msg, arg(msg));
    }
  }
}

/** property(name): the name is computed, so an unknown system name fails per message. */
function readByName(msg: FilterMessage, name: Value): Value {
  if (name === null) return null;
  if (typeof name !== 'string') {
    throw new FilterEvaluationError(`property() needs a String name, not ${typeName(name)}`);
  }
  const [, scope, rest = ''] = /^(sys|user)\.(.+)$/is.exec(name) ?? [];
  if (scope === undefined) return readUser(msg, name);
  if (scope.toLowerCase() === 'user') return readUser(msg, rest);
  const field = systemField(rest);
  if (field === undefined) throw new FilterEvaluationError(`Unknown system property '${name}'`);
  return readSystem(msg, field);
}
