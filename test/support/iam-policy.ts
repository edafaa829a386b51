/**
 * Just enough of IAM policy evaluation to ask "may this role make this DynamoDB request?"
 * of a synthesized template: an explicit Deny wins, otherwise some Allow must match
 * action, resource and every condition. Operators and condition keys it does not know make
 * it throw rather than guess, so a new kind of statement cannot pass by accident.
 */
import type { DynamoCall } from './dynamo-recorder.js';

export interface Statement {
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, string | string[]>>;
}

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** The statements of every policy attached to the role `roleId` (logical id). */
export function roleStatements(template: { Resources: Resources }, roleId: string): Statement[] {
  return Object.values(template.Resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => JSON.stringify(r.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/**
 * The tables a check knows: logical id in the template → the table's name in the recorded
 * calls. A string is one table whose calls name no table (or any).
 */
export type Tables = string | Record<string, string>;

const tableMap = (tables: Tables): Record<string, string> => (typeof tables === 'string' ? { [tables]: '' } : tables);

/** Resolves the intrinsic functions ARNs are made of, with a known table's ARN as `arn:table:<name>`. */
function resolveArn(value: unknown, tables: Record<string, string>): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, unknown>;
  if (v['Fn::GetAtt']) {
    const [id, attribute] = v['Fn::GetAtt'] as [string, string];
    return id in tables && attribute === 'Arn' ? `arn:table:${tables[id]}` : `arn:${id}.${attribute}`;
  }
  if (v['Fn::Join']) {
    const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveArn(p, tables)).join(separator);
  }
  return JSON.stringify(value);
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
const list = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

function contextValues(call: DynamoCall, key: string): string[] | undefined {
  switch (key) {
    case 'dynamodb:LeadingKeys':
      return call.leadingKeys;
    case 'dynamodb:Attributes':
      return call.attributes;
    case 'dynamodb:Select':
      return call.select === undefined ? undefined : [call.select];
    case 'dynamodb:ReturnValues':
      return call.returnValues === undefined ? undefined : [call.returnValues];
    default:
      throw new Error(`iam-policy: condition key ${key} is not modelled`);
  }
}

/** One operator over one key, as IAM evaluates it (absent keys included). */
function conditionHolds(operator: string, key: string, expected: string[], call: DynamoCall): boolean {
  const actual = contextValues(call, key);
  const equals = (a: string) => expected.includes(a);
  switch (operator) {
    case 'StringEquals':
      return actual !== undefined && actual.some(equals);
    case 'StringEqualsIfExists':
      return actual === undefined || actual.some(equals);
    case 'StringNotEquals':
      // Negated operators match when the key is absent.
      return actual === undefined || !actual.some(equals);
    case 'ForAnyValue:StringEquals':
      return actual !== undefined && actual.some(equals);
    case 'ForAnyValue:StringNotEquals':
      return actual !== undefined && actual.some((a) => !equals(a));
    case 'ForAllValues:StringEquals':
      return actual === undefined || actual.every(equals);
    default:
      throw new Error(`iam-policy: condition operator ${operator} is not modelled`);
  }
}

function matches(statement: Statement, call: DynamoCall, tables: Record<string, string>): boolean {
  if (!list(statement.Action).some((a) => glob(a).test(call.action))) return false;
  const single = Object.keys(tables).length === 1 && Object.values(tables)[0] === '';
  const table = `arn:table:${single ? '' : (call.table ?? '?')}`;
  const resource = call.resource === 'table' ? table : `${table}/${call.resource}`;
  if (!list(statement.Resource).some((r) => glob(resolveArn(r, tables)).test(resource))) return false;
  return Object.entries(statement.Condition ?? {}).every(([operator, keys]) =>
    Object.entries(keys).every(([key, expected]) => conditionHolds(operator, key, list(expected), call)),
  );
}

/** Whether `statements` allow `call` on the tables `tables` (see Tables). */
export function allows(statements: Statement[], call: DynamoCall, tables: Tables): boolean {
  const known = tableMap(tables);
  if (statements.some((s) => s.Effect === 'Deny' && matches(s, call, known))) return false;
  return statements.some((s) => s.Effect === 'Allow' && matches(s, call, known));
}
