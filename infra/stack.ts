import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { readConfig, type SluiceConfig } from './config.js';
import { SluiceApi } from './constructs/api.js';
import { SluiceTable } from './constructs/table.js';
import { SluiceWorkers } from './constructs/workers.js';

export interface SluiceStackProps extends StackProps {
  /** Overrides what CDK context says; tests use it, `cdk synth` reads context. */
  config?: Partial<SluiceConfig>;
}

/**
 * One Sluice deployment: the table, the HTTP API in front of it, and the workers behind
 * it. Environment-agnostic (no account or region needed to synthesize), so `cdk synth`
 * runs offline and one template deploys anywhere.
 */
export class SluiceStack extends Stack {
  readonly table: SluiceTable;
  readonly api: SluiceApi;
  readonly workers: SluiceWorkers;

  constructor(scope: Construct, id: string, props: SluiceStackProps = {}) {
    super(scope, id, {
      description: 'Sluice: Azure Service Bus semantics on API Gateway, Lambda and DynamoDB',
      ...props,
    });
    const config = { ...readConfig(this.node), ...props.config };

    this.table = new SluiceTable(this, 'Data', { retainData: config.retainData });
    this.api = new SluiceApi(this, 'Api', {
      table: this.table,
      rateLimit: config.apiRateLimit,
      burstLimit: config.apiBurstLimit,
    });
    this.workers = new SluiceWorkers(this, 'Workers', { table: this.table });
  }
}
