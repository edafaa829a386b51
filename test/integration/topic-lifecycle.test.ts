/**
 * Deleting topics and subscriptions (E4): everything under them goes, and an entity
 * re-created under the same name starts empty, with only the `$Default` rule (F1), and never
 * delivers a copy made for its predecessor.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { entityHelpers, type Msg } from '../support/queue-helpers.js';

const clock = new ManualClock(Date.UTC(2030, 5, 1, 8, 0, 0));
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'topic-life'));
});

const { put, publish: send, receiveAll, peekAll } = entityHelpers(() => api);

const ruleNames = async (path: string): Promise<string[]> => {
  const res = await api('GET', `${path}/rules`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items.map((r: Msg) => r.name as string).sort();
};

/** A subscription holding active, dead-lettered and rule-made copies, and custom rules. */
async function populated(topic: string, sub: string): Promise<void> {
  const path = `/topics/${topic}/subscriptions/${sub}`;
  await put(path, { deadLetteringOnFilterEvaluationExceptions: true });
  await put(`${path}/rules/tagger`, { filter: { sql: "kind = 'old'" }, action: { sql: "SET tagged = 'old-rule'" } });
  await put(`${path}/rules/broken`, { filter: { sql: 'n + 1 = 2' } });
  await send(topic, { body: 'old-1', messageId: 'old-1', applicationProperties: { kind: 'old', n: 1 } });
  await send(topic, { body: 'old-2', messageId: 'old-2', applicationProperties: { kind: 'old', n: 'not a number' } });
  await send(topic, {
    body: 'old-3',
    messageId: 'old-3',
    scheduledEnqueueTime: new Date(clock.now() + 60_000).toISOString(),
    applicationProperties: { kind: 'old', n: 1 },
  });
  expect((await peekAll(path)).map((m) => m.messageId).sort()).toEqual(['old-1', 'old-1', 'old-3', 'old-3']);
  expect(await peekAll(`${path}/$deadletterqueue`)).toHaveLength(1);
}

describe('E4: deleting topics and subscriptions', () => {
  it('E4: deleting a topic deletes its subscriptions and their rules (404 afterwards)', async () => {
    await put('/topics/gone1');
    await put('/topics/gone1/subscriptions/a');
    await put('/topics/gone1/subscriptions/b');
    await put('/topics/gone1/subscriptions/a/rules/extra', { filter: { sql: 'x = 1' } });
    expect((await api('DELETE', '/topics/gone1')).status).toBe(204);
    expect((await api('GET', '/topics/gone1')).status).toBe(404);
    expect((await api('GET', '/topics/gone1/subscriptions/a')).status).toBe(404);
    expect((await api('GET', '/topics/gone1/subscriptions/a/rules/extra')).status).toBe(404);
    expect((await api('POST', '/topics/gone1/messages', { body: 1 })).status).toBe(404);
    expect((await api('POST', '/topics/gone1/subscriptions/a/messages/receive', {})).status).toBe(404);
    expect((await api('DELETE', '/topics/gone1')).status).toBe(404);
    expect((await api('GET', '/topics')).body.items.map((t: Msg) => t.name)).not.toContain('gone1');
  });

  it('E4: a re-created topic and subscription of the same name start empty, with only $Default, and never deliver old copies', async () => {
    await put('/topics/again');
    await populated('again', 'sub');
    expect((await api('DELETE', '/topics/again')).status).toBe(204);

    await put('/topics/again');
    await put('/topics/again/subscriptions/sub');
    const path = '/topics/again/subscriptions/sub';
    expect(await ruleNames(path)).toEqual(['$Default']);
    expect(await peekAll(path)).toEqual([]);
    expect(await peekAll(`${path}/$deadletterqueue`)).toEqual([]);
    expect(await peekAll(`${path}/$transferdeadletterqueue`)).toEqual([]);
    expect((await api('GET', path)).body.deadLetteringOnFilterEvaluationExceptions).toBe(false);

    // Past the old schedule: still nothing old, and a new send arrives as one plain copy.
    clock.advance(2 * 60_000);
    expect(await send('again', { body: 'new', messageId: 'new', applicationProperties: { kind: 'old', n: 'x' } })).toEqual({
      messageId: 'new',
      subscriptions: ['sub'],
    });
    const got = await receiveAll(path);
    expect(got.map((m) => m.messageId)).toEqual(['new']);
    expect(got[0].applicationProperties).toEqual({ kind: 'old', n: 'x' });
    expect(await receiveAll(`${path}/$deadletterqueue`)).toEqual([]);
  });

  it('E4: a topic deleted and re-created in different case is the same entity (E1) and starts empty', async () => {
    await put('/topics/Cased');
    await put('/topics/Cased/subscriptions/S');
    await send('cased', { body: 'old' });
    expect((await api('DELETE', '/topics/CASED')).status).toBe(204);
    await put('/topics/cased');
    await put('/topics/cased/subscriptions/s');
    expect((await api('GET', '/topics/CASED')).body.name).toBe('cased');
    expect(await peekAll('/topics/Cased/subscriptions/S')).toEqual([]);
  });

  it('E4: deleting one subscription deletes its rules; re-created, it has only $Default and no old copies', async () => {
    await put('/topics/keep');
    await put('/topics/keep/subscriptions/other');
    await populated('keep', 'sub');
    expect((await api('DELETE', '/topics/keep/subscriptions/sub')).status).toBe(204);
    expect((await api('GET', '/topics/keep/subscriptions/sub')).status).toBe(404);
    expect((await api('GET', '/topics/keep')).status).toBe(200);
    expect((await api('GET', '/topics/keep/subscriptions')).body.items.map((s: Msg) => s.name)).toEqual(['other']);

    await put('/topics/keep/subscriptions/sub');
    const path = '/topics/keep/subscriptions/sub';
    // Soft, so the consequence on delivery below is reported too.
    expect.soft(await ruleNames(path)).toEqual(['$Default']);
    expect(await peekAll(path)).toEqual([]);
    expect(await peekAll(`${path}/$deadletterqueue`)).toEqual([]);
    await send('keep', { body: 'new', messageId: 'new', applicationProperties: { kind: 'old', n: 'x' } });
    const got = await receiveAll(path);
    expect(got.map((m) => m.applicationProperties)).toEqual([{ kind: 'old', n: 'x' }]);
    expect(await peekAll(`${path}/$deadletterqueue`)).toEqual([]);
  });
});
