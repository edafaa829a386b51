import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { AUTH_PK, ruleListingAttributes } from '../../lib/store/keys.js';
import type { SluiceTable } from './table.js';

/**
 * What each function may do to the two tables. Exact actions, never `dynamodb:*`, and only
 * Allow statements: what is not granted is refused.
 *
 * Transactions have no IAM action of their own: each part of a TransactWriteItems or
 * TransactGetItems call is authorized as the matching PutItem, UpdateItem, DeleteItem or
 * GetItem, and a ConditionCheck part as ConditionCheckItem. So listing those covers the
 * broker's crash-safe moves.
 */
export interface TableAccess {
  /** Item-level actions on the data table (they have no meaning on an index). */
  itemActions: readonly string[];
  /** Query on the data table and each of its indexes (true), on the table alone ('table'), or none. */
  query: boolean | 'table';
  /**
   * Only in the data table's `auth` partition, where deployments before the keys table kept
   * the rules: the bootstrap moves them out (lib/broker/authorization.ts `adoptLegacyRules`).
   */
  legacyKeysOnly?: boolean;
  /**
   * The keys table (the authorization rules and their keys, A2): `manage` (the api, which
   * checks and manages rules), `read` (notify, which checks subscription tokens), `create`
   * (the bootstrap: read the root rule, write it when absent), `listAndDelete` (the reaper,
   * which removes a deleted entity's rules: their key attributes, and deletes that return
   * nothing), or `none`.
   */
  keys: 'manage' | 'read' | 'create' | 'listAndDelete' | 'none';
}

const writes = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'] as const;

export const tableAccess = {
  /** Every broker operation: sends, receives, settlements, management. */
  api: { itemActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', ...writes], query: true, keys: 'manage' },
  /** Counts, forwarding and dead-lettering of TTL removals; reads destinations as the API does. */
  stream: { itemActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', ...writes], query: true, keys: 'none' },
  /**
   * Sweeper: walks the `due` index, then moves or deletes what is due. BatchGetItem: entity
   * counts (the size of a forwarding target).
   */
  sweeper: { itemActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', ...writes], query: true, keys: 'none' },
  /**
   * Reaper: walks the idle agenda and deletes idle entities with their messages and rules. It
   * reads no counts (scheduled messages hold an entity through its `scheduledUntil`, I2).
   */
  reaper: { itemActions: ['dynamodb:GetItem', ...writes], query: true, keys: 'listAndDelete' },
  /**
   * Waiting consumers (H1): subscribe (the token's rule, the connection, watch items), disconnect
   * (read the connection, delete its items), hints (query an entity's watchers, drop gone ones).
   */
  notify: {
    itemActions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'],
    query: true,
    keys: 'read',
  },
  /** Deploy-time root key; and rules an older deployment left in the data table, moved out. */
  bootstrap: { itemActions: ['dynamodb:DeleteItem'], query: 'table', legacyKeysOnly: true, keys: 'create' },
} satisfies Record<string, TableAccess>;

const keysActions: Record<TableAccess['keys'], string[]> = {
  manage: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
  read: ['dynamodb:GetItem'],
  create: ['dynamodb:GetItem', 'dynamodb:PutItem'],
  listAndDelete: [],
  none: [],
};

/**
 * Grants `access` to `fn`: item actions on the data table's ARN, Query on the table and on
 * each index by name (no `index/*`), and its share of the keys table, whose name it is told
 * (KEYS_TABLE_NAME) only when it has one. Stream reads are granted by the event source
 * mapping, not here.
 */
export function grantTableAccess(fn: lambda.Function, table: SluiceTable, access: TableAccess): void {
  const tableArn = table.table.tableArn;
  const legacy = access.legacyKeysOnly ? { conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [AUTH_PK] } } } : {};
  iam.Grant.addToPrincipal({ grantee: fn, actions: [...access.itemActions], resourceArns: [tableArn], ...legacy });
  if (access.query) {
    iam.Grant.addToPrincipal({
      grantee: fn,
      actions: ['dynamodb:Query'],
      resourceArns: access.query === 'table' ? [tableArn] : [tableArn, ...table.indexArns],
      ...legacy,
    });
  }
  if (access.keys === 'none') return;
  const keysArn = table.keysTable.tableArn;
  fn.addEnvironment('KEYS_TABLE_NAME', table.keysTable.tableName);
  if (access.keys === 'listAndDelete') {
    // Rules' names and owners, never their keys: a query must name the listing attributes
    // (an absent Select means ALL_ATTRIBUTES), and a delete may not return what it deleted.
    iam.Grant.addToPrincipal({
      grantee: fn,
      actions: ['dynamodb:Query'],
      resourceArns: [keysArn],
      conditions: {
        StringEquals: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' },
        'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...ruleListingAttributes] },
      },
    });
    iam.Grant.addToPrincipal({
      grantee: fn,
      actions: ['dynamodb:DeleteItem'],
      resourceArns: [keysArn],
      conditions: { StringEqualsIfExists: { 'dynamodb:ReturnValues': 'NONE' } },
    });
    return;
  }
  iam.Grant.addToPrincipal({ grantee: fn, actions: keysActions[access.keys], resourceArns: [keysArn] });
}
