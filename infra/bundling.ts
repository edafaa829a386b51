import { join } from 'node:path';
import { repoRoot } from './paths.js';

/**
 * How every Lambda bundle is built: the one definition that infra/constructs/function.ts and
 * bench/bundles.ts both hand esbuild's API (`functionBundleOptions`), so what the bench
 * measures is what the deploy ships. Free of aws-cdk-lib, so the bench need not load it.
 */

/** Module replacements for the Lambda bundles. */
export const bundleAliases: Record<string, string> = {
  '@aws-sdk/credential-provider-node': join(repoRoot, 'infra/shims/credentials-from-env.ts'),
  '@smithy/core/event-streams': join(repoRoot, 'infra/shims/no-event-streams.ts'),
  '@aws-sdk/middleware-endpoint-discovery': join(repoRoot, 'infra/shims/no-endpoint-discovery.ts'),
  '@smithy/core/checksum': join(repoRoot, 'infra/shims/node-sha256.ts'),
  '@aws/lambda-invoke-store': join(repoRoot, 'infra/shims/invoke-store.ts'),
  bowser: join(repoRoot, 'infra/shims/no-bowser.ts'),
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

/**
 * esbuild's options for one module, bundled as a Lambda function's modules are, into one file
 * (a probe of the bundled dependencies, a what-if build); the caller names `outfile`.
 */
export function bundleOptions(entry: string) {
  const b = lambdaBundling;
  return {
    entryPoints: [entry],
    absWorkingDir: repoRoot,
    bundle: true,
    format: b.format,
    platform: b.platform,
    target: b.target,
    mainFields: [...b.mainFields],
    alias: b.alias,
    banner: { js: b.banner },
    minify: b.minify,
    sourcemap: b.sourceMap,
    sourcesContent: b.sourcesContent,
    external: [...b.external],
    logLevel: 'silent' as const,
  };
}

/** Where a function's bundle puts what it loads only when first used, beside `index.mjs`. */
export const LAZY_CHUNKS_DIR = 'chunks';

/**
 * A function's bundle as deployed (infra/constructs/function.ts) and measured
 * (bench/bundles.ts): `index.mjs` in `outdir`, and in `chunks/` what its dynamic imports load
 * when first used (the api's Service Bus protocols), with the code they share with it, so a
 * cold start loads only `index.mjs` and the chunks it imports statically.
 */
export function functionBundleOptions(entry: string, outdir: string) {
  return {
    ...bundleOptions(entry),
    splitting: true,
    outdir,
    entryNames: 'index',
    chunkNames: `${LAZY_CHUNKS_DIR}/[name]-[hash]`,
    outExtension: { '.js': '.mjs' },
  };
}
