/**
 * docs/operations.md lists every deploy setting with its default: a setting added to
 * infra/config.ts without a row there, or a default changed on one side only, fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CAPACITY_KEYS, defaultConfig, provisionedDefaults } from '../../infra/config.js';
import { repoRoot } from '../../infra/paths.js';

const doc = readFileSync(join(repoRoot, 'docs', 'operations.md'), 'utf8');
/** The settings table's row naming `key` (a row may name two settings, `a` / `b`). */
const rowOf = (key: string) => doc.split('\n').find((line) => line.startsWith('|') && line.split('|')[1]!.includes(`\`${key}\``));

describe('docs/operations.md', () => {
  it('has a row for every setting infra/config.ts reads', () => {
    const keys = [...Object.keys(defaultConfig).filter((k) => k !== 'capacity'), 'alarmEmail', 'newEntityLayout', 'stackName', 'billing', ...CAPACITY_KEYS];
    expect(keys.filter((k) => rowOf(k) === undefined)).toEqual([]);
  });

  it('gives each setting the default infra/config.ts has', () => {
    for (const [key, value] of Object.entries(defaultConfig)) {
      if (key === 'capacity' || Array.isArray(value)) continue;
      const row = rowOf(key)!;
      // A row of two settings gives two defaults in the same order: `100` / `200`.
      const keysInRow = [...row.split('|')[1]!.matchAll(/`(\w+)`/g)].map((m) => m[1]);
      const defaults = [...row.split('|')[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      expect(defaults[keysInRow.indexOf(key)], key).toBe(String(value));
    }
    expect(rowOf('readCapacity')).toContain(`\`${provisionedDefaults.readCapacity}\``);
    expect(rowOf('targetUtilization')).toContain(`\`${provisionedDefaults.targetUtilization}\``);
  });
});
