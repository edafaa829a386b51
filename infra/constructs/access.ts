import * as iam from 'aws-cdk-lib/aws-iam';
import type { SluiceTable } from './table.js';

/**
 * What each function may do to the table. Exact actions, never `dynamodb:*`.
 *
 * Transactions have no IAM action of their own: each part of a TransactWriteItems or
 * TransactGetItems call is authorized as the matching PutItem, UpdateItem, DeleteItem or
 * GetItem, and a ConditionCheck part as ConditionCheckItem. So listing those covers the
 * broker's crash-safe moves.
 */
export interface TableAccess {
  /** Item-level actions, granted on the table only (they have no meaning on an index). */
  itemActions: readonly string[];
  /** Whether the function queries the table and its indexes. */
  query: boolean;
}

const writes = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
] as const;

export const tableAccess = {
  /** Every broker operation: sends, receives, settlements, management. */
  api: { itemActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', ...writes], query: true },
  /** Counts, forwarding and dead-lettering of TTL removals; reads destinations as the API does. */
  stream: { itemActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', ...writes], query: true },
  /** Sweeper and reaper: walk the `due` index, then move or delete what is due. */
  jobs: { itemActions: ['dynamodb:GetItem', ...writes], query: true },
  /**
   * Waiting consumers (#14): subscribe (auth rules, the connection, watch items), disconnect
   * (read the connection, delete its items), hints (query an entity's watchers, drop gone ones).
   */
  notify: { itemActions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'], query: true },
  /** Deploy-time root key: read the RootManageSharedAccessKey rule, write it when absent. */
  bootstrap: { itemActions: ['dynamodb:GetItem', 'dynamodb:PutItem'], query: false },
} satisfies Record<string, TableAccess>;

/**
 * Grants `access` on the table to `grantee`: item actions on the table ARN, Query on the
 * table and on each index by name (no `index/*`). Stream reads are granted by the event
 * source mapping, not here.
 */
export function grantTableAccess(grantee: iam.IGrantable, table: SluiceTable, access: TableAccess): void {
  iam.Grant.addToPrincipal({
    grantee,
    actions: [...access.itemActions],
    resourceArns: [table.table.tableArn],
  });
  if (access.query) {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:Query'],
      resourceArns: [table.table.tableArn, ...table.indexArns],
    });
  }
}
