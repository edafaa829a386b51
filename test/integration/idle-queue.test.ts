/**
 * Temporary queues (I1-I4, E6): autoDeleteOnIdle on a queue, what counts as use, and
 * the reaper (functions/reaper) deleting idle queues. Each test gets its own table and its
 * own ManualClock; a `tick` is one minute of the deployment's schedule: the stream consumer
 * (runtime counts, only in tests that need them), then the reaper. The sweeper runs only
 * where a test needs scheduled activation.
 * Nothing sleeps for real.
 */
import { describe, expect, it } from 'vitest';
import { PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { apiClient } from '../support/api.js';
import { GRACE, idleWorld } from '../support/idle-world.js';
import { queueItem } from '../support/stream.js';
import { inputOf } from '../support/faults.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import type { Deps } from '../../lib/deps.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** A fresh table and clock: the queues of one test never become due in another. */
const world = ({ counts = false, prefix = 'idle-q' } = {}) => idleWorld({ prefix, counts });
type World = Awaited<ReturnType<typeof world>>;

async function created(w: World, path: string, body: unknown) {
  const res = await w.api('PUT', path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res;
}

describe('I1: autoDeleteOnIdle on a queue', () => {
  it('I1: autoDeleteOnIdle below PT5M (PT4M59S, PT1M, PT0S) is refused with 400 naming the field; nothing is created', async () => {
    const w = await world();

    for (const value of ['PT4M59S', 'PT1M', 'PT0S']) {
      const res = await w.api('PUT', '/queues/tooshort', { autoDeleteOnIdle: value });

      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('BadRequest');
      expect(res.body.error.message).toContain('autoDeleteOnIdle');
    }
    expect(await w.exists('/queues/tooshort')).toBe(false);
    expect((await w.api('PUT', '/queues/tooshort', { autoDeleteOnIdle: 'PT5M' })).status).toBe(201);
  });

  it('I1: an update to autoDeleteOnIdle below PT5M is refused and changes nothing', async () => {
    const w = await world();
    await created(w, '/queues/keep', { autoDeleteOnIdle: 'PT10M' });

    const res = await w.api('PUT', '/queues/keep', { autoDeleteOnIdle: 'PT4M' });

    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('autoDeleteOnIdle');
    expect((await w.api('GET', '/queues/keep')).body.autoDeleteOnIdle).toBe('PT10M');
  });

  it('I1: an untouched queue with autoDeleteOnIdle PT5M is deleted once createdAt + 5 min has passed, not before', async () => {
    const w = await world();
    await created(w, '/queues/temp', { autoDeleteOnIdle: 'PT5M' });

    w.at(5 * MINUTE - SECOND);
    expect(await w.tick()).toEqual([]);
    expect(await w.exists('/queues/temp')).toBe(true);

    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['queues/temp']);
    expect(await w.exists('/queues/temp')).toBe(false);
    const res = await w.api('GET', '/queues/temp');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('EntityNotFound');
  });

  it('I1: a queue without autoDeleteOnIdle is never deleted for idleness', async () => {
    const w = await world();
    await created(w, '/queues/forever', {});

    w.at(30 * 24 * 60 * MINUTE);
    await w.tick();

    expect(await w.exists('/queues/forever')).toBe(true);
  });

  it('I1: turning autoDeleteOnIdle off (null) takes the queue off the reaper agenda', async () => {
    const w = await world();
    await created(w, '/queues/off', { autoDeleteOnIdle: 'PT5M' });
    w.at(MINUTE);
    expect((await w.api('PUT', '/queues/off', { autoDeleteOnIdle: null })).status).toBe(200);

    w.at(24 * 60 * MINUTE);
    await w.tick();

    expect(await w.exists('/queues/off')).toBe(true);
  });

  it('I1/I4: once eligible, the queue goes in the first reaper run (no second run needed)', async () => {
    const w = await world();
    await created(w, '/queues/once', { autoDeleteOnIdle: 'PT7M' });

    w.at(7 * MINUTE + GRACE + SECOND);
    const report = await w.reaper();

    expect(report.entitiesDeleted).toEqual(['queues/once']);
    expect(await w.exists('/queues/once')).toBe(false);
  });
});

interface Use {
  name: string;
  /** Extra queue properties the use needs. */
  props?: Record<string, unknown>;
  /** Done at t0, in the creation minute (writes no access). */
  prepare?: (w: World) => Promise<unknown>;
  act: (w: World, prepared: unknown) => Promise<void>;
}

const uses: Use[] = [
  {
    name: 'a send',
    act: async (w) => expect((await w.api('POST', '/queues/q/messages', { body: 'x' })).status).toBe(201),
  },
  {
    name: 'an empty receive (peekLock)',
    act: async (w) => {
      const res = await w.api('POST', '/queues/q/messages/receive', { mode: 'peekLock' });
      expect(res.status).toBe(200);
      expect(res.body.messages).toEqual([]);
    },
  },
  {
    name: 'a receive from the dead-letter subqueue',
    act: async (w) => expect((await w.api('POST', '/queues/q/$deadletterqueue/messages/receive', {})).status).toBe(200),
  },
  {
    name: 'settling a locked message (complete)',
    props: { lockDuration: 'PT5M' },
    prepare: async (w) => {
      await w.api('POST', '/queues/q/messages', { body: 'x' });
      const got = await w.api('POST', '/queues/q/messages/receive', { mode: 'peekLock' });
      return got.body.messages[0];
    },
    act: async (w, prepared) => {
      const m = prepared as { sequenceNumber: string; lockToken: string };
      expect((await w.api('POST', `/queues/q/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    },
  },
  {
    name: 'an update (PUT)',
    act: async (w) => expect((await w.api('PUT', '/queues/q', { maxDeliveryCount: 3 })).status).toBe(200),
  },
  {
    name: 'sending a scheduled message (cancelled in the same minute)',
    act: async (w) => {
      const when = new Date(w.clock.now() + 60 * MINUTE).toISOString();
      const res = await w.api('POST', '/queues/q/messages', { body: 's', scheduledEnqueueTime: when });
      expect(res.status).toBe(201);
      // Cancelled at once, so only the scheduling send itself can keep the queue alive.
      expect((await w.api('DELETE', `/queues/q/messages/scheduled/${res.body.sequenceNumber}`)).status).toBe(204);
    },
  },
  {
    name: 'a peek (browse)',
    act: async (w) => expect((await w.api('GET', '/queues/q/messages?fromSequenceNumber=0&maxMessages=10')).status).toBe(200),
  },
  {
    name: 'a peek of the dead-letter subqueue',
    act: async (w) => expect((await w.api('GET', '/queues/q/$deadletterqueue/messages')).status).toBe(200),
  },
];

describe('I2: what counts as use of a queue', () => {
  it.each(uses)('I2: $name at t+4m resets the idle clock: kept at t+6m, deleted at use+5m+1s', async (use) => {
    const w = await world();
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M', ...use.props });
    const prepared = await use.prepare?.(w);

    const usedAt = 4 * MINUTE;
    w.at(usedAt);
    await use.act(w, prepared);

    w.at(6 * MINUTE);
    expect(await w.tick()).toEqual([]);

    w.at(usedAt + 5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['queues/q']);
  });

  it('I2: reading the queue (GET, list) is not use: the queue is deleted on schedule', async () => {
    const w = await world();
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });

    w.at(4 * MINUTE);
    expect((await w.api('GET', '/queues/q')).status).toBe(200);
    expect((await w.api('GET', '/queues')).status).toBe(200);

    w.at(5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['queues/q']);
  });

  it('I2: a pending scheduled message (due in a day) keeps the queue alive long past its idle deadline', async () => {
    const w = await world({ counts: true });
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    const when = new Date(w.t0 + 24 * 60 * MINUTE).toISOString();
    const sent = await w.api('POST', '/queues/q/messages', { body: 'later', scheduledEnqueueTime: when });
    expect(sent.status).toBe(201);

    for (const offset of [6 * MINUTE, 30 * MINUTE, 12 * 60 * MINUTE]) {
      w.at(offset);
      expect(await w.tick()).toEqual([]);
      expect(await w.exists('/queues/q')).toBe(true);
    }
    expect((await w.api('GET', '/queues/q')).body.runtime.scheduledMessageCount).toBe(1);

    // Once nothing is scheduled any more, idleness counts again.
    const cancelledAt = 12 * 60 * MINUTE;
    expect((await w.api('DELETE', `/queues/q/messages/scheduled/${sent.body.sequenceNumber}`)).status).toBe(204);
    w.at(cancelledAt + 5 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['queues/q']);
  });

  it('I2: a scheduled message stops keeping the queue alive once the sweeper has activated it', async () => {
    const w = await world({ counts: true });
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    const usedAt = 4 * MINUTE;
    w.at(usedAt);
    const when = new Date(w.t0 + usedAt + 30 * SECOND).toISOString();
    expect((await w.api('POST', '/queues/q/messages', { body: 's', scheduledEnqueueTime: when })).status).toBe(201);

    w.at(6 * MINUTE);
    await w.sweeper(); // activates it: Scheduled -> Active (S6)
    expect(await w.tick()).toEqual([]);
    expect((await w.api('GET', '/queues/q')).body.runtime).toMatchObject({ scheduledMessageCount: 0, activeMessageCount: 1 });

    w.at(usedAt + 5 * MINUTE + GRACE + SECOND);
    await w.sweeper();
    expect(await w.tick()).toEqual(['queues/q']);
  });

  it('I2: a queue used every few minutes is never deleted', async () => {
    const w = await world();
    await created(w, '/queues/busy', { autoDeleteOnIdle: 'PT5M' });

    for (let minute = 3; minute <= 30; minute += 3) {
      w.at(minute * MINUTE);
      expect((await w.api('POST', '/queues/busy/messages/receive', {})).status).toBe(200);
      w.at(minute * MINUTE + 30 * SECOND);
      expect(await w.tick()).toEqual([]);
    }
    expect(await w.exists('/queues/busy')).toBe(true);
  });

  it('I1/I2: a use 30 s after the last recorded access still counts: not deleted before that use + 5 min', async () => {
    // I1: deleted "once it has been idle that long". touchEntity writes accessedAt at
    // most once a minute, so the reaper must allow for a use it did not record.
    const w = await world();
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });

    const usedAt = 30 * SECOND;
    w.at(usedAt);
    expect((await w.api('POST', '/queues/q/messages', { body: 'x' })).status).toBe(201);

    w.at(5 * MINUTE + SECOND); // 4 min 31 s after the last use
    await w.tick();
    expect(await w.exists('/queues/q')).toBe(true);

    w.at(usedAt + 5 * MINUTE + 2 * MINUTE); // I4: at most 2 minutes after eligibility
    await w.tick();
    expect(await w.exists('/queues/q')).toBe(false);
  });
});

describe('I3: forwarding queues are never idle', () => {
  it('I3: a queue with forwardTo and autoDeleteOnIdle PT5M is not deleted, however long it stays untouched', async () => {
    const w = await world();
    await created(w, '/queues/target', {});
    await created(w, '/queues/fwd', { autoDeleteOnIdle: 'PT5M', forwardTo: 'queues/target' });

    for (const offset of [6 * MINUTE, 60 * MINUTE, 7 * 24 * 60 * MINUTE]) {
      w.at(offset);
      expect(await w.tick()).toEqual([]);
    }

    expect(await w.exists('/queues/fwd')).toBe(true);
  });

  it('I3: once forwardTo is removed, the queue is idle again and goes after autoDeleteOnIdle', async () => {
    const w = await world();
    await created(w, '/queues/target', {});
    await created(w, '/queues/fwd', { autoDeleteOnIdle: 'PT5M', forwardTo: 'queues/target' });
    w.at(60 * MINUTE);
    await w.tick();

    expect((await w.api('PUT', '/queues/fwd', { forwardTo: null })).status).toBe(200);
    w.at(65 * MINUTE + GRACE + SECOND);

    expect(await w.tick()).toEqual(['queues/fwd']);
    expect(await w.exists('/queues/target')).toBe(true);
  });
});

describe('E6: accessedAt', () => {
  /** Counts UpdateCommands on the queue's entity item (the writes of accessedAt): tried and done. */
  function counting(deps: Deps, name: string) {
    const tally = { tried: 0, written: 0 };
    const real = deps.db;
    const send = async (command: unknown, ...rest: unknown[]) => {
      const mine = command instanceof UpdateCommand && inputOf(command).Key?.pk === 'queues' && inputOf(command).Key?.sk === name;
      if (mine) tally.tried++;
      const out = await (real.send as (c: unknown, ...r: unknown[]) => Promise<unknown>)(command, ...rest);
      if (mine) tally.written++;
      return out;
    };
    const db = new Proxy(real, {
      get(target, prop) {
        if (prop === 'send') return send;
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as DynamoDBDocumentClient;
    return { api: apiClient({ ...deps, db }), writes: () => tally.written, tally };
  }

  it('E6: runtime.accessedAt advances after a use, at most once a minute (two uses within a minute write once)', async () => {
    const w = await world();
    await created(w, '/queues/e6', { autoDeleteOnIdle: 'PT5M' });
    const counted = counting(w.deps, 'e6');
    const accessedAt = async () => (await w.api('GET', '/queues/e6')).body.runtime.accessedAt as string;
    expect(await accessedAt()).toBe(new Date(w.t0).toISOString());

    w.at(30 * SECOND);
    await counted.api('POST', '/queues/e6/messages', { body: 1 });
    expect(await accessedAt()).toBe(new Date(w.t0).toISOString());
    expect(counted.writes()).toBe(0);

    const first = w.at(2 * MINUTE);
    await counted.api('POST', '/queues/e6/messages', { body: 2 });
    expect(await accessedAt()).toBe(new Date(first).toISOString());
    expect(counted.writes()).toBe(1);

    w.at(2 * MINUTE + 20 * SECOND);
    await counted.api('POST', '/queues/e6/messages/receive', {});
    w.at(2 * MINUTE + 40 * SECOND);
    await counted.api('GET', '/queues/e6/messages');
    expect(await accessedAt()).toBe(new Date(first).toISOString());
    expect(counted.writes()).toBe(1);

    const second = w.at(3 * MINUTE + SECOND);
    await counted.api('POST', '/queues/e6/messages/receive', {});
    expect(await accessedAt()).toBe(new Date(second).toISOString());
    expect(counted.writes()).toBe(2);
  });

  it('E6: a batch of 50 sends in one minute writes accessedAt once', async () => {
    const w = await world();
    await created(w, '/queues/e6b', { autoDeleteOnIdle: 'PT5M' });
    const counted = counting(w.deps, 'e6b');

    const now = w.at(2 * MINUTE);
    const messages = Array.from({ length: 50 }, (_, i) => ({ body: i }));
    expect((await counted.api('POST', '/queues/e6b/messages/batch', { messages })).status).toBe(201);

    const item = await queueItem(w.deps, 'e6b');
    expect(item?.accessedAt).toBe(now);
    expect((await w.api('GET', '/queues/e6b')).body.runtime.accessedAt).toBe(new Date(now).toISOString());
    // Concurrent touches race on the condition: exactly one write succeeds (tally.tried
    // counts the attempts, which may be more).
    expect(counted.writes()).toBe(1);
  });

  it('E6: an update writes updatedAt and accessedAt', async () => {
    const w = await world();
    await created(w, '/queues/e6u', {});

    const now = w.at(10 * SECOND);
    await w.api('PUT', '/queues/e6u', { maxDeliveryCount: 4 });

    const runtime = (await w.api('GET', '/queues/e6u')).body.runtime;
    expect(runtime.updatedAt).toBe(new Date(now).toISOString());
    expect(runtime.accessedAt).toBe(new Date(now).toISOString());
    expect(runtime.createdAt).toBe(new Date(w.t0).toISOString());
  });
});

/** A db that runs `before` once, just ahead of the first command that `match`es. */
function interceptOnce(deps: Deps, match: (c: unknown) => boolean, before: () => Promise<void>): Deps {
  const real = deps.db;
  let done = false;
  const send = async (command: unknown, ...rest: unknown[]) => {
    if (!done && match(command)) {
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

const deletesQueue = (name: string) => (c: unknown) =>
  c instanceof TransactWriteCommand &&
  (inputOf(c).TransactItems ?? []).some((i: { Delete?: { Key?: { pk?: string; sk?: string } } }) => i.Delete?.Key?.pk === 'queues' && i.Delete.Key.sk === name);

describe('I1/I2: an entity that becomes busy again while its deletion is due', () => {
  it('I1/I2: a queue past its idle deadline that is used before the reaper runs is not deleted', async () => {
    const w = await world();
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    w.at(6 * MINUTE); // due since t0 + 5 min

    expect((await w.api('POST', '/queues/q/messages', { body: 'back' })).status).toBe(201);
    expect(await w.tick()).toEqual([]);

    expect(await w.exists('/queues/q')).toBe(true);
    const got = await w.api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete' });
    expect(got.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['back']);
  });

  it('I1/I2: a use between the reaper deciding and deleting makes the conditional delete fail: the queue stays', async () => {
    const w = await world();
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    w.at(6 * MINUTE);
    // The reaper has read the queue and found it idle; a receive lands just before its delete.
    const racing = interceptOnce(w.deps, deletesQueue('q'), async () => {
      expect((await w.api('POST', '/queues/q/messages/receive', {})).status).toBe(200);
    });

    const report = await createReaperHandler(racing)();

    expect(report.entitiesDeleted).toEqual([]);
    expect(await w.exists('/queues/q')).toBe(true);
    w.at(11 * MINUTE + GRACE + SECOND);
    expect(await w.tick()).toEqual(['queues/q']);
  });

  it('I1/S1: a send that is acknowledged while the reaper deletes the queue is not lost (the send fails, or the queue and message remain)', async () => {
    const w = await world();
    await created(w, '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    w.at(6 * MINUTE);
    // The send has read the queue; the reaper runs to completion before the message is written.
    const racing = interceptOnce(
      w.deps,
      (c) => c instanceof PutCommand && String(inputOf(c).Item?.pk ?? '').startsWith('msg/'),
      async () => {
        await w.reaper();
      },
    );

    const sent = await apiClient(racing)('POST', '/queues/q/messages', { body: 'in flight' });

    if (sent.status === 201) {
      expect(await w.exists('/queues/q')).toBe(true);
      const got = await w.api('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete' });
      expect(got.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['in flight']);
    } else {
      expect(sent.status).toBeGreaterThanOrEqual(400);
    }
  });
});
