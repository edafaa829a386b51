import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';

const run = promisify(execFile);
const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

interface CdkJson {
  app: string;
  context?: Record<string, unknown>;
}

/**
 * Runs the app the way the CDK CLI does for `cdk synth`: the `app` command from cdk.json,
 * in the repository root, told where to write by CDK_OUTDIR and given the context (cdk.json's
 * plus `-c` values) in CDK_CONTEXT_JSON. No AWS account, region or credentials are set.
 */
async function synthApp(context: Record<string, unknown>): Promise<string> {
  const cdkJson = JSON.parse(readFileSync(path.join(repoRoot, 'cdk.json'), 'utf8')) as CdkJson;
  const outdir = mkdtempSync(path.join(tmpdir(), 'sluice-synth-'));
  outdirs.push(outdir);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CDK_OUTDIR: outdir,
    CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJson.context, ...context }),
  };
  for (const key of ['CDK_DEFAULT_ACCOUNT', 'CDK_DEFAULT_REGION', 'AWS_REGION', 'AWS_DEFAULT_REGION']) delete env[key];
  await run('sh', ['-c', cdkJson.app], { cwd: repoRoot, env, maxBuffer: 16 * 1024 * 1024 });
  return outdir;
}

interface Manifest {
  artifacts: Record<string, { type: string; environment?: string; properties?: { templateFile?: string; stackName?: string } }>;
}

function stacksIn(outdir: string) {
  const manifest = JSON.parse(readFileSync(path.join(outdir, 'manifest.json'), 'utf8')) as Manifest;
  return Object.entries(manifest.artifacts)
    .filter(([, a]) => a.type === 'aws:cloudformation:stack')
    .map(([id, a]) => ({
      id,
      // The manifest leaves stackName out when it equals the artifact id.
      stackName: a.properties?.stackName ?? id,
      environment: a.environment,
      templateFile: a.properties?.templateFile ?? '',
    }));
}

function resourceTypes(outdir: string, templateFile: string): string[] {
  const template = JSON.parse(readFileSync(path.join(outdir, templateFile), 'utf8')) as {
    Resources: Record<string, { Type: string }>;
  };
  return Object.values(template.Resources).map((r) => r.Type);
}

describe('infra/app.ts as `cdk synth` runs it', () => {
  it('bundles the six handlers (five and the bootstrap) into ES modules that load in plain Node', async () => {
    // act: the real thing, esbuild bundling included (local esbuild, no Docker)
    const outdir = await synthApp({});

    // assess: one environment-agnostic stack named Sluice
    const stacks = stacksIn(outdir);
    expect(stacks.map((s) => [s.id, s.stackName])).toEqual([['Sluice', 'Sluice']]);
    expect(stacks[0]!.environment).toBe('aws://unknown-account/unknown-region');
    const types = resourceTypes(outdir, stacks[0]!.templateFile);
    // Ours, plus the custom resource provider framework's own function.
    expect(types.filter((t) => t === 'AWS::Lambda::Function')).toHaveLength(7);

    // Each Lambda asset is an ESM bundle whose module body runs without error (the
    // `require` banner, the bundled SDK) and exports `handler`.
    const assets = JSON.parse(readFileSync(path.join(outdir, 'Sluice.assets.json'), 'utf8')) as {
      files: Record<string, { source: { path: string; packaging?: string } }>;
    };
    const zips = Object.values(assets.files).filter((f) => f.source.packaging === 'zip');
    // The framework's asset is CDK's prebuilt CommonJS code; ours are the esbuild bundles.
    expect(zips).toHaveLength(7);
    const bundles = zips.map((f) => path.join(outdir, f.source.path, 'index.mjs')).filter((file) => existsSync(file));
    expect(bundles).toHaveLength(6);
    const probe = `
      const results = [];
      for (const file of JSON.parse(process.argv[1])) {
        const mod = await import(file);
        results.push(typeof mod.handler);
      }
      console.log(JSON.stringify(results));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe, JSON.stringify(bundles.map((b) => pathToFileURL(b).href))], {
      env: { ...process.env, TABLE_NAME: 'unused', AWS_REGION: 'us-east-1' },
    });
    expect(JSON.parse(stdout)).toEqual(['function', 'function', 'function', 'function', 'function', 'function']);
  }, 240_000);

  it('names the stack from context stackName', async () => {
    // act
    const outdir = await synthApp({ stackName: 'SluiceStaging', 'aws:cdk:bundling-stacks': [] });

    // assess
    expect(stacksIn(outdir).map((s) => [s.id, s.stackName])).toEqual([['SluiceStaging', 'SluiceStaging']]);
  }, 240_000);
});
