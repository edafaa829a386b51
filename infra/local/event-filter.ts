/**
 * Lambda event filtering as AWS applies it to an event source mapping's records, for the
 * subset of the pattern language Sluice's patterns use (lib/store/stream-filter.ts): fields
 * are AND'ed, the values listed for a field OR'ed; a value is matched exactly, by `prefix`,
 * by `anything-but`, or by `exists`. The local runtime filters with it, so that a pattern that
 * would drop a record on AWS drops it in every local test too.
 */
export type FilterPattern = { readonly [field: string]: FilterPattern | readonly unknown[] };

function valueMatches(rule: unknown, value: unknown): boolean {
  if (rule !== null && typeof rule === 'object') {
    const r = rule as Record<string, unknown>;
    if ('exists' in r) return r.exists === (value !== undefined);
    if ('prefix' in r) return typeof value === 'string' && value.startsWith(String(r.prefix));
    if ('anything-but' in r) return value !== undefined && !(r['anything-but'] as unknown[]).includes(value);
    throw new Error(`filter rule ${JSON.stringify(rule)} is not modelled`);
  }
  return rule === value;
}

export function matchesFilter(pattern: FilterPattern, event: unknown): boolean {
  return Object.entries(pattern).every(([field, rule]) => {
    const value = (event as Record<string, unknown> | undefined)?.[field];
    if (Array.isArray(rule)) return rule.some((r) => valueMatches(r, value));
    return matchesFilter(rule as FilterPattern, value);
  });
}

/** True when any of `patterns` lets `event` through (Lambda OR's a mapping's filters). */
export const passesFilters = (patterns: readonly object[], event: unknown): boolean => patterns.some((p) => matchesFilter(p as FilterPattern, event));
