import { CustomResource, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Provider } from 'aws-cdk-lib/custom-resources';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { grantTableAccess, tableAccess } from './access.js';
import { SluiceFunction } from './function.js';
import type { SluiceTable } from './table.js';

export interface SluiceRootKeyProps {
  table: SluiceTable;
}

/**
 * The namespace's RootManageSharedAccessKey rule, made at deploy time (A2, A4): a custom
 * resource whose handler (`functions/bootstrap`) generates the keys inside AWS and writes
 * them to the table. No key is ever a template value, a resource property, an attribute
 * (`Data`) or an output, so none appears in CloudFormation; operators read it from the
 * table (README). An existing rule is left as it is, so redeploys keep the key.
 */
export class SluiceRootKey extends Construct {
  readonly fn: SluiceFunction;
  readonly provider: Provider;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: SluiceRootKeyProps) {
    super(scope, id);

    this.fn = new SluiceFunction(this, 'Function', {
      name: 'bootstrap',
      description: 'Sluice deploy-time bootstrap: creates the RootManageSharedAccessKey rule when absent',
      tableName: props.table.table.tableName,
      timeout: Duration.seconds(60),
    });
    grantTableAccess(this.fn, props.table, tableAccess.bootstrap);

    // The framework's own function, with the same care as ours: a log group that has a
    // retention and goes with the stack, and a role without AWSLambdaBasicExecutionRole.
    const frameworkLogs = new logs.LogGroup(this, 'ProviderLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const frameworkRole = new iam.Role(this, 'ProviderRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'Sluice custom resource provider framework (invokes the bootstrap function)',
    });
    frameworkLogs.grantWrite(frameworkRole);
    this.provider = new Provider(this, 'Provider', {
      onEventHandler: this.fn,
      logGroup: frameworkLogs,
      frameworkOnEventRole: frameworkRole,
    });

    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: this.provider.serviceToken,
      resourceType: 'Custom::SluiceRootKey',
      // Not read by the handler (it uses TABLE_NAME and KEYS_TABLE_NAME); here so a replaced
      // table, whose name changes, makes CloudFormation send an Update that creates the key
      // in the new table.
      properties: { TableName: props.table.table.tableName, KeysTableName: props.table.keysTable.tableName },
      removalPolicy: RemovalPolicy.DESTROY,
    });

    NagSuppressions.addResourceSuppressions(
      frameworkRole,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'The CDK provider framework grants lambda:InvokeFunction on the bootstrap function ' +
            'and on `<function ARN>:*`, its versions and aliases; the wildcard reaches that one ' +
            'function and nothing else.',
          appliesTo: [`Resource::<${Stack.of(this).getLogicalId(this.fn.node.defaultChild as CfnFunction)}.Arn>:*`],
        },
      ],
      true,
    );
  }
}
