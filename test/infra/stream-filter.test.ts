/**
 * #10.5: the stream consumer's event filter never delivers an item of the key partition,
 * whatever happened to it, while it still delivers what the consumer needs (message items,
 * TTL removals). The patterns are matched here as Lambda event filtering matches them
 * (fields AND'ed, listed values OR'ed; exact, `prefix` and `anything-but` values).
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { streamFilterPatterns } from '../../lib/store/stream-filter.js';
import { AUTH_PK } from '../../lib/store/keys.js';

type Pattern = { [field: string]: Pattern | unknown[] };

function valueMatches(rule: unknown, value: unknown): boolean {
  if (rule !== null && typeof rule === 'object') {
    const r = rule as Record<string, unknown>;
    if ('prefix' in r) return typeof value === 'string' && value.startsWith(String(r.prefix));
    if ('anything-but' in r) return value !== undefined && !(r['anything-but'] as unknown[]).includes(value);
    throw new Error(`filter rule ${JSON.stringify(rule)} is not modelled`);
  }
  return rule === value;
}

function matches(pattern: Pattern, event: unknown): boolean {
  return Object.entries(pattern).every(([field, rule]) => {
    const value = (event as Record<string, unknown> | undefined)?.[field];
    if (Array.isArray(rule)) return rule.some((r) => valueMatches(r, value));
    return matches(rule as Pattern, value);
  });
}

const delivered = (record: Partial<DynamoDBRecord>) => streamFilterPatterns.some((p) => matches(p as Pattern, record));

function record(pk: string, eventName: string, byTtl: boolean): Partial<DynamoDBRecord> {
  const image = { pk: { S: pk }, sk: { S: '/|sender' }, primaryKey: { S: 'secret' } };
  return {
    eventName: eventName as DynamoDBRecord['eventName'],
    dynamodb: { Keys: { pk: { S: pk }, sk: { S: '/|sender' } }, OldImage: image, NewImage: image },
    ...(byTtl ? { userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' } } : {}),
  };
}

describe('#10.5 the stream event filter', () => {
  it('never delivers a record of the key partition', () => {
    for (const eventName of ['INSERT', 'MODIFY', 'REMOVE']) {
      for (const byTtl of [false, true]) {
        expect(delivered(record(AUTH_PK, eventName, byTtl)), `${eventName} ttl=${byTtl}`).toBe(false);
      }
    }
  });

  it('still delivers message items and TTL removals of other items', () => {
    expect(delivered(record('msg/e1/a/0', 'INSERT', false))).toBe(true);
    expect(delivered(record('msg/e1/a/0', 'REMOVE', true))).toBe(true);
    expect(delivered(record('stats/e1', 'REMOVE', true))).toBe(true);
    expect(delivered(record('queues', 'MODIFY', false))).toBe(false);
  });
});
