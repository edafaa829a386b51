/**
 * The one definition of Sluice's DynamoDB table. The CDK construct, the local runtime and
 * the tests all build their table from this object, so they cannot drift apart.
 *
 * Single-table design (see keys.ts for the key formats):
 * - base table `pk`/`sk`: entities, messages (by sequence number), counters, tombstones;
 * - `ready` index: messages a receive may take, ordered by the time they become visible
 *   (enqueue, schedule or lock expiry). Locked messages sort past `now` and are never
 *   read by a receive, however many pile up. Sparse: deferred messages are not in it.
 * - `due` index: the sweeper's and reaper's agenda (expiry, last-delivery lock expiry,
 *   scheduled activation, idle deadlines), sparse and keyed by the instant work is due,
 *   so an idle deployment costs a handful of empty queries a minute.
 */
export const tableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  streamView: 'NEW_AND_OLD_IMAGES',
  indexes: {
    ready: {
      name: 'ready',
      partitionKey: 'rpk',
      sortKey: 'rsk',
      // Just enough for a receive to skip expired or over-delivered messages without
      // reading the item; everything else comes back from the conditional lock update.
      projectedAttributes: ['expiresAt', 'deliveryCount', 'lockedUntil', 'state'],
    },
    due: {
      name: 'due',
      partitionKey: 'dpk',
      sortKey: 'dsk',
      projectedAttributes: [] as string[],
    },
  },
} as const;

/** Key attribute types, for CreateTable and the CDK construct. */
export const attributeTypes: Record<string, 'S' | 'N'> = {
  pk: 'S',
  sk: 'S',
  rpk: 'S',
  rsk: 'S',
  dpk: 'S',
  dsk: 'N',
};

/** CreateTable input for DynamoDB Local and the tests (CDK builds its own from the same data). */
export function createTableInput(tableName: string) {
  const t = tableDefinition;
  const gsi = Object.values(t.indexes).map((i) => ({
    IndexName: i.name,
    KeySchema: [
      { AttributeName: i.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: i.sortKey, KeyType: 'RANGE' as const },
    ],
    Projection:
      i.projectedAttributes.length > 0
        ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...i.projectedAttributes] }
        : { ProjectionType: 'KEYS_ONLY' as const },
  }));
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: Object.entries(attributeTypes).map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    })),
    KeySchema: [
      { AttributeName: t.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: t.sortKey, KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: gsi,
    StreamSpecification: { StreamEnabled: true, StreamViewType: t.streamView },
  };
}

/**
 * The one definition of the keys table: the authorization rules and their keys (A2), apart
 * from the data table because that table's stream carries every item's images to its
 * readers for 24 hours; this one has no stream, no index and no TTL. Only the functions that
 * check or manage keys (api, notify, bootstrap, and the reaper listing a deleted entity's
 * rules) are granted it. Items keep the key layout they had in the data table (keys.ts).
 */
export const keysTableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
} as const;

/** CreateTable input of the keys table, for DynamoDB Local and the tests. */
export function createKeysTableInput(tableName: string) {
  const t = keysTableDefinition;
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: [t.partitionKey, t.sortKey].map((AttributeName) => ({ AttributeName, AttributeType: 'S' as const })),
    KeySchema: [
      { AttributeName: t.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: t.sortKey, KeyType: 'RANGE' as const },
    ],
  };
}
