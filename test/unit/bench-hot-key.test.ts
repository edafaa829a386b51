/**
 * The bench's hottest-key figure (bench/capacity.ts `unitsByKey`, bench/life-report.ts
 * `hotKeyOf`): a write's billed units are put on the partition keys they land on, table and
 * index apart, and the ceiling of lives a second is DynamoDB's 1,000 write units a second per
 * key over the units a life puts on its hottest key.
 */
import { describe, expect, it } from 'vitest';
import { unitsByKey } from '../../bench/capacity.js';
import { hotKeyOf } from '../../bench/life-report.js';

const pk = 'msg/q1/a/0';
const message = (rsk: string, extra: Record<string, unknown> = {}) => ({ pk, sk: '001', rpk: pk, rsk, body: 'x', ...extra });

describe('bench: write units by partition key', () => {
  it('a put lands on its table key and on its ready index key', () => {
    expect(unitsByKey([{ pk, before: undefined, after: message('a') }], { total: 2, table: 1, indexes: { ready: 1 } })).toEqual({
      [`table ${pk}`]: 1,
      [`ready ${pk}`]: 1,
    });
  });

  it('a lock that moves the ready sort key writes two index entries, both on the entity partition', () => {
    const units = unitsByKey([{ pk, before: message('a'), after: message('b', { lockedUntil: 5 }) }], { total: 3, table: 1, indexes: { ready: 2 } });
    expect(units).toEqual({ [`table ${pk}`]: 1, [`ready ${pk}`]: 2 });
  });

  it("a transaction's table units are shared by item size, each at its own key", () => {
    const marker = (id: string) => ({ pk: `counted/${id}`, before: undefined, after: { pk: `counted/${id}`, sk: 'counted' } });
    const stats = { pk: 'stats/q1', before: { pk: 'stats/q1', sk: 'stats', active: 1 }, after: { pk: 'stats/q1', sk: 'stats', active: 0 } };
    expect(unitsByKey([marker('1'), marker('2'), stats], { total: 6, table: 6, indexes: {} })).toEqual({
      'table counted/1': 2,
      'table counted/2': 2,
      'table stats/q1': 2,
    });
  });

  it('the ceiling is 1,000 write units a second over the hottest key of a life', () => {
    const hot = hotKeyOf({ [`ready ${pk}`]: 4, [`table ${pk}`]: 3, 'table stats/q1': 0.06, 'table counted/e1': 0.02 }, 'test');
    expect(hot.livesPerSecond).toBe(250);
    expect(hot.key).toBe('ready msg/{eid}/a/0');
    expect(hot.keys.map((k) => k.key)).toEqual(['ready msg/{eid}/a/0', 'table msg/{eid}/a/0']);
  });
});
