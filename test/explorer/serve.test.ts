import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildExplorer, explorerBundlingCommands } from '../../infra/explorer/build.js';
import { contentSecurityPolicy, explorerAnswer, isExplorerPath, readExplorerAssets } from '../../lib/explorer/serve.js';

describe('Sluice Explorer files', () => {
  it('builds one page, one hashed script and one hashed style sheet, all from this origin', async () => {
    const assets = await buildExplorer();
    const names = [...assets.keys()].sort();
    expect(names).toHaveLength(3);
    expect(names.some((n) => /^explorer-\w{10}\.js$/.test(n))).toBe(true);
    expect(names.some((n) => /^explorer-\w{10}\.css$/.test(n))).toBe(true);
    const page = assets.get('index.html')!.body;
    for (const name of names.filter((n) => n !== 'index.html')) expect(page).toContain(`/explorer/${name}`);
    // No inline script or style anywhere: the CSP would refuse it.
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page).not.toMatch(/\sstyle=|<style/);
    // Nothing the page loads comes from another origin.
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//);
    const script = [...assets].find(([n]) => n.endsWith('.js'))![1].body;
    expect(script).not.toMatch(/\.innerHTML\s*=|insertAdjacentHTML|document\.write/);
  });

  it('answers with a strict Content-Security-Policy and the other security headers', async () => {
    const assets = await buildExplorer();
    for (const path of ['/explorer', '/explorer/', '/explorer/index.html']) {
      const a = explorerAnswer('GET', path, assets);
      expect(a.statusCode).toBe(200);
      expect(a.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(a.headers['content-security-policy']).toBe(contentSecurityPolicy);
      expect(a.headers['x-content-type-options']).toBe('nosniff');
      expect(a.headers['x-frame-options']).toBe('DENY');
      expect(a.headers['cache-control']).toBe('no-cache');
    }
    expect(contentSecurityPolicy).not.toContain('unsafe-inline');
    expect(contentSecurityPolicy).not.toContain('unsafe-eval');
    expect(contentSecurityPolicy).toContain("script-src 'self'");
    expect(contentSecurityPolicy).toContain("require-trusted-types-for 'script'");
    const script = [...assets.keys()].find((n) => n.endsWith('.js'))!;
    expect(explorerAnswer('GET', `/explorer/${script}`, assets).headers['cache-control']).toContain('immutable');
    expect(explorerAnswer('HEAD', '/explorer', assets).body).toBe('');
    expect(explorerAnswer('GET', '/explorer/nothing.js', assets).statusCode).toBe(404);
    expect(explorerAnswer('GET', '/explorer/../package.json', assets).statusCode).toBe(404);
    expect(explorerAnswer('POST', '/explorer', assets).statusCode).toBe(405);
    expect(isExplorerPath('/explorers')).toBe(false);
    // The printed address opens the explorer in a browser; API clients still get the API.
    expect(isExplorerPath('/', 'text/html,application/xhtml+xml,*/*;q=0.8')).toBe(true);
    expect(isExplorerPath('/', 'application/json')).toBe(false);
    expect(isExplorerPath('/')).toBe(false);
    expect(explorerAnswer('GET', '/', assets)).toMatchObject({ statusCode: 302, headers: { location: '/explorer' } });
    expect(isExplorerPath('/queues/explorer')).toBe(false);
  });

  it('the api bundle gets the same files: the bundling hook writes them, the function reads them back', async () => {
    const out = mkdtempSync(join(tmpdir(), 'sluice explorer bundle '));
    try {
      for (const command of explorerBundlingCommands(out)) execFileSync('bash', ['-c', command], { stdio: 'pipe', timeout: 120_000 });
      const read = readExplorerAssets(join(out, 'explorer'));
      const built = await buildExplorer();
      expect([...read.keys()].sort()).toEqual([...built.keys()].sort());
      for (const [name, asset] of built) expect(read.get(name)).toEqual(asset);
      expect(explorerAnswer('GET', '/explorer', read).body).toBe(built.get('index.html')!.body);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
