/**
 * F1: the SQL filter parser is generated from lib/filters/sql.peggy and committed as
 * lib/filters/sql-parser.js, so Lambda bundles need no build step for it. This test fails
 * when someone edits the grammar and forgets `npm run build:grammar`.
 */
import { readFileSync } from 'node:fs';
import { generate } from 'peggy';
import { describe, expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('F1 SQL filter grammar', () => {
  it('the committed parser is what npm run build:grammar makes of sql.peggy', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    const script = scripts['build:grammar'] ?? '';
    expect(script).toMatch(/^peggy .*-o lib\/filters\/sql-parser\.js lib\/filters\/sql\.peggy$/);
    // Regenerate with the script's own options, so the two cannot drift apart.
    const format = /--format (\S+)/.exec(script)?.[1];
    const startRules = /--allowed-start-rules (\S+)/.exec(script)?.[1]?.split(',');
    expect(format).toBe('es');
    expect(startRules).toEqual(['Filter', 'Action']);

    const fresh = generate(read('lib/filters/sql.peggy'), {
      output: 'source',
      format: 'es',
      allowedStartRules: startRules ?? [],
    });
    const committed = read('lib/filters/sql-parser.js');
    expect(committed === fresh, 'lib/filters/sql-parser.js is stale: run `npm run build:grammar`').toBe(true);
  });
});
