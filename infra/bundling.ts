import { join } from 'node:path';
import { repoRoot } from './paths.js';

/**
 * How every Lambda bundle is built: the one definition that infra/constructs/function.ts
 * hands CDK's esbuild run and bench/bundles.ts hands esbuild's API, so what the bench
 * measures is what the deploy ships. Free of aws-cdk-lib, so the bench need not load it.
 */

/** Module replacements for the Lambda bundles. */
export const bundleAliases: Record<string, string> = {
  '@aws-sdk/credential-provider-node': join(repoRoot, 'infra/shims/credentials-from-env.ts'),
  '@smithy/core/event-streams': join(repoRoot, 'infra/shims/no-event-streams.ts'),
  '@aws-sdk/middleware-endpoint-discovery': join(repoRoot, 'infra/shims/no-endpoint-discovery.ts'),
  '@smithy/core/checksum': join(repoRoot, 'infra/shims/node-sha256.ts'),
  '@aws/lambda-invoke-store': join(repoRoot, 'infra/shims/invoke-store.ts'),
};

// ESM on Lambda: CommonJS dependencies bundled into an ES module still call `require`
// for Node built-ins, which ES modules do not have. The banner gives them one. The import
// is aliased so it cannot collide with a bundled module's own `createRequire` import.
const requireShim = "import { createRequire as __sluiceCreateRequire } from 'node:module';" + ' const require = __sluiceCreateRequire(import.meta.url);';

export const lambdaBundling = {
  format: 'esm',
  platform: 'node',
  /** The runtime's Node (infra/constructs/function.ts runs NODEJS_24_X). */
  target: 'node24',
  // Prefer each package's ES module build, so esbuild can tree-shake the SDK.
  mainFields: ['module', 'main'],
  banner: requireShim,
  minify: true,
  // Stack traces through the minified bundle point at the TypeScript sources; the mappings
  // are enough for that, embedding the sources only grows the zip.
  sourceMap: true,
  sourcesContent: false,
  // Bundle everything, the SDK v3 clients included: a pinned, tree-shaken SDK instead of
  // whatever version the runtime ships.
  external: [] as string[],
  alias: bundleAliases,
} as const;
