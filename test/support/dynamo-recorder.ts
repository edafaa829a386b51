/**
 * Records every DynamoDB request a client makes, as IAM sees it: the action each
 * request (or each part of a transaction) is authorized as, the resource (table or index),
 * and the request's condition keys (`dynamodb:LeadingKeys`, `dynamodb:Attributes`,
 * `dynamodb:Select`, `dynamodb:ReturnValues`). test/support/iam-policy.ts checks the
 * records against a role's policy in the synthesized template.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface DynamoCall {
  /** e.g. `dynamodb:GetItem`. */
  action: string;
  /** `table`, or `index/<name>`. */
  resource: string;
  /** The table's name (TableName, or the RequestItems key of a batch). */
  table?: string;
  leadingKeys: string[];
  attributes?: string[];
  select?: string;
  returnValues?: string;
}

type Input = Record<string, unknown>;
type AttrValue = unknown;

/** A plain value, or a marshalled `{ S: ... }` (the document client marshals before the client sees it). */
function plain(value: AttrValue): string {
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v.S === 'string') return v.S;
    if (typeof v.N === 'string') return v.N;
  }
  return String(value);
}

const pkOf = (item: unknown): string => plain((item as Record<string, AttrValue> | undefined)?.pk);

const tableOf = (input: Input) => (typeof input.TableName === 'string' ? { table: input.TableName } : {});

function itemCall(action: string, input: Input): DynamoCall {
  const key = (input.Key ?? input.Item) as Record<string, AttrValue>;
  return {
    action,
    resource: 'table',
    ...tableOf(input),
    leadingKeys: [pkOf(key)],
    ...(typeof input.ReturnValues === 'string' ? { returnValues: input.ReturnValues } : {}),
    ...projection(input),
  };
}

function projection(input: Input): Pick<DynamoCall, 'attributes' | 'select'> {
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const expression = input.ProjectionExpression as string | undefined;
  return {
    ...(expression
      ? {
          attributes: expression
            .split(',')
            .map((a) => a.trim())
            .map((a) => names[a] ?? a),
        }
      : {}),
    ...(typeof input.Select === 'string' ? { select: input.Select } : {}),
  };
}

/** The partition key value of a Query: the `name = :value` part of its key condition. */
function queryLeadingKey(input: Input): string {
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, AttrValue>;
  const condition = String(input.KeyConditionExpression ?? '');
  const match = /(#?\w+)\s*=\s*(:\w+)/.exec(condition);
  if (!match) throw new Error(`cannot read the partition key of the key condition ${condition}`);
  return plain(values[match[2]!]);
}

/** The IAM view of one request. */
export function callsOf(commandName: string, input: Input): DynamoCall[] {
  const operation = commandName.replace(/Command$/, '');
  switch (operation) {
    case 'GetItem':
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [itemCall(`dynamodb:${operation}`, input)];
    case 'Query':
      return [
        {
          action: 'dynamodb:Query',
          resource: typeof input.IndexName === 'string' ? `index/${input.IndexName}` : 'table',
          ...tableOf(input),
          leadingKeys: [queryLeadingKey(input)],
          ...projection(input),
        },
      ];
    case 'BatchGetItem': {
      const requests = Object.entries(input.RequestItems as Record<string, { Keys: unknown[] } & Input>);
      return requests.map(([table, r]) => ({ action: 'dynamodb:BatchGetItem', resource: 'table', table, leadingKeys: r.Keys.map(pkOf), ...projection(r) }));
    }
    case 'BatchWriteItem': {
      const requests = Object.entries(input.RequestItems as Record<string, { PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }[]>);
      return requests.map(([table, writes]) => ({
        action: 'dynamodb:BatchWriteItem',
        resource: 'table',
        table,
        leadingKeys: writes.map((w) => pkOf(w.PutRequest?.Item ?? w.DeleteRequest?.Key)),
      }));
    }
    // Transactions have no action of their own: each part is authorized as its single-item action.
    case 'TransactWriteItems': {
      const parts = input.TransactItems as Record<string, Input>[];
      const actionOf: Record<string, string> = {
        Put: 'dynamodb:PutItem',
        Update: 'dynamodb:UpdateItem',
        Delete: 'dynamodb:DeleteItem',
        ConditionCheck: 'dynamodb:ConditionCheckItem',
      };
      return parts.flatMap((part) => Object.entries(part).map(([kind, body]) => itemCall(actionOf[kind] ?? `unknown:${kind}`, body)));
    }
    case 'TransactGetItems':
      return (input.TransactItems as { Get: Input }[]).map((part) => itemCall('dynamodb:GetItem', part.Get));
    default:
      // Scan, DescribeTable, ...: recorded as is, so a grant check fails on anything unexpected.
      return [{ action: `dynamodb:${operation}`, resource: 'table', ...tableOf(input), leadingKeys: [] }];
  }
}

/** Adds a middleware to `client` that hands every request's IAM view to `record`. */
export function recordDynamoCalls(client: DynamoDBClient, record: (call: DynamoCall) => void): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      for (const call of callsOf(context.commandName ?? 'Unknown', args.input as Input)) record(call);
      return next(args);
    },
    // Serialize: after the document client has marshalled its input into the low-level shape.
    { step: 'serialize', priority: 'high', name: 'sluiceDynamoRecorder' },
  );
}

/** Calls by function, deduplicated. */
export class DynamoCallLog {
  readonly byFunction = new Map<string, Map<string, DynamoCall>>();

  recorder(fn: string): (call: DynamoCall) => void {
    return (call) => {
      const calls = this.byFunction.get(fn) ?? new Map<string, DynamoCall>();
      this.byFunction.set(fn, calls);
      calls.set(JSON.stringify(call), call);
    };
  }

  calls(fn: string): DynamoCall[] {
    return [...(this.byFunction.get(fn)?.values() ?? [])];
  }

  actions(fn: string): string[] {
    return [...new Set(this.calls(fn).map((c) => c.action))].sort();
  }
}
