import { describe, expect, it } from 'vitest';
import { bindParameters } from '../../lib/filters/parameters.js';
import { compileFilter, FilterSyntaxError } from '../../lib/filters/index.js';

describe('F1 SQL filter parameters', () => {
  it('F1 replaces @names outside literals and brackets by typed literals', () => {
    expect(bindParameters("a = @S AND b > @n AND c = @b AND d = '@s' AND [@s] = 1", { '@s': "it's", '@n': 2.5, '@b': true })).toBe(
      "a = 'it''s' AND b > 2.5 AND c = TRUE AND d = '@s' AND [@s] = 1",
    );
    expect(bindParameters('a = @x', undefined)).toBe('a = @x');
    expect(() => bindParameters('a = @x', { '@y': 1 })).toThrow(FilterSyntaxError);
  });

  it('F1 a compiled filter evaluates with its parameters', () => {
    const f = compileFilter({ sql: 'size > @n', parameters: { '@n': 10 } });
    const msg = (size: number) => ({ properties: { size }, system: {} }) as never;
    expect(f.evaluate(msg(11))).toBe(true);
    expect(f.evaluate(msg(9))).toBe(false);
  });
});
