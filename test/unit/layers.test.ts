/**
 * lib/ imports one way: its folders (and its loose files) stand in layers, each importing only
 * those below it, type imports included. `npm run cycles` refuses a loop of files; this
 * refuses a loop of folders, such as a store module importing a message module that imports
 * the store back, which no single file loop shows.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';

const lib = resolve(repoRoot, 'lib');

/** lib/broker/settle.ts -> lib/broker; lib/clock.ts -> lib/clock.ts. */
const unitOf = (file: string) => {
  const parts = relative(repoRoot, file).split('/');
  return parts.length > 2 ? parts.slice(0, 2).join('/') : parts.join('/');
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.ts$/.test(e.name) && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every import of lib's own modules, static, dynamic or type-only, as unit -> unit -> the files that make it. */
function unitImports(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sources(lib)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolve(dirname(file), fileName).replace(/\.js$/, '.ts');
      if (!target.startsWith(lib + '/')) continue;
      const [from, to] = [unitOf(file), unitOf(target)];
      if (from === to) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      edges.set(to, [...(edges.get(to) ?? []), `${relative(repoRoot, file)} -> ${fileName}`]);
    }
  }
  return graph;
}

/** A loop of units, as the first import that makes each of its steps, or undefined. */
function findLoop(graph: Map<string, Map<string, string[]>>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (unit: string): string[] | undefined => {
    const at = path.indexOf(unit);
    if (at >= 0) return [...path.slice(at), unit].slice(0, -1).map((u, i, loop) => graph.get(u)!.get(loop[i + 1] ?? unit)![0]!);
    if (done.has(unit)) return undefined;
    path.push(unit);
    for (const next of graph.get(unit)?.keys() ?? []) {
      const loop = visit(next);
      if (loop) return loop;
    }
    path.pop();
    done.add(unit);
    return undefined;
  };
  for (const unit of graph.keys()) {
    const loop = visit(unit);
    if (loop) return loop;
  }
  return undefined;
}

describe('the layers of lib/', () => {
  it('no folder of lib/ imports, through any chain, a folder that imports it', () => {
    const graph = unitImports();
    expect(graph.get('lib/broker')?.has('lib/store')).toBe(true); // the graph is read at all
    expect(findLoop(graph)).toBeUndefined();
  });

  it('finds a loop where there is one', () => {
    const graph = new Map([
      ['lib/store', new Map([['lib/messages', ['lib/store/messages.ts -> ../messages/item.js']]])],
      ['lib/messages', new Map([['lib/store', ['lib/messages/item.ts -> ../store/keys.js']]])],
    ]);
    expect(findLoop(graph)).toEqual(['lib/store/messages.ts -> ../messages/item.js', 'lib/messages/item.ts -> ../store/keys.js']);
  });
});
