/**
 * A4: the stream consumer's event filter never delivers an item of the key partition,
 * whatever happened to it, while it still delivers what the consumer needs (message items,
 * TTL removals). The patterns are matched as Lambda event filtering matches them
 * (infra/local/event-filter.ts, which the local runtime filters with too). H1/N1-N8: the
 * notify function's filter lets through what can make a message or a session available,
 * and not a receive's lock or a send's update of a session entry.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { hintFilterPatterns, streamFilterPatterns } from '../../lib/store/stream-filter.js';
import { passesFilters } from '../../infra/local/event-filter.js';
import { AUTH_PK, reminderPk } from '../../lib/store/keys.js';

const delivered = (record: Partial<DynamoDBRecord>) => passesFilters(streamFilterPatterns, record);

function record(pk: string, eventName: string, byTtl: boolean): Partial<DynamoDBRecord> {
  const image = { pk: { S: pk }, sk: { S: '/|sender' }, primaryKey: { S: 'secret' } };
  return {
    eventName: eventName as DynamoDBRecord['eventName'],
    dynamodb: { Keys: { pk: { S: pk }, sk: { S: '/|sender' } }, OldImage: image, NewImage: image },
    ...(byTtl ? { userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' } } : {}),
  };
}

describe('A4: the stream event filter', () => {
  it('never delivers a record of the key partition', () => {
    for (const eventName of ['INSERT', 'MODIFY', 'REMOVE']) {
      for (const byTtl of [false, true]) {
        expect(delivered(record(AUTH_PK, eventName, byTtl)), `${eventName} ttl=${byTtl}`).toBe(false);
      }
    }
  });

  it('E6/T7: delivers every change of a message item, TTL removals included', () => {
    for (const eventName of ['INSERT', 'MODIFY', 'REMOVE']) {
      for (const byTtl of [false, true]) expect(delivered(record('msg/e1/a/0', eventName, byTtl))).toBe(true);
    }
    expect(delivered(record('msg/e1/dlq/0', 'INSERT', false))).toBe(true);
  });

  it('delivers nothing the consumer ignores: no other item, whoever removed it', () => {
    for (const pk of ['stats/e1', 'queues', 'watch/queues/q', 'conn/abc', 'gc', 'sess/e1', 'dedup/e1', 'handled/e1']) {
      for (const eventName of ['INSERT', 'MODIFY', 'REMOVE']) {
        for (const byTtl of [false, true]) expect(delivered(record(pk, eventName, byTtl)), `${pk} ${eventName} ttl=${byTtl}`).toBe(false);
      }
    }
  });

  it('E6/H1: a lock reminder (its pk starts with remind/msg/...) invokes neither the stream consumer nor notify', () => {
    const pk = reminderPk('msg/e1/a/0');
    for (const eventName of ['INSERT', 'MODIFY', 'REMOVE']) {
      const r = record(pk, eventName, false);
      expect(delivered(r), eventName).toBe(false);
      expect(passesFilters(hintFilterPatterns, r), eventName).toBe(false);
    }
  });
});

const image = (fields: Record<string, string | number>) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'number' ? { N: String(v) } : { S: v }]));

function change(
  eventName: string,
  pk: string,
  oldImage: Record<string, string | number> | undefined,
  newImage: Record<string, string | number>,
): Partial<DynamoDBRecord> {
  return {
    eventName: eventName as DynamoDBRecord['eventName'],
    dynamodb: {
      Keys: { pk: { S: pk }, sk: { S: 's/a' } },
      ...(oldImage ? { OldImage: image(oldImage) } : {}),
      NewImage: image(newImage),
    } as DynamoDBRecord['dynamodb'],
  };
}

describe("the notify function's event filter", () => {
  const hinted = (record: Partial<DynamoDBRecord>) => passesFilters(hintFilterPatterns, record);

  it('delivers a receivable message and not a locked one', () => {
    expect(hinted(change('INSERT', 'msg/e1/a/0', undefined, { pk: 'msg/e1/a/0', rpk: 'msg/e1/a/0', rsk: '1' }))).toBe(true);
    expect(hinted(change('MODIFY', 'msg/e1/a/0', { rpk: 'msg/e1/a/0' }, { pk: 'msg/e1/a/0', rpk: 'msg/e1/a/0', rsk: '2', lockedUntil: 5 }))).toBe(false);
  });

  it("N4: delivers the release of a session lock that leaves the session in accept-next's index, nothing else of a session item", () => {
    const held = { pk: 'sess/e1', rpk: 'sessq/e1', rsk: '9', lockToken: 't', lockedUntil: 9 };
    expect(hinted(change('MODIFY', 'sess/e1', held, { pk: 'sess/e1', rpk: 'sessq/e1', rsk: '1' }))).toBe(true);
    // Released with nothing left: out of the index.
    expect(hinted(change('MODIFY', 'sess/e1', held, { pk: 'sess/e1', hasState: 1 }))).toBe(false);
    // A send's update of the entry (its message's own record hints) and an accept.
    expect(hinted(change('MODIFY', 'sess/e1', { pk: 'sess/e1', rpk: 'sessq/e1', rsk: '1' }, { pk: 'sess/e1', rpk: 'sessq/e1', rsk: '1', lastSendAt: 3 }))).toBe(
      false,
    );
    expect(hinted(change('INSERT', 'sess/e1', undefined, { pk: 'sess/e1', rpk: 'sessq/e1', rsk: '1' }))).toBe(false);
    expect(hinted(change('MODIFY', 'sess/e1', { pk: 'sess/e1', rpk: 'sessq/e1', rsk: '1' }, held))).toBe(false);
  });
});
