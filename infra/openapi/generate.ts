/**
 * `npm run openapi`: writes docs/openapi.json from the code (see document.ts).
 * `npm run openapi -- --check` only compares, and exits 1 when the file is out of date.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { documentFile, renderDocument } from './document.js';

const text = renderDocument();
const shown = relative(process.cwd(), documentFile);
let current: string | undefined;
try {
  current = readFileSync(documentFile, 'utf8');
} catch {
  current = undefined;
}

if (process.argv.includes('--check')) {
  if (current !== text) {
    console.error(`${shown} is out of date: run \`npm run openapi\``);
    process.exit(1);
  }
  console.log(`${shown} is up to date`);
} else if (current === text) {
  console.log(`${shown} is up to date`);
} else {
  mkdirSync(dirname(documentFile), { recursive: true });
  writeFileSync(documentFile, text);
  console.log(`wrote ${shown}`);
}
