import { CfnOutput, Duration, RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { grantTableAccess, tableAccess } from './access.js';
import { SluiceFunction } from './function.js';
import { explorerBundlingCommands } from '../explorer/build.js';
import type { SluiceTable } from './table.js';
import { routeTable } from '../../lib/api/routes.js';

export interface SluiceApiProps {
  table: SluiceTable;
  /** Steady requests per second across the API. */
  rateLimit: number;
  /** Burst above the steady rate. */
  burstLimit: number;
  /** Reserved concurrency of the function (its cap and its floor); 0 reserves none. */
  concurrency: number;
  /** Origins browsers may call the API from; none (no CORS configuration) when empty. */
  corsOrigins?: readonly string[];
}

/**
 * What a cross-origin page may send and read. A request carries its SAS token in
 * `authorization` and a JSON body; the client reads `retry-after` on 429 and 503. Every
 * method of the route table.
 */
export const corsRules = {
  allowHeaders: ['authorization', 'content-type'],
  exposeHeaders: ['retry-after'],
  allowMethods: [...new Set(routeTable.map((r) => r.method.toUpperCase()))].sort() as apigw.CorsHttpMethod[],
  maxAge: Duration.hours(1),
};

/**
 * The HTTP API: every request, whatever its path and method, goes to one Lambda function
 * (payload format 2.0), which routes it itself. One `$default` route, so API Gateway holds
 * no copy of the routing table to keep in step with the handler.
 */
export class SluiceApi extends Construct {
  readonly fn: SluiceFunction;
  readonly httpApi: apigw.HttpApi;
  readonly url: string;

  constructor(scope: Construct, id: string, props: SluiceApiProps) {
    super(scope, id);

    this.fn = new SluiceFunction(this, 'Function', {
      name: 'api',
      description: 'Sluice HTTP API: entities, messages, settlements, authorization rules',
      tableName: props.table.table.tableName,
      // HTTP API stops waiting at 30 s; a receive may wait up to maxWaitTime (PT20S) for a message.
      timeout: Duration.seconds(29),
      ...(props.concurrency > 0 ? { reservedConcurrency: props.concurrency } : {}),
      // Sluice Explorer's three static files go in the same zip, beside index.mjs (README: "Explorer").
      afterBundling: explorerBundlingCommands,
    });
    grantTableAccess(this.fn, props.table, tableAccess.api);

    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Sluice: Azure Service Bus semantics, pay per use',
      defaultIntegration: new HttpLambdaIntegration('Handler', this.fn, {
        payloadFormatVersion: apigw.PayloadFormatVersion.VERSION_2_0,
      }),
      // The stage is made below, with throttling and access logs.
      createDefaultStage: false,
      // API Gateway answers the preflight itself (an OPTIONS without a token would get the
      // function's 401) and adds the CORS headers to the function's answers.
      ...(props.corsOrigins && props.corsOrigins.length > 0 ? { corsPreflight: { ...corsRules, allowOrigins: [...props.corsOrigins] } } : {}),
    });

    const accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const stage = this.httpApi.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.rateLimit, burstLimit: props.burstLimit },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        // No query string and no headers: SAS tokens travel in the Authorization header.
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            time: '$context.requestTimeEpoch',
            method: '$context.httpMethod',
            path: '$context.path',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latency: '$context.responseLatency',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    this.url = stage.url;
    new CfnOutput(scope, 'ApiUrl', { value: this.url, description: 'Base URL of the Sluice HTTP API' });

    // On the route, the resource the rule is about.
    NagSuppressions.addResourceSuppressions(
      this.httpApi.node.findAll().filter((c) => c instanceof apigw.CfnRoute),
      [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'Sluice authorizes every request itself, with Service Bus style SAS tokens verified ' +
            'by the api function against keys in the table; an API Gateway authorizer would add ' +
            'a second Lambda call per request to check the same token.',
        },
      ],
    );
  }
}
