import * as iam from 'aws-cdk-lib/aws-iam';
import { AUTH_PK, ruleListingAttributes } from '../../lib/store/keys.js';
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
  /**
   * What the function may do in the key partition (`auth`, whose items hold the keys):
   * `all` (the api, which checks and manages keys), `only` (the bootstrap: nothing outside
   * it), `listAndDelete` (the reaper, which removes a deleted entity's rules: their sort keys
   * and deletes, never an attribute beyond the key, never a write), or `none`.
   */
  keys: 'all' | 'only' | 'listAndDelete' | 'none';
}

const writes = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'] as const;

export const tableAccess = {
  /** Every broker operation: sends, receives, settlements, management. */
  api: { itemActions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', ...writes], query: true, keys: 'all' },
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
   * Waiting consumers (H1): subscribe (auth rules, the connection, watch items), disconnect
   * (read the connection, delete its items), hints (query an entity's watchers, drop gone ones).
   */
  notify: {
    itemActions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'],
    query: true,
    keys: 'all',
  },
  /** Deploy-time root key: read the RootManageSharedAccessKey rule, write it when absent. */
  bootstrap: { itemActions: ['dynamodb:GetItem', 'dynamodb:PutItem'], query: false, keys: 'only' },
} satisfies Record<string, TableAccess>;

const inKeyPartition = { 'dynamodb:LeadingKeys': [AUTH_PK] };
const itemReturnValues = ['ALL_OLD', 'UPDATED_OLD', 'ALL_NEW', 'UPDATED_NEW'];

/**
 * Grants `access` on the table to `grantee`: item actions on the table ARN, Query on the
 * table and on each index by name (no `index/*`). Stream reads are granted by the event
 * source mapping, not here. The key partition is fenced with `dynamodb:LeadingKeys`: an
 * explicit Deny, which no later Allow can widen.
 */
export function grantTableAccess(grantee: iam.IGrantable, table: SluiceTable, access: TableAccess): void {
  const tableArn = table.table.tableArn;
  iam.Grant.addToPrincipal({
    grantee,
    actions: [...access.itemActions],
    resourceArns: [tableArn],
    ...(access.keys === 'only' ? { conditions: { 'ForAllValues:StringEquals': inKeyPartition } } : {}),
  });
  if (access.query) {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:Query'],
      resourceArns: [tableArn, ...table.indexArns],
    });
  }
  const deny = (actions: string[], conditions: Record<string, Record<string, unknown>>) =>
    grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ effect: iam.Effect.DENY, actions, resources: [tableArn], conditions }));
  const granted = [...access.itemActions, ...(access.query ? ['dynamodb:Query'] : [])];
  if (access.keys === 'none') {
    deny(granted, { 'ForAnyValue:StringEquals': inKeyPartition });
  }
  if (access.keys === 'listAndDelete') {
    // Everything but Query and DeleteItem, outright.
    deny(
      granted.filter((a) => a !== 'dynamodb:Query' && a !== 'dynamodb:DeleteItem'),
      { 'ForAnyValue:StringEquals': inKeyPartition },
    );
    // A delete that would return the item it deleted.
    deny(['dynamodb:DeleteItem'], { 'ForAnyValue:StringEquals': { ...inKeyPartition, 'dynamodb:ReturnValues': itemReturnValues } });
    // A query for anything but the key attributes: it must name them (an absent Select means
    // ALL_ATTRIBUTES, and a negated operator matches an absent key).
    deny(['dynamodb:Query'], { 'ForAnyValue:StringEquals': inKeyPartition, StringNotEquals: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } });
    deny(['dynamodb:Query'], {
      'ForAnyValue:StringEquals': inKeyPartition,
      'ForAnyValue:StringNotEquals': { 'dynamodb:Attributes': [...ruleListingAttributes] },
    });
  }
}
