import type { SourcePosition } from './ast.js';

export type { SourcePosition };

/**
 * A filter or action that cannot be accepted: bad syntax, an unknown system property, a
 * system property an action may not change, a constant out of range, a text too long.
 * Thrown at compile time so a rule is refused when it is created (F1, B2).
 */
export class FilterSyntaxError extends Error {
  override readonly name = 'FilterSyntaxError';

  constructor(
    /** The problem, without the position. */
    readonly problem: string,
    readonly position: SourcePosition,
  ) {
    super(`${problem} at line ${position.line}, column ${position.column}`);
  }
}

/**
 * A filter or action that failed on one message (type mismatch, division by zero, ...).
 * The broker treats it as "no match" or dead-letters the message (F4).
 */
export class FilterEvaluationError extends Error {
  override readonly name = 'FilterEvaluationError';
}

/**
 * The position of a character offset, for errors found without the parser's help. Counts
 * lines and columns as peggy does (only \n ends a line; columns in UTF-16 units), so all
 * positions agree.
 */
export function positionAt(text: string, offset: number): SourcePosition {
  const lines = text.slice(0, offset).split('\n');
  const last = lines[lines.length - 1] ?? '';
  return { offset, line: lines.length, column: last.length + 1 };
}
