/**
 * The functions run on Node 24 in Lambda, so the handler tests run under Node 24 too,
 * from `npm test`, with a Node 24 that `npm ci` installs. Under that run this file also checks
 * that it really is Node 24 that runs it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runtime } from '../../infra/constructs/function.js';
import { repoRoot } from '../../infra/paths.js';
// @ts-expect-error a plain ES module without types
import { handlerTests, node24 } from '../../tools/node24/run.mjs';

const lambdaMajor = /^nodejs(\d+)\.x$/.exec(runtime.name)?.[1];
const major = (version: string) => version.replace(/^v/, '').split('.')[0];

describe("the handler tests run under the Lambda runtime's Node", () => {
  it("npm ci installs the Lambda runtime's Node apart from the project, and npm test runs the handler tests under it", () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(lambdaMajor).toBe('24');
    // prepare runs on `npm ci` and `npm install` in a clone, never in an app that installs the package
    expect(pkg.scripts.prepare).toContain('tools/node24/run.mjs install');
    expect(pkg.scripts.postinstall).toBeUndefined();
    expect(pkg.scripts.test).toContain('tools/node24/run.mjs test');
    // Never a `node` bin of the project's own: it would shadow the Node that runs npm scripts.
    expect(existsSync(join(repoRoot, 'node_modules', '.bin', 'node'))).toBe(false);
    if (process.platform === 'linux' && process.arch === 'x64') {
      expect(major(execFileSync(node24 as string, ['--version'], { encoding: 'utf8' }).trim())).toBe(lambdaMajor);
    }
    for (const file of handlerTests as string[]) expect(existsSync(join(repoRoot, file)), file).toBe(true);
  });

  it.runIf(process.env.SLUICE_EXPECT_NODE_MAJOR)('this run is on the Node it was started for', () => {
    expect(major(process.versions.node)).toBe(process.env.SLUICE_EXPECT_NODE_MAJOR);
  });
});
