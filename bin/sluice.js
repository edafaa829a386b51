#!/usr/bin/env node
// The `sluice` command (package.json "bin"). Sluice is written in TypeScript and ships no
// build: this shim loads tsx's loader in-process (one Node process, no second spawn) and runs
// infra/cli/main.ts. tsx is installed by `npm install` in a clone of this repository.
import { fileURLToPath } from 'node:url';

let register;
try {
  ({ register } = await import('tsx/esm/api'));
} catch {
  process.stderr.write('error: sluice needs tsx to run its TypeScript; run npm install in the Sluice folder\n');
  process.exit(1);
}
register();
const { main } = await import(fileURLToPath(new URL('../infra/cli/main.ts', import.meta.url)));
await main();
