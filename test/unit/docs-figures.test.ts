/**
 * The cost and speed tables are generated from bench-results.json (bench/docs.ts): the
 * committed docs/costs.md and the README's price table must be exactly what the committed
 * results make, and no figure may be typed into the README by hand beside them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { costsFile, expectedFiles, FIGURES_END, FIGURES_START, readFigures, readmeFile, units, usd, withReadmeTable } from '../../bench/docs.js';

describe('generated figures', () => {
  it('docs/costs.md and the README table are what bench-results.json makes (else: npm run docs:figures)', () => {
    for (const { file, text } of expectedFiles()) expect(readFileSync(file, 'utf8'), `${file} is out of date: run npm run docs:figures`).toBe(text);
  });

  it('the README shows dollar figures only inside its generated block', () => {
    const readme = readFileSync(readmeFile, 'utf8');
    const outside = readme.slice(0, readme.indexOf(FIGURES_START)) + readme.slice(readme.indexOf(FIGURES_END));
    expect(outside.match(/\$\d[\d,.]*/g) ?? []).toEqual([]);
  });

  it('docs/costs.md names where its figures come from and the run they are from', () => {
    const costs = readFileSync(costsFile, 'utf8');
    const r = readFigures();
    expect(costs).toContain('npm run docs:figures');
    expect(costs).toContain(r.generatedAt.slice(0, 10));
  });

  it('a README without the markers is refused, not silently left alone', () => {
    expect(() => withReadmeTable('# no markers here\n', readFigures())).toThrow(/markers/);
  });

  it('formats dollars and units the way the tables print them', () => {
    expect([usd(4.8912), usd(0.7549), usd(0.0654), usd(0.00313), usd(0), usd(1234.5)]).toEqual(['$4.89', '$0.75', '$0.065', '$0.0031', '$0', '$1,234.50']);
    expect([units(10), units(2.1666), units(0.2), units(NaN)]).toEqual(['10', '2.17', '0.2', 'n/a']);
  });
});
