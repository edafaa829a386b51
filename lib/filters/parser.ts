import type { PredNode, StatementNode } from './ast.js';
import { FilterSyntaxError, positionAt } from './errors.js';
import { parse, SyntaxError as PeggySyntaxError } from './sql-parser.js';

/** Service Bus refuses longer filter and action texts (quota "Size of SQL filters or actions"). */
export const MAX_SQL_LENGTH = 1024;

export function parseFilter(sql: string): PredNode {
  return run(sql, 'Filter') as PredNode;
}

export function parseAction(sql: string): StatementNode[] {
  return run(sql, 'Action') as StatementNode[];
}

function run(sql: string, startRule: 'Filter' | 'Action'): unknown {
  if (sql.length > MAX_SQL_LENGTH) {
    throw new FilterSyntaxError(`The expression is ${sql.length} characters long; at most ${MAX_SQL_LENGTH} are allowed`, positionAt(sql, MAX_SQL_LENGTH));
  }
  try {
    return parse(sql, { startRule });
  } catch (err) {
    if (err instanceof PeggySyntaxError) {
      // peggy ends its messages with a full stop; ours go on with the position.
      throw new FilterSyntaxError(err.message.replace(/\.$/, ''), { ...err.location.start });
    }
    // The length limit keeps nesting to a few hundred levels, far from the stack limit; this
    // is a second line so that a hostile rule can only ever be refused, never crash a Lambda.
    if (err instanceof RangeError) {
      throw new FilterSyntaxError('The expression is nested too deeply', positionAt(sql, 0));
    }
    throw err;
  }
}
