/**
 * Rule lookups of one function (lib/broker/authorization.ts, `findRule`): cached for
 * CACHE_MS, and the requests that find the cache stale at once share one read. A rule changed
 * in this function takes effect at once there (A4: a regenerated key works at once, the old one
 * stops): a lookup in flight from before the change is neither cached nor shared after it.
 * A fake `db` whose reads the test answers, so these run without DynamoDB.
 */
import { describe, expect, it } from 'vitest';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ruleStore } from '../../lib/broker/authorization.js';
import type { BrokerContext } from '../../lib/broker/context.js';
import { SequenceGenerator } from '../../lib/store/sequence.js';
import { ManualClock } from '../support/table.js';

const rule = (primaryKey: string) => ({
  pk: 'auth',
  sk: '/|app',
  keyName: 'app',
  scopePath: '/',
  rights: ['Send'],
  primaryKey,
  secondaryKey: 's',
  createdAt: 0,
  updatedAt: 0,
});

function world() {
  const gets: { consistent: boolean; answer: (item: unknown) => void }[] = [];
  let stored = rule('k1');
  const db = {
    send: (command: unknown) => {
      if (command instanceof GetCommand)
        return new Promise((resolve) => gets.push({ consistent: command.input.ConsistentRead === true, answer: (item) => resolve({ Item: item }) }));
      if (command instanceof PutCommand) {
        stored = command.input.Item as typeof stored;
        return Promise.resolve({});
      }
      throw new Error('unexpected command');
    },
  } as unknown as DynamoDBDocumentClient;
  const ctx: BrokerContext = { clock: new ManualClock(Date.UTC(2030, 0, 1)), db, tableName: 'fake', sequences: new SequenceGenerator() };
  return { store: ruleStore(ctx), gets, stored: () => stored };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('A2: rule lookups of one function', () => {
  it('A2: requests that find the rule uncached at once share one read, which then serves from the cache', async () => {
    const { store, gets } = world();
    const asked = [store.findRule('app', '/'), store.findRule('app', '/'), store.findRule('app', '/')];
    await tick();
    expect(gets).toHaveLength(1);
    gets[0]!.answer(rule('k1'));
    expect((await Promise.all(asked)).map((r) => r?.primaryKey)).toEqual(['k1', 'k1', 'k1']);
    expect((await store.findRule('app', '/'))?.primaryKey).toBe('k1');
    expect(gets).toHaveLength(1);
  });

  it('A4: a key regenerated here while a lookup is in flight: later requests read anew, and the old rule is not cached', async () => {
    const { store, gets, stored } = world();
    const before = store.findRule('app', '/');
    await tick();
    expect(gets).toHaveLength(1);

    const regenerating = store.regenerate('/', 'app', { key: 'primary' });
    await tick();
    gets[1]!.answer(stored()); // the regenerate's own consistent read
    const regenerated = await regenerating;
    expect(regenerated.primaryKey).not.toBe('k1');

    const after = store.findRule('app', '/');
    await tick();
    expect(gets).toHaveLength(3); // not joined to the lookup from before the change
    gets[2]!.answer(stored());
    expect((await after)?.primaryKey).toBe(regenerated.primaryKey);
    gets[0]!.answer(rule('k1')); // the lookup from before the change ends last
    expect((await before)?.primaryKey).toBe('k1');
    expect((await store.findRule('app', '/'))?.primaryKey).toBe(regenerated.primaryKey);
    expect(gets).toHaveLength(3);
  });
});
