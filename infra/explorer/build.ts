/**
 * Builds Sluice Explorer (explorer/) into three files: the page, one script and one style
 * sheet, the last two named by their content hash. Everything is bundled here, at
 * `npm start` or at deploy; the page downloads nothing from anywhere else at run time.
 *
 *   tsx infra/explorer/build.ts --out DIR     (what the api function's bundling runs)
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { contentTypeOf, type ExplorerAsset, type ExplorerAssets, explorerPrefix } from '../../lib/explorer/serve.js';
import { repoRoot } from '../paths.js';

const sourceDir = join(repoRoot, 'explorer');

const hashed = (stem: string, ext: string, body: string) =>
  `${stem}-${createHash('sha256').update(body).digest('base64url').replace(/[-_]/g, '').slice(0, 10)}${ext}`;

export async function buildExplorer(): Promise<ExplorerAssets> {
  const result = await build({
    entryPoints: [join(sourceDir, 'src', 'main.ts')],
    absWorkingDir: repoRoot,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    minify: true,
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const script = result.outputFiles[0]!.text;
  const style = readFileSync(join(sourceDir, 'explorer.css'), 'utf8');
  const scriptName = hashed('explorer', '.js', script);
  const styleName = hashed('explorer', '.css', style);
  const page = readFileSync(join(sourceDir, 'index.html'), 'utf8')
    .replace('%SCRIPT%', `${explorerPrefix}/${scriptName}`)
    .replace('%STYLE%', `${explorerPrefix}/${styleName}`);
  const asset = (name: string, body: string, immutable: boolean): [string, ExplorerAsset] => [name, { body, contentType: contentTypeOf(name), immutable }];
  return new Map([asset('index.html', page, false), asset(scriptName, script, true), asset(styleName, style, true)]);
}

export async function writeExplorer(dir: string): Promise<string[]> {
  const assets = await buildExplorer();
  mkdirSync(dir, { recursive: true });
  for (const [name, { body }] of assets) writeFileSync(join(dir, name), body);
  return [...assets.keys()];
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** What the api function's bundling runs to put the files in its zip (`<outputDir>/explorer`). */
export function explorerBundlingCommands(outputDir: string): string[] {
  const tsx = join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const script = join(repoRoot, 'infra', 'explorer', 'build.ts');
  return [[process.execPath, tsx, script, '--out', join(outputDir, 'explorer')].map(quote).join(' ')];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--out');
  const out = at > 0 ? process.argv[at + 1] : undefined;
  if (!out) {
    console.error('usage: tsx infra/explorer/build.ts --out DIR');
    process.exit(2);
  }
  const files = await writeExplorer(out);
  console.log(`Sluice Explorer: ${files.join(', ')} in ${out}`);
}
