/**
 * I2: a message the broker promised to deliver later keeps its queue, or its topic
 * (through the subscriptions' scheduled copies), alive until it is due, whether or not the
 * stream consumer has counted it yet. Each test gets its own table and ManualClock; the
 * reaper runs as it would every minute.
 */
import { describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { TableStreamReader, deliver as deliverRecords } from '../support/stream.js';
import { createReaperHandler } from '../../functions/reaper/handler.js';
import { createStreamHandler } from '../../functions/stream/handler.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

async function world({ counts }: { counts: boolean }) {
  const clock = new ManualClock();
  const t0 = clock.now();
  const deps = await testDeps(clock, 'idle-sched', undefined, { stream: true });
  const api = apiClient(deps);
  const reaper = createReaperHandler(deps);
  const stream = createStreamHandler(deps);
  const reader = new TableStreamReader(deps);
  const at = (offset: number) => {
    clock.current = Math.max(clock.current, t0 + offset);
  };
  const tick = async (): Promise<string[]> => {
    if (counts) await deliverRecords(stream, await reader.read());
    return (await reaper()).entitiesDeleted as string[];
  };
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await api(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res;
  };
  const exists = async (path: string) => (await api('GET', path)).status === 200;
  /** At each of `offsets` the reaper keeps `path`; a minute past `due` it deletes it. */
  const keptUntil = async (path: string, due: number, offsets: number[]) => {
    for (const offset of offsets) {
      at(offset);
      expect(await tick()).toEqual([]);
      expect(await exists(`/${path}`)).toBe(true);
    }
    at(due + MINUTE);
    expect(await tick()).toEqual([path]);
  };
  return { t0, at, tick, ok, api, exists, keptUntil };
}

describe('I2: a pending scheduled message keeps its entity alive until it is due', () => {
  for (const counts of [false, true]) {
    const how = counts ? 'with the stream counted' : 'before the stream consumer has counted it';
    it(`I2: a queue (PT5M) with a message scheduled 30 minutes ahead is kept until it is due, ${how}, and no longer`, async () => {
      const w = await world({ counts });
      await w.ok('PUT', '/queues/q', { autoDeleteOnIdle: 'PT5M' });
      const due = 30 * MINUTE;
      await w.ok('POST', '/queues/q/messages', { body: 'later', scheduledEnqueueTime: new Date(w.t0 + due).toISOString() });

      await w.keptUntil('queues/q', due, [10 * MINUTE, 20 * MINUTE, due - SECOND]);
    });

    it(`I2, S4: a queue (PT5M) sent a batch whose last-due message is scheduled 30 minutes ahead is kept until it is due, ${how}, and no longer`, async () => {
      const w = await world({ counts });
      await w.ok('PUT', '/queues/q', { autoDeleteOnIdle: 'PT5M' });
      const due = 30 * MINUTE;
      const at = (offset: number) => new Date(w.t0 + offset).toISOString();
      await w.ok('POST', '/queues/q/messages/batch', {
        messages: [
          { body: 'now' },
          { body: 'sooner', scheduledEnqueueTime: at(10 * MINUTE) },
          { body: 'later', scheduledEnqueueTime: at(due) },
          { body: 'now too' },
        ],
      });
      await w.keptUntil('queues/q', due, [10 * MINUTE, 20 * MINUTE, due - SECOND]);
    });

    it(`I2: a topic (PT5M) whose subscription holds a copy scheduled 30 minutes ahead is kept until it is due, ${how}, and no longer`, async () => {
      const w = await world({ counts });
      await w.ok('PUT', '/topics/t', { autoDeleteOnIdle: 'PT5M' });
      await w.ok('PUT', '/topics/t/subscriptions/s', {});
      const due = 30 * MINUTE;
      await w.ok('POST', '/topics/t/messages', { body: 'later', scheduledEnqueueTime: new Date(w.t0 + due).toISOString() });

      await w.keptUntil('topics/t', due, [10 * MINUTE, due - SECOND]);
    });
  }

  it('I2: cancelling the latest of two scheduled messages moves the hold back to the other one', async () => {
    const w = await world({ counts: false });
    await w.ok('PUT', '/queues/q', { autoDeleteOnIdle: 'PT5M' });
    await w.ok('POST', '/queues/q/messages', { body: 'sooner', scheduledEnqueueTime: new Date(w.t0 + 30 * MINUTE).toISOString() });
    const later = await w.ok('POST', '/queues/q/messages', { body: 'later', scheduledEnqueueTime: new Date(w.t0 + 120 * MINUTE).toISOString() });
    await w.ok('DELETE', `/queues/q/messages/scheduled/${later.body.sequenceNumber}`);

    w.at(30 * MINUTE - SECOND);
    expect(await w.tick()).toEqual([]);
    w.at(31 * MINUTE);
    expect(await w.tick()).toEqual(['queues/q']);
  });

  it('I2 N6: in a queue that requires sessions, cancelling the latest scheduled message keeps the hold (until the cancelled time)', async () => {
    const w = await world({ counts: false });
    await w.ok('PUT', '/queues/q', { autoDeleteOnIdle: 'PT5M', requiresSession: true });
    await w.ok('POST', '/queues/q/messages', { body: 'sooner', sessionId: 's', scheduledEnqueueTime: new Date(w.t0 + 30 * MINUTE).toISOString() });
    const later = await w.ok('POST', '/queues/q/messages', {
      body: 'later',
      sessionId: 's',
      scheduledEnqueueTime: new Date(w.t0 + 120 * MINUTE).toISOString(),
    });
    await w.ok('DELETE', `/queues/q/messages/scheduled/${later.body.sequenceNumber}`);

    // Recounting without the session's messages would have let the reaper take the queue
    // (and the message due at 30 minutes) at 5 minutes.
    for (const offset of [10 * MINUTE, 30 * MINUTE - SECOND, 119 * MINUTE]) {
      w.at(offset);
      expect(await w.tick()).toEqual([]);
    }
    w.at(121 * MINUTE);
    expect(await w.tick()).toEqual(['queues/q']);
  });
});
