/**
 * Conditions to closures, in SQL's three-valued logic: `null` is unknown, and only `true`
 * makes a filter match.
 */
import type { ExprNode, PredNode, SourcePosition, Value } from './ast.js';
import { FilterEvaluationError, FilterSyntaxError } from './errors.js';
import { compileExpr, fieldOf } from './expr.js';
import { compileLike, matchLike, type LikePattern } from './like.js';
import type { FilterMessage } from './message.js';
import { resolveKey } from './properties.js';
import { compare, not, truthOf, typeName, type Truth } from './values.js';

type Cond = (msg: FilterMessage) => Truth;

export function compileCondition(node: PredNode): Cond {
  switch (node.kind) {
    case 'or': {
      const left = compileCondition(node.left);
      const right = compileCondition(node.right);
      // Short-circuits like C# ||: a true left side means the right is never evaluated,
      // so it cannot raise an evaluation error either.
      return (msg) => {
        const l = left(msg);
        if (l === true) return true;
        const r = right(msg);
        if (r === true) return true;
        return l === false && r === false ? false : null;
      };
    }
    case 'and': {
      const left = compileCondition(node.left);
      const right = compileCondition(node.right);
      return (msg) => {
        const l = left(msg);
        if (l === false) return false;
        const r = right(msg);
        if (r === false) return false;
        return l === true && r === true ? true : null;
      };
    }
    case 'not': {
      const operand = compileCondition(node.operand);
      return (msg) => not(operand(msg));
    }
    case 'cmp': {
      const left = compileExpr(node.operand);
      const right = compileExpr(node.right);
      const { op } = node;
      return (msg) => compare(op, left(msg), right(msg));
    }
    case 'isnull': {
      // Both a missing property and one whose value is null are NULL (SQLFilter syntax).
      const operand = compileExpr(node.operand);
      const { negated } = node;
      return (msg) => (operand(msg) === null) !== negated;
    }
    case 'in':
      return compileIn(node.operand, node.list, node.negated);
    case 'like':
      return compileLikeNode(node);
    case 'exists': {
      const { prop } = node;
      if (prop.scope === 'user') return (msg) => resolveKey(msg.properties, prop.name) !== undefined;
      const field = fieldOf(prop);
      return (msg) => msg.system[field] !== undefined && msg.system[field] !== null;
    }
    case 'truth': {
      const operand = compileExpr(node.operand);
      return (msg) => truthOf(operand(msg));
    }
  }
}

/**
 * `x IN (a, b)` is `x = a OR x = b` with one difference the documentation spells out: only
 * an unknown left side makes the result unknown. A NULL in the list never matches, so
 * `x NOT IN ('a', NULL)` is true for x = 'b'. A kind mismatch fails as `=` does.
 */
function compileIn(operandNode: ExprNode, listNodes: ExprNode[], negated: boolean): Cond {
  const operand = compileExpr(operandNode);
  const list = listNodes.map(compileExpr);
  return (msg) => {
    const value = operand(msg);
    if (value === null) return null;
    let found = false;
    for (const item of list) {
      const candidate = item(msg);
      if (candidate !== null && compare('=', value, candidate) === true) {
        found = true;
        break;
      }
    }
    return found !== negated;
  };
}

function compileLikeNode(node: Extract<PredNode, { kind: 'like' }>): Cond {
  const operand = compileExpr(node.operand);
  const { negated } = node;
  const constant = constantPattern(node);
  if (constant !== undefined) {
    return (msg) => {
      const value = operand(msg);
      if (value === null) return null;
      return matchLike(requireString(value, 'LIKE'), constant) !== negated;
    };
  }
  const pattern = compileExpr(node.pattern);
  const escape = node.escape === null ? () => null : compileExpr(node.escape);
  return (msg) => {
    const value = operand(msg);
    const p = pattern(msg);
    const e = escape(msg);
    if (value === null || p === null || (node.escape !== null && e === null)) return null;
    const tokens = compileLike(requireString(p, 'the LIKE pattern'), e === null ? null : requireString(e, 'ESCAPE'));
    if (typeof tokens === 'string') throw new FilterEvaluationError(tokens);
    return matchLike(requireString(value, 'LIKE'), tokens) !== negated;
  };
}

/** A pattern written as string constants is checked once, with its position on failure. */
function constantPattern(node: Extract<PredNode, { kind: 'like' }>): LikePattern | undefined {
  const { pattern, escape } = node;
  if (pattern.kind !== 'lit' || typeof pattern.value !== 'string') return undefined;
  if (escape === null) return checkedPattern(pattern.value, null, pattern.loc ?? node.loc);
  if (escape.kind !== 'lit' || typeof escape.value !== 'string') return undefined;
  const blame = escape.value.length === 1 ? pattern.loc : escape.loc;
  return checkedPattern(pattern.value, escape.value, blame ?? node.loc);
}

function checkedPattern(pattern: string, escape: string | null, loc: SourcePosition): LikePattern {
  const tokens = compileLike(pattern, escape);
  if (typeof tokens === 'string') throw new FilterSyntaxError(tokens, loc);
  return tokens;
}

function requireString(v: Value, what: string): string {
  if (typeof v === 'string') return v;
  throw new FilterEvaluationError(`${what} needs a String operand, not ${typeName(v)}`);
}
