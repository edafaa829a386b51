import { AssetHashType, DockerImage, Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { buildSync } from 'esbuild';
import { execSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot, type FunctionName } from '../paths.js';
import { functionBundleOptions } from '../bundling.js';

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
 *
 * Bundled through esbuild's API rather than NodejsFunction's command line, which writes one
 * file: a function's dynamic imports become chunks beside `index.mjs` that a cold start does
 * not load (infra/bundling.ts `functionBundleOptions`).
 */
export class SluiceFunction extends lambda.Function {
  // No class fields here: with ES2022 class fields a redeclared `role` or `logGroup`
  // would shadow lambda.Function's own after super() returns.
  constructor(scope: Construct, id: string, props: SluiceFunctionProps) {
    // Created before the function (and beside it) because lambda.Function takes them as props.
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
      code: bundledCode(props),
      handler: 'index.handler',
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
    });
  }
}

/**
 * The function's asset: its handler bundled into the asset's output directory by the local
 * esbuild (infra/bundling.ts says how, for this and for the bench alike), then `afterBundling`'s
 * commands run there. Hashed by that output, as NodejsFunction hashes its bundles. Docker is
 * never used: the local bundling always answers, and a failed build fails the synth.
 */
function bundledCode(props: SluiceFunctionProps): lambda.Code {
  return lambda.Code.fromAsset(repoRoot, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry('never-used'),
      // Never run (nor the image): it names the entry, because CDK keys its cache of staged
      // bundles by the source directory and these options, not by the local bundler.
      command: ['esbuild', path.relative(repoRoot, functionEntry(props.name))],
      local: {
        tryBundle(outputDir: string): boolean {
          buildSync(functionBundleOptions(functionEntry(props.name), outputDir));
          for (const command of props.afterBundling?.(outputDir) ?? []) execSync(command, { cwd: repoRoot, stdio: ['ignore', 2, 2] });
          return true;
        },
      },
    },
  });
}
