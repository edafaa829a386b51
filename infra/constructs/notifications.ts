import { CfnOutput, Duration, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { hintFilterPatterns } from '../../lib/store/stream-filter.js';
import { PONG_BODY, ROUTE_SELECTION_EXPRESSION, routes } from '../../lib/notifications/protocol.js';
import { grantTableAccess, tableAccess } from './access.js';
import { SluiceFunction } from './function.js';
import type { SluiceTable } from './table.js';

export interface SluiceNotificationsProps {
  table: SluiceTable;
  /** Functions that post hints to connections (the sweeper's lock-lapse check). */
  posters: SluiceFunction[];
  /** Functions that tell clients where the WebSocket is (the HTTP API). */
  announcers: SluiceFunction[];
  /**
   * Messages per second (steady, and burst above it) the stage admits, every route and
   * connection together: connecting costs nothing to check, so this caps what a stranger's
   * pings and subscribes can cost.
   */
  throttle?: { rateLimit: number; burstLimit: number };
}

/**
 * Waiting consumers (H1): a WebSocket API on which consumers subscribe to entities and get
 * availability hints, instead of holding a long-polling Lambda each.
 *
 * - No `$connect` route: API Gateway accepts the connection without running anything;
 *   the token is checked per subscription, where the entity is known.
 * - `subscribe` and `$disconnect` run the notify function; `subscribe`'s answer goes back as
 *   the route response, so answering needs no ManageConnections.
 * - `ping` is a MOCK integration answering `{"type":"pong"}`: keeping a connection alive
 *   costs one message each way and no Lambda.
 * - The notify function also reads the table's stream through its own mapping, without a
 *   batching window (the stream consumer's 5 s window would be the hint's latency), and
 *   filtered to writes that can leave a message receivable.
 * - Posting to connections is granted on this stage's `POST @connections` only.
 */
export class SluiceNotifications extends Construct {
  readonly fn: SluiceFunction;
  readonly api: apigw.WebSocketApi;
  readonly stage: apigw.WebSocketStage;

  constructor(scope: Construct, id: string, props: SluiceNotificationsProps) {
    super(scope, id);
    this.fn = new SluiceFunction(this, 'Function', {
      name: 'notify',
      description: 'Sluice waiting consumers: WebSocket subscriptions and availability hints',
      tableName: props.table.table.tableName,
      timeout: Duration.seconds(10),
    });
    grantTableAccess(this.fn, props.table, tableAccess.notify);

    const integration = new WebSocketLambdaIntegration('Notify', this.fn);
    this.api = new apigw.WebSocketApi(this, 'WebSocketApi', {
      description: 'Sluice availability hints for waiting consumers',
      routeSelectionExpression: ROUTE_SELECTION_EXPRESSION,
      disconnectRouteOptions: { integration },
    });
    this.api.addRoute(routes.subscribe, { integration, returnResponse: true });
    const pingRoute = this.addPingRoute();

    this.stage = new apigw.WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: 'live',
      autoDeploy: true,
      throttle: props.throttle ?? { rateLimit: 100, burstLimit: 200 },
    });

    this.fn.addEventSource(
      new DynamoEventSource(props.table.table, {
        // Hints about the past are worthless: a (re)subscribing consumer looks once anyway.
        startingPosition: lambda.StartingPosition.LATEST,
        batchSize: 100,
        maxBatchingWindow: Duration.seconds(0),
        // The handler never fails a batch over a hint; nothing to retry or park.
        retryAttempts: 0,
        filters: hintFilterPatterns.map((pattern) => lambda.FilterCriteria.filter(pattern)),
      }),
    );

    const connections = Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.api.apiId,
      resourceName: `${this.stage.stageName}/POST/@connections/*`,
    });
    for (const fn of [this.fn, ...props.posters]) {
      iam.Grant.addToPrincipal({ grantee: fn, actions: ['execute-api:ManageConnections'], resourceArns: [connections] });
      fn.addEnvironment('NOTIFICATIONS_ENDPOINT', this.stage.callbackUrl);
    }
    for (const fn of props.announcers) fn.addEnvironment('NOTIFICATIONS_URL', this.stage.url);
    new CfnOutput(scope, 'NotificationsUrl', { value: this.stage.url, description: 'WebSocket URL of Sluice availability hints' });

    // Each suppression on the resources its rule is about: the routes (APIG4) and the stage (APIG1).
    const routeResources = [...this.api.node.findAll().filter((c) => c instanceof apigw.CfnRoute), pingRoute];
    NagSuppressions.addResourceSuppressions(routeResources, [
      {
        id: 'AwsSolutions-APIG4',
        reason:
          'Connecting and pinging grant nothing (and the stage is throttled): every subscription carries a Service Bus SAS ' +
          'token that the notify function verifies with Listen on the entity, exactly as the HTTP API checks a receive.',
      },
    ]);
    NagSuppressions.addResourceSuppressions(
      this.stage,
      [
        {
          id: 'AwsSolutions-APIG1',
          reason:
            'Access logs of a WebSocket stage need the account-wide API Gateway CloudWatch role, an account ' +
            'setting a Sluice stack should not change; subscriptions and disconnects are in the notify function logs.',
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      this.fn.role ?? this.fn,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'dynamodb:ListStreams supports no resource-level permissions (see the stream consumer); and ' +
            'ManageConnections is scoped to POST on this stage, whose connection ids are only known at run time.',
          appliesTo: ['Resource::*', { regex: '/^Resource::arn:<AWS::Partition>:execute-api:.*@connections/\\*$/g' }],
        },
      ],
      true,
    );
    for (const fn of props.posters) {
      NagSuppressions.addResourceSuppressions(
        fn.role ?? fn,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason: 'ManageConnections is scoped to POST on the hint stage; the connection ids it posts to are only known at run time.',
            appliesTo: [{ regex: '/^Resource::arn:<AWS::Partition>:execute-api:.*@connections/\\*$/g' }],
          },
        ],
        true,
      );
    }
  }

  /**
   * `ping` → `{"type":"pong"}` from a MOCK integration: no Lambda runs for a keep-alive. The
   * `/200/` response answers the MOCK's status; `$default` is the catch-all a non-proxy
   * integration should have, as AWS's own examples configure it.
   */
  private addPingRoute(): apigw.CfnRoute {
    const apiId = this.api.apiId;
    const mock = new apigw.CfnIntegration(this, 'PingIntegration', {
      apiId,
      integrationType: 'MOCK',
      requestTemplates: { '200': '{"statusCode": 200}' },
      templateSelectionExpression: '200',
    });
    new apigw.CfnIntegrationResponse(this, 'PingIntegrationResponse', {
      apiId,
      integrationId: mock.ref,
      integrationResponseKey: '/200/',
      responseTemplates: { '200': PONG_BODY },
      templateSelectionExpression: '200',
    });
    new apigw.CfnIntegrationResponse(this, 'PingDefaultResponse', {
      apiId,
      integrationId: mock.ref,
      integrationResponseKey: '$default',
      responseTemplates: { '200': PONG_BODY },
      templateSelectionExpression: '200',
    });
    const route = new apigw.CfnRoute(this, 'PingRoute', {
      apiId,
      routeKey: routes.ping,
      target: `integrations/${mock.ref}`,
      routeResponseSelectionExpression: '$default',
    });
    new apigw.CfnRouteResponse(this, 'PingRouteResponse', { apiId, routeId: route.ref, routeResponseKey: '$default' });
    return route;
  }
}
