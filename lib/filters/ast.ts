/**
 * Syntax tree built by the generated parser (sql.peggy). Plain data, so the grammar's
 * actions stay trivial and all meaning lives in expr.ts, condition.ts and action.ts.
 */

/** 1-based line and column, 0-based offset: the same shape peggy reports. */
export interface SourcePosition {
  offset: number;
  line: number;
  column: number;
}

/** null, boolean, string, 64-bit integer (bigint) or double (number): Service Bus's types. */
export type Value = null | boolean | string | bigint | number;

export interface PropNode {
  kind: 'prop';
  scope: 'sys' | 'user';
  name: string;
  /** Written with an explicit `sys.` / `user.` prefix. */
  explicit: boolean;
  loc: SourcePosition;
}

export type ExprNode =
  | { kind: 'lit'; value: Value; loc?: SourcePosition }
  | PropNode
  | { kind: 'neg' | 'pos'; operand: ExprNode }
  | { kind: 'arith'; op: ArithOp; left: ExprNode; right: ExprNode }
  | { kind: 'call'; name: 'newid' | 'property'; args: ExprNode[] };

export type ArithOp = '+' | '-' | '*' | '/' | '%';
/** `!=` arrives already normalised to `<>`. */
export type CompareOp = '=' | '<>' | '<' | '<=' | '>' | '>=';

export type PredNode =
  | { kind: 'or' | 'and'; left: PredNode; right: PredNode }
  | { kind: 'not'; operand: PredNode }
  | { kind: 'cmp'; op: CompareOp; operand: ExprNode; right: ExprNode }
  | { kind: 'isnull'; negated: boolean; operand: ExprNode }
  | { kind: 'in'; negated: boolean; operand: ExprNode; list: ExprNode[] }
  | {
      kind: 'like';
      negated: boolean;
      operand: ExprNode;
      pattern: ExprNode;
      escape: ExprNode | null;
      loc: SourcePosition;
    }
  | { kind: 'exists'; prop: PropNode }
  /** A bare property, function or boolean constant used as a condition. */
  | { kind: 'truth'; operand: ExprNode };

export type StatementNode = { kind: 'set'; target: PropNode; value: ExprNode; loc: SourcePosition } | { kind: 'remove'; target: PropNode; loc: SourcePosition };
