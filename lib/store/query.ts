/**
 * Every item one Query yields, page after page. A plain loop over `send` rather than the
 * SDK's `paginateQuery`, which insists on a real DynamoDBDocumentClient instance and so would
 * refuse the wrapped and faulty clients the tests inject.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';

export async function queryAll(
  deps: Pick<Deps, 'db' | 'tableName'>,
  input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.db.send(new QueryCommand({ ...input, TableName: deps.tableName, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
