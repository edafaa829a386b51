import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { attributeTypes, keysTableDefinition, tableDefinition } from '../../lib/store/table.js';
import type { TableCapacity } from '../config.js';

export interface SluiceTableProps {
  /**
   * Delete the table with the stack. Otherwise (the default) it is retained on stack
   * deletion and on replacement, though not when the create that made it rolls back.
   */
  destroyData: boolean;
  /** DynamoDB deletion protection (refuses a delete from anywhere, a rollback's included). */
  deletionProtection?: boolean;
  /** On-demand (the default) or provisioned with auto scaling, table and indexes alike. */
  capacity?: TableCapacity;
}

/**
 * Sluice's two DynamoDB tables, built from `lib/store/table.ts` so the deployed tables, the
 * local runtime's and the tests' cannot drift: the data table (keys, indexes, projections,
 * TTL attribute and stream view all from `tableDefinition`), and the keys table of the
 * authorization rules (`keysTableDefinition`: no stream, so no stream reader sees a key).
 */
export class SluiceTable extends Construct {
  readonly table: dynamodb.Table;
  readonly keysTable: dynamodb.Table;
  /**
   * One ARN per index, named exactly, so Query grants need no `index/*` wildcard.
   */
  readonly indexArns: string[];

  constructor(scope: Construct, id: string, props: SluiceTableProps) {
    super(scope, id);
    const def = tableDefinition;
    const capacity = props.capacity ?? { billing: 'onDemand' };
    const provisioned = capacity.billing === 'provisioned' ? capacity : undefined;

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: attribute(def.partitionKey),
      sortKey: attribute(def.sortKey),
      // Pay per request by default: an idle broker costs storage only. Provisioned capacity
      // bills every hour, used or not, and is cheaper only for a steady flow (README).
      ...(provisioned
        ? { billingMode: dynamodb.BillingMode.PROVISIONED, readCapacity: provisioned.readCapacity, writeCapacity: provisioned.writeCapacity }
        : { billingMode: dynamodb.BillingMode.PAY_PER_REQUEST }),
      // TTL is the garbage collector for expired items; the stream consumer sees its removals.
      timeToLiveAttribute: def.ttlAttribute,
      stream: dynamodb.StreamViewType[def.streamView],
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: removalPolicy(props.destroyData),
      deletionProtection: props.deletionProtection === true,
    });

    for (const index of Object.values(def.indexes)) {
      const included = [...index.projectedAttributes];
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        // Same rule as createTableInput: listed attributes mean INCLUDE, none means KEYS_ONLY.
        ...(included.length > 0
          ? { projectionType: dynamodb.ProjectionType.INCLUDE, nonKeyAttributes: included }
          : { projectionType: dynamodb.ProjectionType.KEYS_ONLY }),
        ...(provisioned ? { readCapacity: provisioned.readCapacity, writeCapacity: provisioned.writeCapacity } : {}),
      });
    }
    if (provisioned) this.autoScale(provisioned);

    // A handful of items read through each function's cache: on demand whatever the data
    // table's billing, as provisioned units would bill every hour for next to nothing.
    this.keysTable = new dynamodb.Table(this, 'Keys', {
      partitionKey: { name: keysTableDefinition.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: keysTableDefinition.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy: removalPolicy(props.destroyData),
      deletionProtection: props.deletionProtection === true,
    });

    this.indexArns = Object.values(def.indexes).map((i) => `${this.table.tableArn}/index/${i.name}`);
  }

  /**
   * Target tracking on reads and writes of the table and of every index: each index takes a
   * write for every message write it holds, so an index left behind would throttle the table.
   */
  private autoScale(c: Extract<TableCapacity, { billing: 'provisioned' }>) {
    const target = { targetUtilizationPercent: c.targetUtilization };
    const reads = { minCapacity: c.readCapacity, maxCapacity: c.maxReadCapacity };
    const writes = { minCapacity: c.writeCapacity, maxCapacity: c.maxWriteCapacity };
    this.table.autoScaleReadCapacity(reads).scaleOnUtilization(target);
    this.table.autoScaleWriteCapacity(writes).scaleOnUtilization(target);
    for (const index of Object.values(tableDefinition.indexes)) {
      this.table.autoScaleGlobalSecondaryIndexReadCapacity(index.name, reads).scaleOnUtilization(target);
      this.table.autoScaleGlobalSecondaryIndexWriteCapacity(index.name, writes).scaleOnUtilization(target);
    }
  }
}

/**
 * The messages and the keys are not disposable: kept when the stack is deleted or the table
 * replaced. A table made by a create that fails goes with its rollback, so every failed
 * first deploy does not leave a table behind (RetainExceptOnCreate).
 */
export const removalPolicy = (destroyData: boolean) => (destroyData ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);

function attribute(name: string): dynamodb.Attribute {
  const type = attributeTypes[name];
  if (type === undefined) throw new Error(`attributeTypes has no type for key attribute ${name}`);
  return { name, type: type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER };
}
