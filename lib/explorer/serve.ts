/**
 * Serving Sluice Explorer's static files: the same answers from the deployed api
 * function and from the local runtime. Pure apart from `readExplorerAssets`.
 *
 * The page talks only to its own origin's public HTTP API, so the policy allows nothing
 * else: scripts and styles from files on this origin (no inline script, no style
 * attributes), requests to this origin, no frames, no plugins. Trusted Types are required
 * with no policy, so the browser itself refuses any string-to-HTML sink (innerHTML,
 * outerHTML, document.write): message bodies can only ever become text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const explorerPrefix = '/explorer';

export interface ExplorerAsset {
  body: string;
  contentType: string;
  /** Content-addressed names are cached for a year; the page itself is revalidated. */
  immutable: boolean;
}

/** Keyed by file name; `index.html` is the page at `/explorer`. */
export type ExplorerAssets = ReadonlyMap<string, ExplorerAsset>;

export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

export const securityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy': contentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

/**
 * `/explorer...`, and `/` when a browser asks for a page: the address `npm start` prints
 * then opens the explorer instead of a 401 in JSON. API clients never ask for HTML.
 */
export function isExplorerPath(path: string, accept = ''): boolean {
  return path === explorerPrefix || path.startsWith(`${explorerPrefix}/`) || (path === '/' && /\btext\/html\b/i.test(accept));
}

export interface ExplorerAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export function contentTypeOf(file: string): string {
  const dot = file.lastIndexOf('.');
  return contentTypes[dot < 0 ? '' : file.slice(dot)] ?? 'application/octet-stream';
}

/** A name with a content hash (`explorer-1a2b3c4d.js`) never changes meaning. */
export const isHashedName = (file: string) => /-[0-9A-Za-z]{8,}\.(js|css)$/.test(file);

/** The answer to a GET or HEAD under `/explorer`; no authorization: these files hold no data. */
export function explorerAnswer(method: string, path: string, assets: ExplorerAssets): ExplorerAnswer {
  const text = (statusCode: number, message: string, extra: Record<string, string> = {}): ExplorerAnswer => ({
    statusCode,
    headers: { ...securityHeaders, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...extra },
    body: message,
  });
  const m = method.toUpperCase();
  if (path === '/')
    return {
      statusCode: 302,
      headers: { ...securityHeaders, location: `${explorerPrefix}`, 'cache-control': 'no-store', 'content-type': 'text/plain; charset=utf-8' },
      body: '',
    };
  if (m !== 'GET' && m !== 'HEAD') return text(405, `${method} is not allowed on ${explorerPrefix}; use GET`, { allow: 'GET, HEAD' });
  const rest = path.slice(explorerPrefix.length).replace(/^\/+/, '');
  const name = rest === '' || rest === 'index.html' ? 'index.html' : rest;
  const asset = /^[\w.-]+$/.test(name) ? assets.get(name) : undefined;
  if (!asset) return text(404, `no file ${path}`);
  return {
    statusCode: 200,
    headers: {
      ...securityHeaders,
      'content-type': asset.contentType,
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    },
    body: m === 'HEAD' ? '' : asset.body,
  };
}

/** Reads a directory written by `infra/explorer/build.ts` (the deployed function's copy). */
export function readExplorerAssets(dir: string): ExplorerAssets {
  const assets = new Map<string, ExplorerAsset>();
  for (const file of readdirSync(dir)) {
    if (file.endsWith('.map')) continue;
    assets.set(file, { body: readFileSync(join(dir, file), 'utf8'), contentType: contentTypeOf(file), immutable: isHashedName(file) });
  }
  return assets;
}
