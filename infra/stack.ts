import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { NEW_ENTITY_LAYOUT_ENV } from '../lib/deps.js';
import { readConfig, type SluiceConfig } from './config.js';
import { SluiceAlarms } from './constructs/alarms.js';
import { SluiceApi } from './constructs/api.js';
import { SluiceFunction } from './constructs/function.js';
import { SluiceRootKey } from './constructs/root-key.js';
import { SluiceTable } from './constructs/table.js';
import { SluiceWorkers } from './constructs/workers.js';
import { SluiceNotifications } from './constructs/notifications.js';
import type { FunctionName } from './paths.js';

export interface SluiceStackProps extends StackProps {
  /** Overrides what CDK context says; tests use it, `cdk synth` reads context. */
  config?: Partial<SluiceConfig>;
}

/**
 * One Sluice deployment: the table, the HTTP API in front of it, the workers behind it,
 * the deploy-time root key, and (when asked for) the alarms and dashboard that watch them.
 * Environment-agnostic (no account or region needed to synthesize), so `cdk synth` runs
 * offline and one template deploys anywhere.
 */
export class SluiceStack extends Stack {
  readonly table: SluiceTable;
  readonly api: SluiceApi;
  readonly workers: SluiceWorkers;
  readonly rootKey: SluiceRootKey;
  /** Alarms and dashboard, when either is asked for. */
  readonly monitoring?: SluiceAlarms;
  readonly notifications: SluiceNotifications;

  /** Each handler of `functions/` with its function, the bootstrap's included. */
  get functions(): Record<FunctionName | 'bootstrap', SluiceFunction> {
    return {
      api: this.api.fn,
      stream: this.workers.stream,
      sweeper: this.workers.sweeper,
      reaper: this.workers.reaper,
      notify: this.notifications.fn,
      bootstrap: this.rootKey.fn,
    };
  }

  constructor(scope: Construct, id: string, props: SluiceStackProps = {}) {
    super(scope, id, {
      description: 'Sluice: Azure Service Bus semantics on API Gateway, Lambda and DynamoDB',
      ...props,
    });
    const config = { ...readConfig(this.node), ...props.config };

    this.table = new SluiceTable(this, 'Data', { destroyData: config.destroyData, deletionProtection: config.deletionProtection, capacity: config.capacity });
    // Table names are no secret; operators read the root key from the keys table with its name.
    new CfnOutput(this, 'TableName', {
      value: this.table.table.tableName,
      description: 'The Sluice DynamoDB table (entities and messages)',
    });
    new CfnOutput(this, 'KeysTableName', {
      value: this.table.keysTable.tableName,
      description: 'The Sluice keys table (authorization rules, the RootManageSharedAccessKey rule among them)',
    });
    this.rootKey = new SluiceRootKey(this, 'RootKey', { table: this.table });
    this.api = new SluiceApi(this, 'Api', {
      table: this.table,
      rateLimit: config.apiRateLimit,
      burstLimit: config.apiBurstLimit,
      concurrency: config.apiConcurrency,
      corsOrigins: config.corsOrigins,
    });
    this.workers = new SluiceWorkers(this, 'Workers', {
      table: this.table,
      concurrency: { stream: config.streamConcurrency, jobs: config.jobConcurrency },
    });
    this.notifications = new SluiceNotifications(this, 'Notifications', {
      table: this.table,
      posters: [this.workers.sweeper],
      announcers: [this.api.fn],
      throttle: { rateLimit: config.notificationsRateLimit, burstLimit: config.notificationsBurstLimit },
    });
    // Every function builds its Deps from the environment (lib/deps.ts `depsFromEnv`), so each
    // is told the layout, though only the api creates entities: no function then holds a Deps
    // that says otherwise. Unset when not chosen, so the default template stays as it was.
    if (config.newEntityLayout) {
      for (const fn of this.node.findAll().filter((c) => c instanceof SluiceFunction)) fn.addEnvironment(NEW_ENTITY_LAYOUT_ENV, config.newEntityLayout);
    }
    // The functions that read the keys table go live after the bootstrap has moved an older
    // deployment's rules into it, so no request meets an empty keys table.
    for (const fn of [this.api.fn, this.notifications.fn, this.workers.reaper]) fn.node.addDependency(this.rootKey.resource);
    // The api, which writes most message items, goes live after the stream consumer and the
    // sweeper, so that their previous versions never meet an item they cannot read: one that
    // does not repeat its key (lib/store/message-layout.ts) would be skipped by an older
    // consumer's counts (E6) and misplaced by an older sweeper's moves (D2). An upgrade from
    // a version that wrote the key into the item needs this order once.
    for (const fn of [this.workers.stream, this.workers.sweeper]) this.api.fn.node.addDependency(fn);
    // CloudWatch bills alarms and dashboards by the month, used or not: opt-in, so an idle
    // default deployment costs cents (docs/operations.md).
    if (config.alarms || config.dashboard) {
      this.monitoring = new SluiceAlarms(this, 'Monitoring', {
        api: this.api,
        workers: this.workers,
        alarms: config.alarms,
        dashboard: config.dashboard,
        deadLetterThreshold: config.deadLetterAlarmThreshold,
        ...(config.alarmEmail === undefined ? {} : { alarmEmail: config.alarmEmail }),
      });
    }
  }
}
