/**
 * Scenario 4: each Lambda function bundled with the options of infra/bundling.ts, the ones
 * infra/constructs/function.ts has CDK bundle it with (esbuild: bundle, minify, ESM, platform
 * node, main fields module,main, the require banner, source maps without sources, nothing
 * external: the AWS SDK is in the bundle), its size, what fills it, and how long a fresh
 * `node` takes to import it.
 */
import { build, type Metafile, type Plugin } from 'esbuild';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { handlerEntry, type FunctionName } from '../infra/paths.js';
import { median } from './harness.js';
import { bundleOptions, functionBundleOptions } from '../infra/bundling.js';

const run = promisify(execFile);

export const functionNames: FunctionName[] = ['api', 'stream', 'sweeper', 'reaper', 'notify'];

export interface BuiltBundle {
  file: string;
  /** What a cold start loads: `index.mjs` and the chunks it imports statically. */
  bytes: number;
  /** What the function's dynamic imports load when first used (the api's Service Bus protocols). */
  lazyBytes: number;
  sourceMapBytes: number;
  /** Largest contributors to the minified output, by package. */
  topInputs: { name: string; bytes: number }[];
}

export interface BundleResult extends BuiltBundle {
  /** Cold import in a fresh node process, with --enable-source-maps as deployed (NODE_OPTIONS), median wall ms. */
  importMs: number;
  importRuns: number[];
  /** CPU time (user + system) of the same imports, median ms: less disturbed by other load on the machine. */
  importCpuMs: number;
  /** Wall ms without source maps. */
  importMsNoSourceMaps: number;
}

/**
 * What-if builds of one function, to size the suggestions (not what is deployed, and not
 * run: only their size is measured):
 * - `without the XML reader`: @rgrove/parse-xml, the reader of the Atom protocol's bodies
 *   (lib/protocols/xml.ts), left out: what the reader costs the api bundle.
 */
export interface Variant {
  name: string;
  bytes: number;
  importMs?: number;
  importCpuMs?: number;
}

const noXmlReader: Plugin = {
  name: 'what-if-no-xml-reader',
  setup(b) {
    b.onResolve({ filter: /^@rgrove\/parse-xml$/ }, () => ({ path: '@rgrove/parse-xml', namespace: 'what-if' }));
    b.onLoad({ filter: /.*/, namespace: 'what-if' }, () => ({
      contents: 'export function parseXml() {}\nexport class XmlElement {}\nexport class XmlError {}\nexport class XmlText {}',
      loader: 'js',
    }));
  },
};

function packageOf(input: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (m) return m[1]!;
  const dir = input.split('/')[0];
  return dir === 'lib' || dir === 'functions' ? `${dir}/ (Sluice)` : input;
}

function topInputs(outputs: Metafile['outputs'][string][]): BuiltBundle['topInputs'] {
  const byPackage = new Map<string, number>();
  for (const output of outputs) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const key = packageOf(input);
      byPackage.set(key, (byPackage.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...byPackage]
    .map(([name, bytes]) => ({ name, bytes }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 8);
}

/** The outputs a cold start loads: the entry and what it imports statically, transitively (metafile paths). */
export function coldStartOutputs(meta: Metafile): string[] {
  const entry = Object.keys(meta.outputs).find((name) => meta.outputs[name]!.entryPoint !== undefined)!;
  const loaded = new Set<string>([entry]);
  for (const name of loaded) {
    for (const i of meta.outputs[name]!.imports) if (i.kind === 'import-statement' && i.path in meta.outputs) loaded.add(i.path);
  }
  return [...loaded];
}

export const bundleDir = join(tmpdir(), `sluice-bench-bundles-${process.pid}`);

export async function buildBundles(): Promise<{ built: Record<FunctionName, BuiltBundle>; buildMs: number }> {
  const started = performance.now();
  rmSync(bundleDir, { recursive: true, force: true });
  const built = {} as Record<FunctionName, BuiltBundle>;
  for (const name of functionNames) built[name] = await buildBundle(name, join(bundleDir, name));
  return { built, buildMs: performance.now() - started };
}

/** One function's bundle, `dir/index.mjs`, its chunks and their source maps, as the deploy builds it. */
export async function buildBundle(name: FunctionName, dir: string): Promise<BuiltBundle> {
  mkdirSync(dir, { recursive: true });
  const { metafile } = await build({ ...functionBundleOptions(handlerEntry(name), dir), metafile: true });
  const code = Object.keys(metafile.outputs).filter((o) => o.endsWith('.mjs'));
  const cold = coldStartOutputs(metafile);
  const size = (outputs: string[]) => outputs.reduce((sum, o) => sum + metafile.outputs[o]!.bytes, 0);
  return {
    file: join(dir, 'index.mjs'),
    bytes: size(cold),
    lazyBytes: size(code.filter((o) => !cold.includes(o))),
    sourceMapBytes: size(cold.map((o) => `${o}.map`).filter((o) => o in metafile.outputs)),
    topInputs: topInputs(cold.map((o) => metafile.outputs[o]!)),
  };
}

/** The what-if builds of `name` (see Variant). */
export async function buildVariants(name: FunctionName): Promise<Variant[]> {
  const out: Variant[] = [];
  const variants: [string, Plugin[]][] = [['without the XML reader', [noXmlReader]]];
  for (const [label, plugins] of variants) {
    const dir = join(bundleDir, `${name}-${label.replace(/\W+/g, '-')}`);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'index.mjs');
    await build({ ...bundleOptions(handlerEntry(name)), outfile: file, plugins });
    out.push({ name: label, bytes: statSync(file).size });
  }
  return out;
}

async function importOnce(file: string, sourceMaps: boolean): Promise<{ wall: number; cpu: number }> {
  const script =
    'const c = process.cpuUsage(); const t = performance.now();' +
    `await import(${JSON.stringify(pathToFileURL(file).href)});` +
    'const u = process.cpuUsage(c);' +
    'process.stdout.write(JSON.stringify({ wall: performance.now() - t, cpu: (u.user + u.system) / 1000 }));';
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  env.TABLE_NAME = 'sluice';
  const args = [...(sourceMaps ? ['--enable-source-maps'] : []), '--no-warnings', '--input-type=module', '-e', script];
  const { stdout } = await run(process.execPath, args, { env, cwd: tmpdir(), timeout: 30_000 });
  return JSON.parse(stdout.trim()) as { wall: number; cpu: number };
}

async function timeImport(file: string, runs: number): Promise<{ wall: number; cpu: number; walls: number[] }> {
  await importOnce(file, true); // the file is in the page cache from here on, as on a warm host
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await importOnce(file, true);
    walls.push(r.wall);
    cpus.push(r.cpu);
  }
  return { wall: median(walls), cpu: median(cpus), walls };
}

/** Median cold import time of each bundle, `runs` fresh processes each way, one at a time. */
export async function timeImports(built: Record<FunctionName, BuiltBundle>, runs = 5): Promise<Record<FunctionName, BundleResult>> {
  const out = {} as Record<FunctionName, BundleResult>;
  for (const name of functionNames) {
    const b = built[name];
    const withMaps = await timeImport(b.file, runs);
    const without: number[] = [];
    for (let i = 0; i < runs; i++) without.push((await importOnce(b.file, false)).wall);
    out[name] = { ...b, importMs: withMaps.wall, importRuns: withMaps.walls, importCpuMs: withMaps.cpu, importMsNoSourceMaps: median(without) };
  }
  return out;
}

export const removeBundles = () => rmSync(bundleDir, { recursive: true, force: true });
