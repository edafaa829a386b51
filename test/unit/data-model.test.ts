/**
 * docs/design.md's item-kind table (section "Data model") and lib/store/keys.ts name the same
 * key prefixes: every prefix keys.ts exports appears in the table, and every prefix the table
 * shows (a `pk`, an `sk` of the form `prefix/<...>`, an index partition) is exported by keys.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../infra/paths.js';
import * as keys from '../../lib/store/keys.js';

const design = readFileSync(join(repoRoot, 'docs/design.md'), 'utf8');

/** The rows of the table under "## Data model", cells split on unescaped pipes. */
function tableRows(): string[][] {
  const section = design.slice(design.indexOf('## Data model'));
  const lines = section.slice(0, section.indexOf('\n## ', 1) === -1 ? undefined : section.indexOf('\n## ', 1)).split('\n');
  const rows = lines
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  return rows.slice(2); // the header and the separator
}

const codeSpans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
/** The literal start of a key shape: `msg/<eid>/...` → `msg/`; a literal key is its own prefix. */
const literalPrefix = (shape: string) => shape.split('<')[0]!;

function tablePrefixes(): Set<string> {
  const out = new Set<string>();
  for (const [, pk = '', sk = '', ready = '', due = ''] of tableRows()) {
    for (const shape of codeSpans(pk)) out.add(literalPrefix(shape));
    for (const shape of codeSpans(sk)) if (shape.includes('<')) out.add(literalPrefix(shape));
    // An index cell reads "`partition` / sort key".
    for (const cell of [ready, due]) for (const m of cell.matchAll(/`([^`]+)` \//g)) out.add(literalPrefix(m[1]!));
  }
  out.delete('');
  return out;
}

/** keys.ts's exported partition keys and key prefixes (`..._PK`, `..._PK_PREFIX`, `..._SK_PREFIX`). */
const exportedPrefixes = new Map<string, string>();
for (const [name, value] of Object.entries(keys) as [string, unknown][]) {
  if (/_(PK|PK_PREFIX|SK_PREFIX)$/.test(name) && typeof value === 'string') exportedPrefixes.set(name, value);
}

describe('the data model table and keys.ts', () => {
  it('finds the table and the exported prefixes', () => {
    expect(tableRows().length).toBeGreaterThan(10);
    expect(exportedPrefixes.size).toBeGreaterThan(10);
  });

  it('every key prefix keys.ts exports appears in the data model table', () => {
    const inTable = tablePrefixes();
    const missing = [...exportedPrefixes].filter(([, value]) => !inTable.has(value)).map(([name, value]) => `${name} = '${value}'`);
    expect(missing).toEqual([]);
  });

  it('every key prefix in the data model table is exported by keys.ts', () => {
    const exported = new Set(exportedPrefixes.values());
    expect([...tablePrefixes()].filter((p) => !exported.has(p))).toEqual([]);
  });
});
