/**
 * Every item one Query yields, page after page, or the pages one at a time. A plain loop over `send` rather than the
 * SDK's `paginateQuery`, which insists on a real DynamoDBDocumentClient instance and so would
 * refuse the wrapped and faulty clients the tests inject.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';

type QueryInput = Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>;

/** The pages of one Query as they come; a caller that has enough stops reading (and querying). */
/** Items come typed as the caller says the key condition selects them (`T`). */
export async function* queryPages<T = Record<string, unknown>>(deps: Pick<Deps, 'db' | 'tableName'>, input: QueryInput): AsyncGenerator<T[]> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.db.send(new QueryCommand({ ...input, TableName: deps.tableName, ExclusiveStartKey: start }));
    yield (page.Items ?? []) as T[];
    start = page.LastEvaluatedKey;
  } while (start);
}

export async function queryAll<T = Record<string, unknown>>(deps: Pick<Deps, 'db' | 'tableName'>, input: QueryInput): Promise<T[]> {
  const items: T[] = [];
  for await (const page of queryPages<T>(deps, input)) items.push(...page);
  return items;
}
