#!/usr/bin/env node
/**
 * The `sluice` command as one ESM file, dist/cli/sluice.js (run by bin/sluice.js), built by
 * `npm run build:cli` (part of `prepare`, so `npm install` in a clone and `npm pack` make it).
 * Everything the CLI imports is bundled, so it starts without compiling TypeScript and needs
 * no package at run time, not even its own dependencies. Plain JavaScript: it runs before
 * any TypeScript tooling is known to be installed.
 */
import { build } from 'esbuild';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
export const cliBundle = join(repoRoot, 'dist/cli/sluice.js');

/**
 * Builds the CLI into `outfile`. The file is written whole and then renamed into place, so a
 * process starting the CLI meanwhile (a parallel test, `npm pack`'s prepare) never reads half.
 */
export async function buildCli(outfile = cliBundle) {
  const result = await build({
    entryPoints: [join(repoRoot, 'infra/cli/main.ts')],
    absWorkingDir: repoRoot,
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    mainFields: ['module', 'main'],
    // Bundled CommonJS dependencies (ws, commander) call `require`, which ESM lacks.
    banner: { js: "import { createRequire as __sluiceCreateRequire } from 'node:module'; const require = __sluiceCreateRequire(import.meta.url);" },
    legalComments: 'none',
    outfile,
    logLevel: 'error',
  });
  const [file] = result.outputFiles;
  mkdirSync(dirname(outfile), { recursive: true });
  const partial = `${outfile}.${process.pid}.tmp`;
  writeFileSync(partial, file.contents);
  renameSync(partial, outfile);
  return { outfile, bytes: file.contents.byteLength };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildCli();
