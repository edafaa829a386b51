import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import path from 'node:path';
import { lockFile, repoRoot, type FunctionName } from '../paths.js';
import { lambdaBundling } from '../bundling.js';

/**
 * The handlers, one directory each under `functions/`: the four of `paths.ts` plus the
 * deploy-time `bootstrap` (the root key's custom resource).
 */
export type SluiceFunctionName = FunctionName | 'bootstrap';

export function functionEntry(name: SluiceFunctionName): string {
  return path.join(repoRoot, 'functions', name, 'handler.ts');
}

/** The Lambda runtime every Sluice function runs on. */
export const runtime = lambda.Runtime.NODEJS_24_X;

export interface SluiceFunctionProps {
  /** Which `functions/<name>/handler.ts` to bundle. */
  name: SluiceFunctionName;
  description: string;
  tableName: string;
  timeout: Duration;
  /** Asynchronous invocations only (schedules): how often Lambda retries a failed call. */
  retryAttempts?: number;
  /** Asynchronous invocations only: how long a queued event stays worth running. */
  maxEventAge?: Duration;
  /** Executions set aside for this function alone (and its cap); none when absent. */
  reservedConcurrency?: number;
  /** Shell commands run after esbuild, given the asset's output directory (extra files for the zip). */
  afterBundling?: (outputDir: string) => string[];
}

/**
 * A Sluice Lambda function with the defaults they all share: Node 24 on arm64, an ESM
 * bundle built by the local esbuild (never Docker) with the AWS SDK v3 clients bundled
 * and tree-shaken rather than taken from the runtime, source maps, an explicit log group
 * with a retention, and a role that may write to that log group and nothing else until
 * `grantTableAccess` adds exactly what the function needs.
 */
export class SluiceFunction extends NodejsFunction {
  // No class fields here: with ES2022 class fields a redeclared `role` or `logGroup`
  // would shadow lambda.Function's own after super() returns.
  constructor(scope: Construct, id: string, props: SluiceFunctionProps) {
    // Created before the function (and beside it) because NodejsFunction takes them as props.
    const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Our own role instead of the default one, which carries the AWSLambdaBasicExecutionRole
    // managed policy (create any log group, write to any log stream in the account).
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Sluice ${props.name} function`,
    });
    // The group's Arn attribute ends in `:*`, which covers the streams Lambda creates in it.
    logGroup.grantWrite(role);
    super(scope, id, {
      entry: functionEntry(props.name),
      handler: 'handler',
      projectRoot: repoRoot,
      depsLockFilePath: lockFile,
      description: props.description,
      runtime,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 256,
      timeout: props.timeout,
      role,
      logGroup,
      environment: {
        TABLE_NAME: props.tableName,
        // Stack traces through the minified bundle point at the TypeScript sources.
        NODE_OPTIONS: '--enable-source-maps',
      },
      ...(props.retryAttempts === undefined ? {} : { retryAttempts: props.retryAttempts }),
      ...(props.maxEventAge === undefined ? {} : { maxEventAge: props.maxEventAge }),
      ...(props.reservedConcurrency === undefined ? {} : { reservedConcurrentExecutions: props.reservedConcurrency }),
      // infra/bundling.ts says how, for this and for the bench alike.
      bundling: {
        format: lambdaBundling.format as OutputFormat,
        target: lambdaBundling.target,
        mainFields: [...lambdaBundling.mainFields],
        banner: lambdaBundling.banner,
        minify: lambdaBundling.minify,
        sourceMap: lambdaBundling.sourceMap,
        sourcesContent: lambdaBundling.sourcesContent,
        externalModules: [...lambdaBundling.external],
        esbuildArgs: Object.fromEntries(Object.entries(lambdaBundling.alias).map(([from, to]) => [`--alias:${from}`, to])),
        forceDockerBundling: false,
        ...(props.afterBundling === undefined
          ? {}
          : {
              commandHooks: {
                beforeBundling: () => [],
                beforeInstall: () => [],
                afterBundling: (_inputDir: string, outputDir: string) => props.afterBundling!(outputDir),
              },
            }),
      },
    });
  }
}
