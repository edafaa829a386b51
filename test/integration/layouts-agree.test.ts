/**
 * The three message layouts side by side (R1-R4, R7, R8, R9, D1, T4): the same seeded requests
 * (sends, peek-lock receives and receive-and-deletes of one to four, completes, abandons, defers,
 * dead-letters, renews, peeks of the queue and of its dead-letter subqueue) go to a queue of each
 * layout, and each must answer exactly as the others do: the same messages, in the same order,
 * with the same delivery counts and states.
 *
 * `still`: the clock never moves, so no lock lapses and nothing expires or comes due; today's
 * layout (`index`) must agree with both positioned ones. `moving`: the clock moves, some messages
 * have a time to live and some are scheduled; today's layout hands out what lapsed in the order it
 * became visible, not by number, and keeps scheduled messages in their numbered place, so there
 * only the positioned layouts (cursor-claimed and ticketed) are held to each other.
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, type Json } from '../support/api.js';
import { seededRandom } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const STEPS = 150;

/** What `layout` answers to the requests `seed` draws, a line a request. */
async function run(layout: NewEntityLayout, seed: number, moving: boolean): Promise<string[]> {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  const api = apiClient({ ...(await testDeps(clock, `agree${layout}${seed}`)), newEntityLayout: layout });
  const random = seededRandom(seed);
  const path = '/queues/q';
  expect((await api('PUT', path, { lockDuration: 'PT30S', maxDeliveryCount: 4, deadLetteringOnMessageExpiration: true })).status).toBe(201);
  const log: string[] = [];
  const held: { n: string; seq: string; token: string }[] = [];
  const shown = (m: Json) => `${m.body.n}:${m.deliveryCount}${m.state && m.state !== 'Active' ? `:${m.state}` : ''}`;
  let n = 0;
  for (let step = 0; step < STEPS; step++) {
    const roll = random();
    if (roll < 0.25) {
      const names = Array.from({ length: random() < 0.5 ? 1 : 1 + Math.floor(random() * 4) }, () => `m${n++}`);
      const ttl = moving && random() < 0.15 ? { timeToLive: `PT${20 + Math.floor(random() * 60)}S` } : {};
      const at = moving && random() < 0.15 ? { scheduledEnqueueTime: new Date(clock.now() + Math.floor(random() * 40_000)).toISOString() } : {};
      const res =
        names.length === 1
          ? await api('POST', `${path}/messages`, { body: { n: names[0] }, ...ttl, ...at })
          : await api('POST', `${path}/messages/batch`, { messages: names.map((name) => ({ body: { n: name }, ...ttl, ...at })) });
      log.push(`send ${names.join(',')} ${res.status}`);
    } else if (roll < 0.5) {
      const max = 1 + Math.floor(random() * 4);
      const mode = random() < 0.15 ? 'receiveAndDelete' : 'peekLock';
      const res = await api('POST', `${path}/messages/receive`, { maxMessages: max, mode });
      const messages = (res.body.messages ?? []) as Json[];
      log.push(`${mode} ${max} ${res.status} [${messages.map(shown).join(' ')}]`);
      if (mode === 'peekLock') for (const m of messages) held.push({ n: m.body.n, seq: m.sequenceNumber, token: m.lockToken });
    } else if (roll < 0.75 && held.length > 0) {
      const [h] = held.splice(Math.floor(random() * held.length), 1);
      const actions = ['complete', 'complete', 'abandon', 'abandon', 'deadletter', 'renew-lock', 'defer'];
      const action = actions[Math.floor(random() * actions.length)]!;
      const res = await api('POST', `${path}/messages/${h!.seq}/${action}`, { lockToken: h!.token });
      log.push(`${action} ${h!.n} ${res.status}${res.status >= 400 ? ` ${res.body?.error?.code}` : ''}`);
      if (action === 'renew-lock' && res.status === 200) held.push(h!);
    } else if (roll < 0.85) {
      const ms = Math.floor(random() * 25_000);
      if (moving) clock.advance(ms);
      log.push(`advance ${moving ? ms : 0}`);
    } else if (roll < 0.92) {
      const res = await api('GET', `${path}/messages?maxMessages=100`);
      log.push(`peek ${res.status} [${(res.body.messages as Json[]).map(shown).join(' ')}]`);
    } else {
      const res = await api('GET', `${path}/$deadletterqueue/messages?maxMessages=100`);
      // Which messages, not their order: expiries met together are moved side by side, numbered as they land.
      log.push(
        `peek dead letters ${res.status} [${(res.body.messages as Json[])
          .map((m) => m.body.n)
          .sort()
          .join(' ')}]`,
      );
    }
  }
  return log;
}

describe('the layouts agree', () => {
  it.each([
    [11, 'still', ['index', 'tickets', 'positions']],
    [12, 'moving', ['tickets', 'positions']],
  ] as [number, 'still' | 'moving', NewEntityLayout[]][])(
    'R1, R2, R3, R4, R7, R8, R9, D1, T4: seed %i, the clock %s: %j answer the same requests alike',
    { timeout: 120_000 },
    async (seed, clockMode, layouts) => {
      const [first, ...others] = await Promise.all(layouts.map((layout) => run(layout, seed, clockMode === 'moving')));
      for (const [i, other] of others.entries()) {
        const differs = first!.findIndex((line, step) => line !== other[step]);
        expect(differs === -1 ? 'alike' : `step ${differs}: ${layouts[0]} ${first![differs]} / ${layouts[i + 1]} ${other[differs]}`).toBe('alike');
      }
    },
  );
});
