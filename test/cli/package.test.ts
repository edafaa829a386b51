/**
 * The package installs: `npm pack` (its `prepare` builds dist/), then the tarball installed into
 * an empty app with production dependencies only, as `npm install sluice` would leave it. There
 * the client is imported and type-checked as `sluice/client` and talks to a local runtime, and
 * `npx sluice` runs.
 *
 * Offline and fast: the tarball is unpacked to node_modules/sluice (a copy: the package's own
 * files resolve their imports from the app's node_modules only), each production dependency the
 * packed package.json declares is a link to the repository's installed copy, and `npm rebuild`
 * does what `npm install` does after unpacking (links `bin`, runs install scripts), so nothing
 * touches the network. A dev dependency the package needed would be missing in the app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { startTestRuntime } from '../support/runtime.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

interface Packed {
  filename: string;
  version: string;
  files: { path: string }[];
}

let work: string;
let app: string;
let packed: Packed;
let runtime: LocalRuntime;

/** The app's environment: offline npm, and no PATH entry into the repository (its node_modules/.bin). */
function appEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
  env.PATH = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => !p.startsWith(root) && !p.startsWith(root.replace(/\/$/, '')))
    .join(delimiter);
  delete env.SLUICE_CONNECTION_STRING;
  delete env.NODE_OPTIONS;
  return env;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-pack-'));
  const startingRuntime = startTestRuntime('pack');
  // As a maintainer packs it: prepare builds the client, its types and the CLI first.
  const { stdout } = await run(npm, ['pack', '--json', '--pack-destination', work], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  packed = (JSON.parse(stdout.slice(stdout.search(/^\[$/m))) as Packed[])[0]!; // after the build scripts' own lines

  app = join(work, 'app');
  const installed = join(app, 'node_modules', 'sluice');
  mkdirSync(installed, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { sluice: `file:../${packed.filename}` } }, null, 2),
  );
  execFileSync('tar', ['-xzf', join(work, packed.filename), '-C', installed, '--strip-components=1']);
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const name of Object.keys(pkg.dependencies ?? {})) {
    const from = join(root, 'node_modules', name);
    expect(existsSync(from), `production dependency ${name} is installed in the repository`).toBe(true);
    mkdirSync(dirname(join(app, 'node_modules', name)), { recursive: true });
    symlinkSync(from, join(app, 'node_modules', name), 'dir');
  }
  await run(npm, ['rebuild', '--offline', '--no-audit', '--no-fund'], { cwd: app, env: appEnv() });
  runtime = await startingRuntime;
}, 240_000);

afterAll(async () => {
  await runtime?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('holds the built client, its types and the CLI, and no sources, tests, benches or local data', () => {
    const paths = packed.files.map((f) => f.path).sort();
    for (const needed of ['package.json', 'bin/sluice.js', 'dist/cli/sluice.js', 'dist/client/index.js', 'dist/types/client/index.d.ts']) {
      expect(paths).toContain(needed);
    }
    // The top-level documents the repository has travel with it.
    for (const doc of ['README.md', 'LICENSE', 'CHANGELOG.md']) if (existsSync(join(root, doc))) expect(paths).toContain(doc);
    const shipped = /^(package\.json|README\.md|LICENSE|CHANGELOG\.md|bin\/sluice\.js|dist\/(cli|client|types)\/.+|docs\/.+)$/;
    expect(paths.filter((p) => !shipped.test(p))).toEqual([]);
    const forbidden =
      /(^|\/)(test|tests|bench|samples|\.sluice|node_modules|cdk\.out|coverage|infra|functions|lib|tools|explorer)\/|\.test\.|bench-results|\.log$/;
    expect(paths.filter((p) => forbidden.test(p))).toEqual([]);
  });

  it('installs with production dependencies only: import { ServiceBusClient } from "sluice/client" sends and receives', async () => {
    const script = `
      import { ServiceBusAdministrationClient, ServiceBusClient } from 'sluice/client';
      const cs = process.argv[2];
      await new ServiceBusAdministrationClient(cs).createQueue('from-package');
      const client = new ServiceBusClient(cs);
      await client.createSender('from-package').sendMessages({ body: { hello: 'package' } });
      const receiver = client.createReceiver('from-package', { receiveMode: 'receiveAndDelete' });
      const [message] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
      console.log(JSON.stringify(message.body));
      await client.close();
    `;
    writeFileSync(join(app, 'use-client.mjs'), script);
    const { stdout } = await run(process.execPath, ['use-client.mjs', runtime.connectionString], { cwd: app, env: appEnv() });
    expect(JSON.parse(stdout)).toEqual({ hello: 'package' });
  });

  it("the client's types resolve from the installed package (tsc, strict, no lib check skipped)", async () => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: [],
          skipLibCheck: false,
        },
        files: ['check.ts'],
      }),
    );
    writeFileSync(
      join(app, 'check.ts'),
      `import { ServiceBusClient, ServiceBusError, type ServiceBusReceivedMessage } from 'sluice/client';
const client = new ServiceBusClient('Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=a2V5');
const sent: Promise<void> = client.createSender('q').sendMessages({ body: 'hi', subject: 'greeting' });
const received: Promise<ServiceBusReceivedMessage[]> = client.createReceiver('q').receiveMessages(1);
const isError = (e: unknown): boolean => e instanceof ServiceBusError && e.code === 'MessagingEntityNotFound';
// Types, not \`any\`: each line below must be an error, or tsc reports an unused directive.
// @ts-expect-error no such method
client.createSenderr('q');
// @ts-expect-error maxMessageCount is a number
void client.createReceiver('q').receiveMessages('1');
export { sent, received, isError };
`,
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app, env: appEnv() }).catch((e: { stdout: string; code: number }) => e);
    expect(result.stdout).toBe('');
  });

  it('npx sluice runs from the installed package: --help, --version, and a command against the runtime', async () => {
    const env = appEnv();
    const [help, version, list] = await Promise.all([
      run(npx, ['sluice', '--help'], { cwd: app, env }),
      run(npx, ['sluice', '--version'], { cwd: app, env }),
      run(npx, ['sluice', 'queue', 'list', '--json', '--connection-string', runtime.connectionString], { cwd: app, env }),
    ]);
    expect(help.stdout).toMatch(/^Usage: sluice /);
    expect(version.stdout.trim()).toBe(packed.version);
    expect(Array.isArray(JSON.parse(list.stdout))).toBe(true);
  });
});
