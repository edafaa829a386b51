/**
 * Operators on Service Bus values. The documentation says operators "follow C# implicit
 * conversion semantics whenever possible"; concretely (SQLFilter syntax, Considerations):
 *
 * - Int64 op Int64 stays Int64: wraps on overflow like unchecked C#, `/` truncates, `/` and
 *   `%` by zero fail. Int64 with Double promotes to Double (division by 0.0 gives Infinity).
 * - `+` on two strings concatenates (C# string +). Any other operator on strings, and any
 *   arithmetic on booleans or on mixed string/number operands, fails: C# has no such
 *   operator. We do not copy C#'s `string + object` (which would format the number the
 *   .NET way): `'abc' + 1` is an evaluation error.
 * - `=` and `<>` need both sides of one kind (numbers, strings, booleans); `<` `<=` `>`
 *   `>=` work on numbers only (C# has no ordering operators on string or bool). A kind
 *   mismatch such as `'1' = 1` fails rather than being false, as Service Bus does.
 * - Unknown (a missing property, or NULL) in any operand makes the result unknown.
 *
 * Failures are FilterEvaluationError; the broker then applies F4.
 */
import type { ArithOp, CompareOp, Value } from './ast.js';
import { FilterEvaluationError } from './errors.js';

/** SQL's third truth value is `null`. */
export type Truth = boolean | null;

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export function typeName(v: Value): string {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'Int64';
  if (typeof v === 'number') return 'Double';
  return typeof v === 'string' ? 'String' : 'Boolean';
}

function isNumeric(v: Value): v is bigint | number {
  return typeof v === 'bigint' || typeof v === 'number';
}

function mismatch(op: string, a: Value, b: Value): FilterEvaluationError {
  return new FilterEvaluationError(`Operator '${op}' cannot be applied to operands of type ${typeName(a)} and ${typeName(b)}`);
}

export function arith(op: ArithOp, a: Value, b: Value): Value {
  if (a === null || b === null) return null;
  if (typeof a === 'bigint' && typeof b === 'bigint') return int64Arith(op, a, b);
  if (isNumeric(a) && isNumeric(b)) return doubleArith(op, Number(a), Number(b));
  if (op === '+' && typeof a === 'string' && typeof b === 'string') return concat(a, b);
  throw mismatch(op, a, b);
}

/**
 * Longest string an expression may build. An action of 32 statements like
 * `SET a = a + a + a + a` grows a property 4^32-fold: without a cap one rule could exhaust a
 * Lambda's memory. A legitimate result is far smaller (application properties are limited to
 * 64 KB, S5), and anything between that and this cap still reaches the broker's own
 * size check, which dead-letters with HeaderSizeExceeded.
 */
export const MAX_STRING_LENGTH = 1024 * 1024;

function concat(a: string, b: string): string {
  if (a.length + b.length > MAX_STRING_LENGTH) {
    throw new FilterEvaluationError(`String result longer than ${MAX_STRING_LENGTH} characters`);
  }
  return a + b;
}

function int64Arith(op: ArithOp, a: bigint, b: bigint): bigint {
  switch (op) {
    case '+':
      return BigInt.asIntN(64, a + b);
    case '-':
      return BigInt.asIntN(64, a - b);
    case '*':
      return BigInt.asIntN(64, a * b);
    case '/':
    case '%':
      if (b === 0n) throw new FilterEvaluationError('Attempted to divide by zero');
      // .NET throws OverflowException for both Int64.MinValue / -1 and Int64.MinValue % -1.
      if (a === INT64_MIN && b === -1n) {
        throw new FilterEvaluationError(`Arithmetic operation '${op}' resulted in an overflow`);
      }
      return op === '/' ? a / b : a % b;
  }
}

function doubleArith(op: ArithOp, a: number, b: number): number {
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      return a / b;
    case '%':
      return a % b;
  }
}

export function negate(op: 'neg' | 'pos', v: Value): Value {
  if (v === null) return null;
  if (typeof v === 'bigint') return op === 'neg' ? BigInt.asIntN(64, -v) : v;
  if (typeof v === 'number') return op === 'neg' ? -v : v;
  throw new FilterEvaluationError(`Operator '${op === 'neg' ? '-' : '+'}' cannot be applied to an operand of type ${typeName(v)}`);
}

export function compare(op: CompareOp, a: Value, b: Value): Truth {
  if (a === null || b === null) return null;
  if (isNumeric(a) && isNumeric(b)) {
    // Int64 against Double compares as Double, as C# promotes.
    const [x, y] = typeof a === 'bigint' && typeof b === 'bigint' ? [a, b] : [Number(a), Number(b)];
    switch (op) {
      case '=':
        return x === y;
      case '<>':
        return x !== y;
      case '<':
        return x < y;
      case '<=':
        return x <= y;
      case '>':
        return x > y;
      case '>=':
        return x >= y;
    }
  }
  const sameKind = (typeof a === 'string' && typeof b === 'string') || (typeof a === 'boolean' && typeof b === 'boolean');
  if (sameKind && op === '=') return a === b;
  if (sameKind && op === '<>') return a !== b;
  throw mismatch(op, a, b);
}

export function not(t: Truth): Truth {
  return t === null ? null : !t;
}

export function truthOf(v: Value): Truth {
  if (v === null || typeof v === 'boolean') return v;
  throw new FilterEvaluationError(`Expected a Boolean condition but found a value of type ${typeName(v)}`);
}
