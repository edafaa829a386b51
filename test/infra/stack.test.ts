import { Aspects } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { SluiceStack } from '../../infra/stack.js';
import { testApp } from '../support/synth.js';
import { streamFilterPatterns } from '../../lib/store/stream-filter.js';
import { createKeysTableInput, createTableInput, tableDefinition } from '../../lib/store/table.js';
import { routeTable } from '../../lib/api/routes.js';

// Skip esbuild bundling: these tests look at the template, not at the code assets.

function synth(context: Record<string, unknown> = {}) {
  const app = testApp(context);
  const stack = new SluiceStack(app, 'Test');
  return { app, stack, template: Template.fromStack(stack) };
}

/** Reserved concurrency by function logical id, for the functions that reserve any. */
function reservedConcurrency(template: Template): Record<string, number> {
  const fns = template.findResources('AWS::Lambda::Function') as Record<string, { Properties: { ReservedConcurrentExecutions?: number } }>;
  return Object.fromEntries(
    Object.entries(fns).flatMap(([id, f]) =>
      f.Properties.ReservedConcurrentExecutions === undefined ? [] : [[id, f.Properties.ReservedConcurrentExecutions]],
    ),
  );
}

/**
 * Whether CloudFormation can create the template's functions in an account whose concurrency
 * quota is `quota`: Lambda refuses any reservation that leaves fewer than 100 executions
 * unreserved, so under a quota of 100 nothing can be reserved at all.
 */
function fitsConcurrencyQuota(template: Template, quota: number): boolean {
  const reserved = Object.values(reservedConcurrency(template)).reduce((a, b) => a + b, 0);
  return reserved === 0 || quota - reserved >= 100;
}

// Most tests read the same default synthesis; one is enough.
let defaultSynth: ReturnType<typeof synth> | undefined;
function defaults() {
  return (defaultSynth ??= synth());
}

function logicalId(stack: SluiceStack, fn: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(fn.node.defaultChild as CfnFunction);
}

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };
type PolicyResource = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: unknown } };

/** Statements of every AWS::IAM::Policy, by logical id. */
function statementsOf(template: Template): Map<string, Statement[]> {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, PolicyResource>;
  return new Map(Object.entries(policies).map(([id, p]) => [id, p.Properties.PolicyDocument.Statement]));
}

function actionsOf(statements: Statement[]): string[] {
  return statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
}

/** The DynamoDB actions granted by the default policy of the role of `fn`. */
function dynamoActions(stack: SluiceStack, template: Template, fn: { role?: unknown }): string[] {
  const roleId = stack.getLogicalId((fn.role as { node: { defaultChild: never } }).node.defaultChild);
  const policies = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, PolicyResource>);
  const policy = policies.find((p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`));
  if (!policy) throw new Error(`no policy for role ${roleId}`);
  return [
    ...new Set(actionsOf(policy.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow')).filter((a) => a.startsWith('dynamodb:'))),
  ].sort();
}

describe('SluiceStack template', () => {
  // The first synthesis loads most of aws-cdk-lib; do it under the hook timeout, not a test's.
  beforeAll(() => {
    defaults();
  });

  it('builds the table exactly as lib/store/table.ts defines it', () => {
    // prepare
    const expected = createTableInput('unused');
    type Named = { AttributeName: string };
    const byName = (a: Named, b: Named) => a.AttributeName.localeCompare(b.AttributeName);

    // act
    const { stack, template } = defaults();

    // assess
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
    const dataId = stack.getLogicalId(stack.table.table.node.defaultChild as never);
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table', { Properties: { StreamSpecification: Match.anyValue() } })) as Array<{
      Properties: Record<string, unknown> & { AttributeDefinitions: Array<{ AttributeName: string }> };
      DeletionPolicy: string;
    }>;
    const props = table!.Properties;
    expect(props.KeySchema).toEqual(expected.KeySchema);
    expect([...props.AttributeDefinitions].sort(byName)).toEqual([...expected.AttributeDefinitions].sort(byName));
    expect(props.BillingMode).toBe('PAY_PER_REQUEST');
    expect(props.TimeToLiveSpecification).toEqual({ AttributeName: tableDefinition.ttlAttribute, Enabled: true });
    expect(props.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
    expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    // Both indexes, keys and projections (INCLUDE with the listed attributes, KEYS_ONLY) as defined.
    expect(props.GlobalSecondaryIndexes).toEqual(expected.GlobalSecondaryIndexes);
    expect(props.GlobalSecondaryIndexes).toEqual([
      expect.objectContaining({
        IndexName: 'ready',
        Projection: {
          ProjectionType: 'INCLUDE',
          NonKeyAttributes: [...tableDefinition.indexes.ready.projectedAttributes],
        },
      }),
      expect.objectContaining({ IndexName: 'due', Projection: { ProjectionType: 'KEYS_ONLY' } }),
    ]);
    // The data outlives `cdk destroy` and a replacement unless asked otherwise (not a failed create).
    expect(table!.DeletionPolicy).toBe('RetainExceptOnCreate');
    expect(Object.keys(template.findResources('AWS::DynamoDB::Table', { Properties: { StreamSpecification: Match.anyValue() } }))).toEqual([dataId]);
  });

  it('keeps the keys in a table of their own that no stream reads: keys and billing as lib/store/table.ts defines them', () => {
    // act
    const { stack, template } = defaults();

    // assess
    const resources = template.toJSON().Resources as Record<string, { Properties: Record<string, unknown>; DeletionPolicy: string }>;
    const keys = resources[stack.getLogicalId(stack.table.keysTable.node.defaultChild as never)]!;
    const expected = createKeysTableInput('unused');
    expect(keys.Properties.KeySchema).toEqual(expected.KeySchema);
    expect(keys.Properties.AttributeDefinitions).toEqual(expected.AttributeDefinitions);
    expect(keys.Properties).toMatchObject({ BillingMode: 'PAY_PER_REQUEST', PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } });
    // No stream (no reader of a key's images), no index, no TTL.
    for (const absent of ['StreamSpecification', 'GlobalSecondaryIndexes', 'TimeToLiveSpecification']) expect(keys.Properties[absent]).toBeUndefined();
    expect(keys.DeletionPolicy).toBe('RetainExceptOnCreate');
    // Provisioned data tables leave it on demand: a few cached reads would not pay for an hour's units.
    const provisioned = synth({ billing: 'provisioned' });
    const keysProvisioned = (provisioned.template.toJSON().Resources as typeof resources)[
      provisioned.stack.getLogicalId(provisioned.stack.table.keysTable.node.defaultChild as never)
    ]!;
    expect(keysProvisioned.Properties.BillingMode).toBe('PAY_PER_REQUEST');
  });

  it('retains the table on update and delete, not when its own create rolls back; no deletion protection by default', () => {
    // act
    const { template } = defaults();

    // assess: the table (its messages) survives stack deletion and replacement; a failed first
    // deploy's rollback deletes it, which deletion protection would refuse (ROLLBACK_FAILED)
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'RetainExceptOnCreate',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
    });
    const kept = Object.entries(template.toJSON().Resources as Record<string, { Type: string; DeletionPolicy?: string; UpdateReplacePolicy?: string }>)
      .filter(([, r]) => [r.DeletionPolicy, r.UpdateReplacePolicy].some((p) => p !== undefined && p !== 'Delete'))
      .map(([, r]) => r.Type);
    expect(new Set(kept)).toEqual(new Set(['AWS::DynamoDB::Table']));
    expect(JSON.stringify(template.toJSON())).not.toContain('"DeletionPolicy":"Retain"');
  });

  it('turns deletion protection on with -c deletionProtection=true', () => {
    const { template } = synth({ deletionProtection: 'true' });
    template.allResourcesProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
    expect(() => synth({ deletionProtection: 'on' })).toThrow(/deletionProtection/);
  });

  it.each([
    ['-c destroyData=true', { destroyData: 'true' }],
    ['destroyData with alarms mailed', { destroyData: true, alarmEmail: 'ops@example.com' }],
  ])('keeps nothing behind on `cdk destroy` with %s', (_, context: Record<string, unknown>) => {
    // act
    const { template } = synth(context);

    // assess: alarms, dashboard, topic, custom resource, log groups and the table included
    const kept = Object.entries(template.toJSON().Resources as Record<string, { DeletionPolicy?: string; UpdateReplacePolicy?: string }>)
      .filter(([, r]) => [r.DeletionPolicy, r.UpdateReplacePolicy].some((p) => p !== undefined && p !== 'Delete'))
      .map(([id]) => id);
    expect(kept).toEqual([]);
    template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
  });

  it('rejects a destroyData that is not a boolean, and the retired retainData', () => {
    expect(() => synth({ destroyData: 'yes' })).toThrow(/destroyData/);
    // Its default was the opposite; silently ignoring it would surprise whoever relied on it.
    expect(() => synth({ retainData: 'true' })).toThrow(/retainData is gone.*destroyData=true/);
  });

  it('runs six functions (five handlers and the bootstrap) on nodejs24.x and arm64 with the shared defaults', () => {
    // act
    const { stack, template } = defaults();

    // assess
    const tableId = stack.getLogicalId(stack.table.table.node.defaultChild as never);
    const ours = stack.functions;
    // Ours plus the custom resource provider framework's onEvent function.
    template.resourceCountIs('AWS::Lambda::Function', 7);
    const resources = template.toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>;
    for (const fn of Object.values(ours)) {
      expect(resources[logicalId(stack, fn)]!.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        MemorySize: 256,
        Handler: 'index.handler',
        Environment: { Variables: { TABLE_NAME: { Ref: tableId } } },
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
      });
    }
    // Every function, the framework's included, logs to a group of its own.
    template.allResourcesProperties('AWS::Lambda::Function', {
      LoggingConfig: Match.objectLike({ LogGroup: { Ref: Match.anyValue() } }),
    });
    // One log group per function (the framework's too) plus the API's access logs, all
    // with a retention, none kept.
    template.resourceCountIs('AWS::Logs::LogGroup', 8);
    template.allResources('AWS::Logs::LogGroup', {
      Properties: { RetentionInDays: 30 },
      DeletionPolicy: 'Delete',
    });
    // Our own roles: no managed policy (AWSLambdaBasicExecutionRole) attached anywhere.
    for (const role of Object.values(template.findResources('AWS::IAM::Role'))) {
      expect((role as { Properties: Record<string, unknown> }).Properties.ManagedPolicyArns).toBeUndefined();
    }
    const timeouts = Object.fromEntries(
      Object.entries(ours).map(([name, fn]) => {
        const resource = resources[logicalId(stack, fn)] as unknown as { Properties: { Timeout: number } };
        return [name, resource.Properties.Timeout];
      }),
    );
    expect(timeouts).toEqual({ api: 29, stream: 300, sweeper: 50, reaper: 50, notify: 10, bootstrap: 60 });
  });

  it('reserves no concurrency by default: the template fits a new account whose Lambda concurrency quota is 10', () => {
    // act
    const { template } = defaults();

    // assess
    expect(reservedConcurrency(template)).toEqual({});
    expect(fitsConcurrencyQuota(template, 10)).toBe(true);
    template.resourceCountIs('AWS::Lambda::EventInvokeConfig', 2);
    expect(JSON.stringify(template.toJSON())).not.toContain('ProvisionedConcurrency');
  });

  it('reserves for the stream consumer and the jobs only when asked (-c streamConcurrency, -c jobConcurrency)', () => {
    // act
    const { stack, template } = synth({ streamConcurrency: '4', jobConcurrency: 1 });

    // assess
    expect(reservedConcurrency(template)).toEqual({
      [logicalId(stack, stack.workers.stream)]: 4,
      [logicalId(stack, stack.workers.sweeper)]: 1,
      [logicalId(stack, stack.workers.reaper)]: 1,
    });
    // Lambda keeps 100 of an account's executions unreserved: 6 reserved needs a quota of 106.
    expect(fitsConcurrencyQuota(template, 10)).toBe(false);
    expect(fitsConcurrencyQuota(template, 105)).toBe(false);
    expect(fitsConcurrencyQuota(template, 106)).toBe(true);
    expect(() => synth({ streamConcurrency: '-1' })).toThrow(/streamConcurrency/);
  });

  it("takes the api's reserved concurrency from context", () => {
    // act: `-c apiConcurrency=400`
    const { stack, template } = synth({ apiConcurrency: '400' });

    // assess
    const resources = template.toJSON().Resources as Record<string, { Properties: { ReservedConcurrentExecutions?: number } }>;
    expect(resources[logicalId(stack, stack.api.fn)]!.Properties.ReservedConcurrentExecutions).toBe(400);
    expect(() => synth({ apiConcurrency: 'lots' })).toThrow(/apiConcurrency/);
  });

  it('feeds the stream consumer through a filtered event source mapping', () => {
    // act
    const { stack, template } = defaults();

    // assess
    // The stream consumer's, and the notify function's own (test/infra/notifications.test.ts).
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack, stack.workers.stream) },
      EventSourceArn: { 'Fn::GetAtt': [Match.anyValue(), 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 1000,
      MaximumBatchingWindowInSeconds: 5,
      BisectBatchOnFunctionError: true,
      // No retry limit: load is retried for as long as it lasts (a record failing for another
      // reason is parked by the consumer, T6/E6); what still fails at 12 hours goes to the
      // failure queue while the stream keeps it 12 more.
      MaximumRetryAttempts: -1,
      MaximumRecordAgeInSeconds: 12 * 3600,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      FilterCriteria: { Filters: streamFilterPatterns.map((p) => ({ Pattern: JSON.stringify(p) })) },
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] } } },
    });
  });

  it('updates the api after the stream consumer and the sweeper, so their older versions never read a message item of the newer layout', () => {
    // act
    const { stack, template } = defaults();

    // assess
    const fns = template.findResources('AWS::Lambda::Function') as Record<string, { DependsOn?: string[] }>;
    const after = fns[logicalId(stack, stack.api.fn)]?.DependsOn ?? [];
    expect(after).toEqual(expect.arrayContaining([logicalId(stack, stack.workers.stream), logicalId(stack, stack.workers.sweeper)]));
  });

  it('runs the sweeper and the reaper every minute', () => {
    // act
    const { stack, template } = defaults();

    // assess
    template.resourceCountIs('AWS::Events::Rule', 2);
    for (const fn of [stack.workers.sweeper, stack.workers.reaper]) {
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(stack, fn), 'Arn'] } })],
      });
      // A missed run is made up by the next tick, not by Lambda's async retries.
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: logicalId(stack, fn) },
        MaximumRetryAttempts: 0,
      });
    }
  });

  it('serves everything through one HTTP API route to the api function, payload 2.0', () => {
    // act
    const { stack, template } = defaults();

    // assess
    const apiFn = logicalId(stack, stack.api.fn);
    // The HTTP API, and the notifications' WebSocket API (test/infra/notifications.test.ts).
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 2);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const httpApiId = stack.getLogicalId(stack.api.httpApi.node.defaultChild as never);
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: { 'Fn::GetAtt': [apiFn, 'Arn'] },
      PayloadFormatVersion: '2.0',
    });
    expect(Object.keys(template.findResources('AWS::ApiGatewayV2::Route', { Properties: { ApiId: { Ref: httpApiId } } }))).toHaveLength(1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { ApiId: { Ref: httpApiId }, RouteKey: '$default' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingBurstLimit: 200, ThrottlingRateLimit: 100 },
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] },
        Format: Match.stringLikeRegexp('requestId'),
      },
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: { 'Fn::GetAtt': [apiFn, 'Arn'] },
      Principal: 'apigateway.amazonaws.com',
    });
    template.hasOutput('ApiUrl', { Value: Match.objectLike({ 'Fn::Join': Match.anyValue() }) });
  });

  it('has no CORS configuration by default: no origin may call the API from a browser page', () => {
    const { template } = defaults();
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP', CorsConfiguration: Match.absent() });
  });

  it('answers CORS preflights in API Gateway for the origins of -c corsOrigins', () => {
    // act
    const { template } = synth({ corsOrigins: 'https://app.example.com, http://localhost:5173' });

    // assess: the client's headers and every method of the route table; retry-after readable
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'HTTP',
      CorsConfiguration: {
        AllowOrigins: ['https://app.example.com', 'http://localhost:5173'],
        AllowHeaders: ['authorization', 'content-type'],
        AllowMethods: ['DELETE', 'GET', 'POST', 'PUT'],
        ExposeHeaders: ['retry-after'],
        MaxAge: 3600,
      },
    });
    expect([...new Set(routeTable.map((r) => r.method.toUpperCase()))].sort()).toEqual(['DELETE', 'GET', 'POST', 'PUT']);
    synth({ corsOrigins: '*' }).template.hasResourceProperties('AWS::ApiGatewayV2::Api', { CorsConfiguration: Match.objectLike({ AllowOrigins: ['*'] }) });
    expect(() => synth({ corsOrigins: 'app.example.com' })).toThrow(/corsOrigins/);
    expect(() => synth({ corsOrigins: 'https://a.example/path' })).toThrow(/corsOrigins/);
    expect(() => synth({ corsOrigins: '*,https://a.example' })).toThrow(/corsOrigins/);
  });

  it('takes API throttling from context', () => {
    // act
    const { template } = synth({ apiRateLimit: '5', apiBurstLimit: 10 });

    // assess
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingBurstLimit: 10, ThrottlingRateLimit: 5 },
    });
  });

  it('grants exact actions only: no wildcard action, no Scan, nothing beyond what each function needs', () => {
    // act
    const { stack, template } = defaults();

    // assess
    const all = [...statementsOf(template).values()].flat();
    expect(all.length).toBeGreaterThan(0);
    for (const action of actionsOf(all)) {
      expect(action).not.toContain('*');
    }
    expect(actionsOf(all)).not.toContain('dynamodb:Scan');
    // Allow statements only, on DynamoDB: what a role may not do is what it is not granted.
    expect(all.filter((s) => s.Effect !== 'Allow' && actionsOf([s]).some((a) => a.startsWith('dynamodb:')))).toEqual([]);

    // The sweeper reads counts with BatchGetItem too (test/infra/iam-grants.test.ts records
    // it); the reaper reads none since scheduled messages hold an entity by `scheduledUntil` (I2).
    const jobs = [
      'dynamodb:BatchGetItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:ConditionCheckItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ];
    const api = jobs;
    const streamRead = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];
    expect(dynamoActions(stack, template, stack.api.fn)).toEqual(api);
    expect(dynamoActions(stack, template, stack.workers.stream)).toEqual([...api, ...streamRead].sort());
    expect(dynamoActions(stack, template, stack.workers.sweeper)).toEqual(jobs);
    expect(dynamoActions(stack, template, stack.workers.reaper)).toEqual(jobs.filter((a) => a !== 'dynamodb:BatchGetItem'));
    // Waiting consumers (H1): watch items and connections; reads its stream mapping.
    expect(dynamoActions(stack, template, stack.notifications.fn)).toEqual(
      [...jobs.filter((a) => a !== 'dynamodb:ConditionCheckItem' && a !== 'dynamodb:BatchGetItem'), ...streamRead].sort(),
    );
    // The deploy-time root key: read the rule, write it when absent; list and delete an older
    // deployment's rules in the data table.
    expect(dynamoActions(stack, template, stack.rootKey.fn)).toEqual(['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query']);

    // The keys table: only the functions that check or manage keys are told its name and granted it.
    const keysId = stack.getLogicalId(stack.table.keysTable.node.defaultChild as never);
    const reachesKeys = (fn: { role?: unknown }) => {
      const roleId = stack.getLogicalId((fn.role as { node: { defaultChild: never } }).node.defaultChild);
      const policies = Object.values(template.findResources('AWS::IAM::Policy') as Record<string, PolicyResource>);
      return policies.some(
        (p) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`) && JSON.stringify(p.Properties.PolicyDocument).includes(`"${keysId}"`),
      );
    };
    expect({
      api: reachesKeys(stack.api.fn),
      notify: reachesKeys(stack.notifications.fn),
      bootstrap: reachesKeys(stack.rootKey.fn),
      reaper: reachesKeys(stack.workers.reaper),
      stream: reachesKeys(stack.workers.stream),
      sweeper: reachesKeys(stack.workers.sweeper),
    }).toEqual({ api: true, notify: true, bootstrap: true, reaper: true, stream: false, sweeper: false });

    // Resource policies too (the queue's): a wildcard action only ever in a Deny, such as
    // enforceSSL's deny of sqs:* without TLS.
    const documents = Object.values(template.toJSON().Resources as Record<string, { Properties?: { PolicyDocument?: { Statement: Statement[] } } }>).flatMap(
      (r) => (r.Properties?.PolicyDocument ? [r.Properties.PolicyDocument] : []),
    );
    expect(documents.length).toBeGreaterThan(statementsOf(template).size);
    for (const document of documents) {
      for (const statement of document.Statement) {
        if (statement.Effect !== 'Allow') continue;
        for (const action of actionsOf([statement])) expect(action).not.toContain('*');
      }
    }

    // The only `*` resource is ListStreams, which IAM cannot scope; Query names each index.
    const starResources = all.filter((s) => s.Resource === '*');
    expect([...new Set(actionsOf(starResources))]).toEqual(['dynamodb:ListStreams']);
    expect(JSON.stringify(all)).not.toContain('/index/*');
    for (const index of Object.values(tableDefinition.indexes)) {
      expect(JSON.stringify(all)).toContain(`/index/${index.name}`);
    }
  });

  it.each([
    ['defaults', {}],
    ['an alarm email', { alarmEmail: 'ops@example.com' }],
    ['every opt-in', { dashboard: 'true', corsOrigins: '*', streamConcurrency: '4', jobConcurrency: '1', deletionProtection: 'true', billing: 'provisioned' }],
  ])('passes cdk-nag AwsSolutions with every suppression explained (%s)', (_, context: Record<string, unknown>) => {
    // prepare
    const app = testApp(context);
    const stack = new SluiceStack(app, 'Test');
    Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));

    // act: aspects run during synthesis
    app.synth();

    // assess
    const errors = Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-'));
    expect(errors.map((e) => `${e.id}: ${String(e.entry.data)}`)).toEqual([]);
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-'));
    expect(warnings.map((w) => `${w.id}: ${String(w.entry.data)}`)).toEqual([]);

    type Suppression = { id: string; reason: string };
    type WithNag = { Metadata?: { cdk_nag?: { rules_to_suppress?: Suppression[] } } };
    const resources = Template.fromStack(stack).toJSON().Resources as Record<string, WithNag>;
    const suppressions = Object.values(resources).flatMap((r) => r.Metadata?.cdk_nag?.rules_to_suppress ?? []);
    expect(suppressions.length).toBeGreaterThan(0);
    for (const s of suppressions) {
      // A sentence, not a placeholder.
      expect(s.reason.length, s.id).toBeGreaterThan(60);
    }
    // Each suppression sits on the kind of resource its rule checks, so it hides nothing else.
    const typesOf = (rule: string) =>
      new Set(
        Object.values(resources as Record<string, WithNag & { Type: string }>)
          .filter((r) => (r.Metadata?.cdk_nag?.rules_to_suppress ?? []).some((x) => x.id === rule))
          .map((r) => r.Type),
      );
    expect(typesOf('AwsSolutions-APIG4')).toEqual(new Set(['AWS::ApiGatewayV2::Route']));
    expect(typesOf('AwsSolutions-APIG1')).toEqual(new Set(['AWS::ApiGatewayV2::Stage']));
    for (const type of typesOf('AwsSolutions-IAM5')) expect(['AWS::IAM::Role', 'AWS::IAM::Policy']).toContain(type);
  });
});
