import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runTokenCli } from '../../infra/cli/token.js';
import { parseAuthorizationHeader, verifySignature } from '../../lib/auth/index.js';

const NOW_MS = 1_800_000_000_500;

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  const code = runTokenCli(argv, env, NOW_MS, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('A1 token CLI', () => {
  it('A1 prints a token for --resource, --key-name and --key, valid for --ttl', () => {
    const { code, out, err } = run(['--resource', '/queues/a', '--key-name', 'n', '--key', 'the-key', '--ttl', '60']);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const token = parseAuthorizationHeader(out.trim());
    expect(token).toMatchObject({ resource: '/queues/a', keyName: 'n', expiry: 1_800_000_060 });
    expect(verifySignature(token, 'the-key', 1_800_000_059)).toBe(true);
  });

  it('A1 defaults --ttl to one hour', () => {
    const { out } = run(['--resource', 'https://h/', '--key-name', 'n', '--key', 'k']);
    expect(parseAuthorizationHeader(out.trim()).expiry).toBe(1_800_003_600);
  });

  it('A1 takes --connection-string, or SLUICE_CONNECTION_STRING, instead of a key', () => {
    const cs = 'Endpoint=http://localhost:4280/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=k+/=';
    for (const { argv, env } of [
      { argv: ['--connection-string', cs], env: {} },
      { argv: [], env: { SLUICE_CONNECTION_STRING: cs } },
    ]) {
      const { code, out } = run(argv, env);
      expect(code).toBe(0);
      const token = parseAuthorizationHeader(out.trim());
      expect(token).toMatchObject({ resource: 'http://localhost:4280/', keyName: 'RootManageSharedAccessKey' });
      expect(verifySignature(token, 'k+/=', NOW_MS / 1000)).toBe(true);
    }
    const scoped = run(['--resource', '/queues/a'], { SLUICE_CONNECTION_STRING: cs });
    expect(parseAuthorizationHeader(scoped.out.trim()).resource).toBe('/queues/a');
  });

  it('A1 explicit key flags win over SLUICE_CONNECTION_STRING', () => {
    const { out } = run(['--resource', '/', '--key-name', 'mine', '--key', 'k'], {
      SLUICE_CONNECTION_STRING: 'Endpoint=sb://h/;SharedAccessKeyName=env;SharedAccessKey=e',
    });
    expect(parseAuthorizationHeader(out.trim()).keyName).toBe('mine');
  });

  it.each([
    [['--resource', '/queues/a', '--key-name', 'n'], 'give --key-name and --key'],
    [['--key-name', 'n', '--key', 'k'], 'give --resource'],
    [['--connection-string', 'Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=k', '--key', 'k'], 'not both'],
    [['--connection-string', 'Endpoint=sb://h/;SharedAccessKeyName=n'], 'no SharedAccessKey'],
    [['--resource', '/', '--key-name', 'n', '--key', 'k', '--ttl', '0'], 'positive'],
    [['--resource', '/', '--key-name', 'n', '--key', 'k', '--ttl', 'soon'], 'whole number'],
    [['--bogus'], 'unknown option'],
  ])('A4 %j fails with a message that does not show the key', (argv, message) => {
    const { code, out, err } = run(argv);
    expect(code).not.toBe(0);
    expect(out).toBe('');
    expect(err).toContain(message);
    expect(err).not.toMatch(/SharedAccessKey=k|--key k\b/);
  });

  it('A1 runs as `sluice token` (npm run token)', () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const result = spawnSync(process.execPath, ['bin/sluice.js', 'token', '--resource', '/queues/a', '--key-name', 'n', '--key', 'k'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, SLUICE_CONNECTION_STRING: '' },
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^SharedAccessSignature sr=%2Fqueues%2Fa&sig=[^&]+&se=\d+&skn=n\n$/);
  });
});
