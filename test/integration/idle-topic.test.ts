/**
 * Temporary topics and subscriptions (I1-I3, E4): what counts as use of a topic and of a
 * subscription, forwarding subscriptions, and the cascade when a topic or subscription is
 * deleted for idleness. Each test gets its own table and ManualClock; nothing sleeps.
 */
import { describe, expect, it } from 'vitest';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { indexLayout } from '../support/default-layout.js';
import { GRACE, idleWorld } from '../support/idle-world.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { entityKey, messagePk, ruleKey, tombstoneKey } from '../../lib/store/keys.js';
import type { Subqueue } from '../../lib/entities/kinds.js';
import type { EntityItem } from '../../lib/broker/entities.js';
import type { Deps } from '../../lib/deps.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** `todays`: the world's subscriptions in today's layout, for the test that counts their msg/ items. */
const world = ({ counts = false, prefix = 'idle-t', todays = false } = {}) => idleWorld({ prefix, counts, ...(todays ? indexLayout : {}) });
type World = Awaited<ReturnType<typeof world>>;

const SUBQUEUES: Subqueue[] = ['active', 'deadletter', 'transfer'];
const messagesLeft = async (w: World, eid: string) => {
  let n = 0;
  for (const s of SUBQUEUES) n += await w.countItems(messagePk(eid, s, 0));
  return n;
};

describe('I1: autoDeleteOnIdle on topics and subscriptions', () => {
  it('I1: autoDeleteOnIdle below PT5M is refused for a topic and for a subscription, with 400 naming the field', async () => {
    const w = await world();

    const topic = await w.api('PUT', '/topics/short', { autoDeleteOnIdle: 'PT4M59S' });
    expect(topic.status).toBe(400);
    expect(topic.body.error.message).toContain('autoDeleteOnIdle');
    expect(await w.exists('/topics/short')).toBe(false);

    await w.ok('PUT', '/topics/t', {});
    const sub = await w.api('PUT', '/topics/t/subscriptions/short', { autoDeleteOnIdle: 'PT2M' });
    expect(sub.status).toBe(400);
    expect(sub.body.error.message).toContain('autoDeleteOnIdle');
    expect(await w.exists('/topics/t/subscriptions/short')).toBe(false);
  });

  it('I1: an untouched topic with autoDeleteOnIdle PT5M is deleted after createdAt + 5 min, not before', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });

    w.at(5 * MINUTE - SECOND);
    expect(await w.tick()).toEqual([]);
    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t']);

    expect((await w.api('GET', '/topics/t')).status).toBe(404);
  });

  it('I1: an untouched subscription with autoDeleteOnIdle PT5M is deleted alone; its topic stays', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/other', {});

    w.at(5 * MINUTE - SECOND);
    expect(await w.tick()).toEqual([]);
    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t/subscriptions/s']);

    expect((await w.api('GET', '/topics/t/subscriptions/s')).status).toBe(404);
    expect(await w.exists('/topics/t')).toBe(true);
    expect(await w.exists('/topics/t/subscriptions/other')).toBe(true);
  });
});

interface Use {
  name: string;
  act: (w: World) => Promise<unknown>;
}

const topicUses: Use[] = [
  { name: 'a send to the topic', act: (w) => w.ok('POST', '/topics/t/messages', { body: 'x' }) },
  { name: 'an update of the topic (PUT)', act: (w) => w.ok('PUT', '/topics/t', { defaultMessageTimeToLive: 'P1D' }) },
  { name: 'a receive on its subscription', act: (w) => w.ok('POST', '/topics/t/subscriptions/s/messages/receive', {}) },
  { name: 'a peek on its subscription', act: (w) => w.ok('GET', '/topics/t/subscriptions/s/messages') },
  { name: 'a new rule on its subscription', act: (w) => w.ok('PUT', '/topics/t/subscriptions/s/rules/r', { filter: { sql: "color = 'red'" } }) },
  { name: 'an update of its subscription (PUT)', act: (w) => w.ok('PUT', '/topics/t/subscriptions/s', { maxDeliveryCount: 3 }) },
  { name: 'creating a new subscription', act: (w) => w.ok('PUT', '/topics/t/subscriptions/s2', {}) },
];

describe('I2: what counts as use of a topic', () => {
  it.each(topicUses)('I2 topic: $name at t+4m keeps the topic: kept at t+6m, deleted at use+5m+1s', async (use) => {
    const w = await world();
    await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/s', {});

    const usedAt = 4 * MINUTE;
    w.at(usedAt);
    await use.act(w);

    w.at(6 * MINUTE);
    expect(await w.tick()).toEqual([]);
    w.at(usedAt + 5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t']);
  });

  it('I2 topic: a scheduled message (sent at t+4m, due in a day) keeps the topic alive', async () => {
    const w = await world({ counts: true });
    await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/s', {});

    w.at(4 * MINUTE);
    const when = new Date(w.t0 + 24 * 60 * MINUTE).toISOString();
    expect((await w.ok('POST', '/topics/t/messages', { body: 'later', scheduledEnqueueTime: when })).body.subscriptions).toEqual(['s']);

    for (const offset of [6 * MINUTE, 2 * 60 * MINUTE]) {
      w.at(offset);
      expect(await w.tick()).toEqual([]);
    }
    expect(await w.exists('/topics/t')).toBe(true);
  });

  it('I2 topic: a topic whose subscriptions are busy is not deleted, though nobody sends to it', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/a', {});
    await w.ok('PUT', '/topics/t/subscriptions/b', {});

    for (let minute = 4; minute <= 24; minute += 4) {
      w.at(minute * MINUTE);
      const sub = minute % 8 === 0 ? 'a' : 'b';
      await w.ok('POST', `/topics/t/subscriptions/${sub}/messages/receive`, {});
      w.at(minute * MINUTE + 30 * SECOND);
      expect(await w.tick()).toEqual([]);
    }

    expect(await w.exists('/topics/t')).toBe(true);
  });
});

const subscriptionUses: Use[] = [
  { name: 'an empty receive', act: (w) => w.ok('POST', '/topics/t/subscriptions/s/messages/receive', { mode: 'receiveAndDelete' }) },
  { name: 'a receive from its dead-letter subqueue', act: (w) => w.ok('POST', '/topics/t/subscriptions/s/$deadletterqueue/messages/receive', {}) },
  { name: 'an update (PUT)', act: (w) => w.ok('PUT', '/topics/t/subscriptions/s', { lockDuration: 'PT30S' }) },
  { name: 'a new rule', act: (w) => w.ok('PUT', '/topics/t/subscriptions/s/rules/r', { filter: { true: {} } }) },
  { name: 'a peek', act: (w) => w.ok('GET', '/topics/t/subscriptions/s/messages?fromSequenceNumber=0') },
];

describe('I2: what counts as use of a subscription', () => {
  it.each(subscriptionUses)('I2 subscription: $name at t+4m keeps it: kept at t+6m, deleted at use+5m+1s', async (use) => {
    const w = await world();
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M' });

    const usedAt = 4 * MINUTE;
    w.at(usedAt);
    await use.act(w);

    w.at(6 * MINUTE);
    expect(await w.tick()).toEqual([]);
    w.at(usedAt + 5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t/subscriptions/s']);
  });

  it('I2 subscription: sends to its topic are not use: a subscription with only incoming messages is idle and deleted', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M' });

    for (let minute = 1; minute <= 5; minute++) {
      w.at(minute * MINUTE);
      expect((await w.ok('POST', '/topics/t/messages', { body: minute })).body.subscriptions).toEqual(['s']);
    }
    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t/subscriptions/s']);

    expect(await w.exists('/topics/t/subscriptions/s')).toBe(false);
    expect(await w.exists('/topics/t')).toBe(true);
    expect((await w.ok('POST', '/topics/t/messages', { body: 'after' })).body.subscriptions).toEqual([]);
  });

  it('I2 subscription: a scheduled message copied in from the topic is incoming only: it does not keep the subscription alive', async () => {
    // I2 lists scheduled messages as use of a queue and of a topic, not of a subscription.
    const w = await world({ counts: true });
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M' });
    const when = new Date(w.t0 + 24 * 60 * MINUTE).toISOString();
    await w.ok('POST', '/topics/t/messages', { body: 'later', scheduledEnqueueTime: when });
    await w.pump();
    expect((await w.api('GET', '/topics/t/subscriptions/s')).body.runtime.scheduledMessageCount).toBe(1);

    w.at(5 * MINUTE + GRACE + SECOND);
    await w.tick();
    w.at(6 * MINUTE + SECOND);
    await w.tick();

    expect(await w.exists('/topics/t/subscriptions/s')).toBe(false);
  });
});

describe('I3: forwarding subscriptions are never idle', () => {
  it('I3: a subscription with forwardTo and autoDeleteOnIdle PT5M is never deleted for idleness', async () => {
    const w = await world();
    await w.ok('PUT', '/queues/fq', {});
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M', forwardTo: 'queues/fq' });

    for (const offset of [6 * MINUTE, 60 * MINUTE, 7 * 24 * 60 * MINUTE]) {
      w.at(offset);
      expect(await w.tick()).toEqual([]);
    }

    expect(await w.exists('/topics/t/subscriptions/s')).toBe(true);
  });
});

describe('I1/E4: deletion for idleness takes everything under the entity', () => {
  it('I1/E4: an idle topic goes with its subscriptions, rules and messages; a topic re-created under the name is empty', async () => {
    const w = await world({ todays: true });
    await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/s1', {});
    await w.ok('PUT', '/topics/t/subscriptions/s2', {});
    await w.ok('PUT', '/topics/t/subscriptions/s2/rules/red', { filter: { sql: "color = 'red'" } });
    await w.ok('POST', '/topics/t/messages/batch', { messages: Array.from({ length: 30 }, (_, i) => ({ body: i, applicationProperties: { color: 'red' } })) });
    const locked = await w.ok('POST', '/topics/t/subscriptions/s1/messages/receive', { maxMessages: 2 });
    for (const m of locked.body.messages as { sequenceNumber: string; lockToken: string }[]) {
      await w.ok('POST', `/topics/t/subscriptions/s1/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken });
    }
    const subs = await Promise.all(['s1', 's2'].map((s) => w.raw(entityKey('subscription', s, 't')) as Promise<EntityItem | undefined>));
    const eids = subs.map((s) => s?.eid ?? '');
    expect(eids.every(Boolean)).toBe(true);
    expect(await messagesLeft(w, eids[0]!)).toBe(30);
    expect(await messagesLeft(w, eids[1]!)).toBe(30);

    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t']);

    expect((await w.api('GET', '/topics/t')).status).toBe(404);
    expect((await w.api('GET', '/topics/t/subscriptions/s1')).status).toBe(404);
    expect(await w.raw(entityKey('subscription', 's2', 't'))).toBeUndefined();
    expect(await w.raw(ruleKey('t', 's2', 'red'))).toBeUndefined();
    expect(await w.raw(ruleKey('t', 's2', '$Default'))).toBeUndefined();
    expect(await w.raw(ruleKey('t', 's1', '$Default'))).toBeUndefined();
    for (let run = 0; run < 3; run++) await w.reaper();
    expect(await messagesLeft(w, eids[0]!)).toBe(0);
    expect(await messagesLeft(w, eids[1]!)).toBe(0);
    for (const eid of eids) expect(await w.raw(tombstoneKey(eid))).toBeUndefined();

    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s1', {});
    await w.ok('PUT', '/topics/t/subscriptions/s2', {});
    const rules = await w.ok('GET', '/topics/t/subscriptions/s2/rules');
    expect(rules.body.items.map((r: { name: string }) => r.name)).toEqual(['$Default']);
    for (const s of ['s1', 's2']) {
      expect((await w.ok('POST', `/topics/t/subscriptions/${s}/messages/receive`, { maxMessages: 100 })).body.messages).toEqual([]);
      expect((await w.ok('POST', `/topics/t/subscriptions/${s}/$deadletterqueue/messages/receive`, { maxMessages: 100 })).body.messages).toEqual([]);
      expect((await w.ok('GET', `/topics/t/subscriptions/${s}/messages?maxMessages=100`)).body.messages).toEqual([]);
      expect((await w.ok('GET', `/topics/t/subscriptions/${s}`)).body.runtime.totalMessageCount).toBe(0);
    }
  });

  it('I1/E4: an idle subscription goes with its rules; re-created, it has only $Default and no old message', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/s/rules/keep', { filter: { true: {} } });
    await w.ok('POST', '/topics/t/messages', { body: 'old' });
    const eid = ((await w.raw(entityKey('subscription', 's', 't'))) as EntityItem).eid;

    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['topics/t/subscriptions/s']);
    expect(await w.raw(ruleKey('t', 's', 'keep'))).toBeUndefined();
    await w.reaper();
    expect(await messagesLeft(w, eid)).toBe(0);

    await w.ok('PUT', '/topics/t/subscriptions/s', {});
    const rules = await w.ok('GET', '/topics/t/subscriptions/s/rules');
    expect(rules.body.items.map((r: { name: string }) => r.name)).toEqual(['$Default']);
    expect((await w.ok('POST', '/topics/t/subscriptions/s/messages/receive', { maxMessages: 10 })).body.messages).toEqual([]);
  });
});

/** The same deps, except that `before` runs once, just ahead of the first TransactWriteCommand. */
function beforeFirstTransaction(deps: Deps, before: () => Promise<void>): Deps {
  const real = deps.db;
  let done = false;
  const send = async (command: unknown, ...rest: unknown[]) => {
    if (!done && command instanceof TransactWriteCommand) {
      done = true;
      await before();
    }
    return (real.send as (c: unknown, ...r: unknown[]) => Promise<unknown>)(command, ...rest);
  };
  const db = new Proxy(real, {
    get(target, prop) {
      if (prop === 'send') return send;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as DynamoDBDocumentClient;
  return { ...deps, db };
}

describe('I1/I2/E4: a topic or subscription that becomes busy again while the reaper deletes it', () => {
  it('I1/I2: a topic used after the reaper found it idle, before its delete, stays, with its subscriptions and rules intact', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/s', {});
    await w.ok('PUT', '/topics/t/subscriptions/s/rules/red', { filter: { sql: "color = 'red'" } });
    w.at(6 * MINUTE);
    // The reaper has read the topic and found it idle; a send lands before its first write.
    const racing = beforeFirstTransaction(w.deps, async () => {
      await w.ok('POST', '/topics/t/messages', { body: 'busy again', applicationProperties: { color: 'red' } });
    });

    const report = await createReaperHandler(racing)();

    expect(report.entitiesDeleted).toEqual([]);
    expect(await w.exists('/topics/t')).toBe(true);
    expect(await w.exists('/topics/t/subscriptions/s')).toBe(true);
    const rules = await w.ok('GET', '/topics/t/subscriptions/s/rules');
    expect(rules.body.items.map((r: { name: string }) => r.name).sort()).toEqual(['$Default', 'red']);
    const got = await w.ok('POST', '/topics/t/subscriptions/s/messages/receive', { mode: 'receiveAndDelete' });
    expect(got.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['busy again']);
  });

  it('I1/I2: a subscription used after the reaper found it idle, before its delete, stays, with its rules intact', async () => {
    const w = await world();
    await w.ok('PUT', '/topics/t', {});
    await w.ok('PUT', '/topics/t/subscriptions/s', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('PUT', '/topics/t/subscriptions/s/rules/red', { filter: { sql: "color = 'red'" } });
    w.at(6 * MINUTE);
    const racing = beforeFirstTransaction(w.deps, async () => {
      await w.ok('POST', '/topics/t/subscriptions/s/messages/receive', {});
    });

    const report = await createReaperHandler(racing)();

    expect(report.entitiesDeleted).toEqual([]);
    expect(await w.exists('/topics/t/subscriptions/s')).toBe(true);
    const rules = await w.ok('GET', '/topics/t/subscriptions/s/rules');
    expect(rules.body.items.map((r: { name: string }) => r.name).sort()).toEqual(['$Default', 'red']);
  });
});
