#!/usr/bin/env node
// The `sluice` command (package.json "bin"). It runs the CLI's bundle, dist/cli/sluice.js, made
// from infra/cli/main.ts by `npm run build:cli` (part of `prepare`: `npm install` in a clone and
// `npm pack` build it; the published package ships it). The bundle holds every dependency, so
// nothing is compiled at start and an app that installed Sluice without dev dependencies runs it.
let cli;
try {
  cli = await import('../dist/cli/sluice.js');
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/cli/sluice.js')) throw error;
  process.stderr.write('error: the sluice CLI is not built; run `npm run build:cli` (or `npm install`) in the Sluice folder\n');
  process.exit(1);
}
await cli.main();
