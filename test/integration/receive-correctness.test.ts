/**
 * Receive correctness: a long poll must not hand out a message of an
 * entity deleted while it waited (E4), a receive behind many expired messages
 * must keep going until it finds the live ones (T4, R1), and what comes back to a queue
 * (abandoned, or its lock lapsed) is handed out again oldest sequence first (R2, R4, R6).
 */
import { describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { apiClient, apiOnTable } from '../support/api.js';
import { HookedClock } from '../support/hooked-clock.js';
import { queueMaker } from '../support/queue-helpers.js';
import { indexLayout } from '../support/default-layout.js';
import { testDeps } from '../support/table.js';
import { MESSAGE_PK_PREFIX } from '../../lib/store/keys.js';

const clock = new HookedClock();

const api = apiOnTable(clock, 'rcorrect');

const SECOND = 1000;
const MINUTE = 60 * SECOND;

const newQueue = queueMaker(() => api, 'rc');

describe('E4: a long poll does not deliver from an entity deleted while it waits', () => {
  it('E4: a scheduled message that becomes due after the queue was deleted is not delivered; the receive answers 404', async () => {
    const q = await newQueue();
    const sent = await api('POST', `/queues/${q}/messages`, { body: 'later', scheduledEnqueueTime: new Date(clock.now() + MINUTE).toISOString() });
    expect(sent.status).toBe(201);
    clock.onSleep = async () => {
      expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
      expect((await api('GET', `/queues/${q}`)).status).toBe(404);
      clock.advance(2 * MINUTE);
    };

    const got = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT15S' });

    expect(got.status, JSON.stringify(got.body)).toBe(404);
    expect(got.body.error.code).toBe('EntityNotFound');
  });

  it('E4: a message whose lock lapses during the wait is not delivered once its queue is gone', async () => {
    const q = await newQueue({ lockDuration: 'PT30S' });
    expect((await api('POST', `/queues/${q}/messages`, { body: 'x' })).status).toBe(201);
    const first = await api('POST', `/queues/${q}/messages/receive`, {});
    expect(first.body.messages).toHaveLength(1);
    clock.onSleep = async () => {
      expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
      clock.advance(MINUTE);
    };

    const got = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT15S' });

    expect(got.status, JSON.stringify(got.body)).toBe(404);
  });

  it('E4: a queue re-created under the same name during the wait is a new entity: the old message is not delivered', async () => {
    const q = await newQueue();
    expect((await api('POST', `/queues/${q}/messages`, { body: 'old', scheduledEnqueueTime: new Date(clock.now() + MINUTE).toISOString() })).status).toBe(201);
    clock.onSleep = async () => {
      expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
      expect((await api('PUT', `/queues/${q}`, {})).status).toBe(201);
      clock.advance(2 * MINUTE);
    };

    const got = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT15S' });

    expect(got.status).toBe(404);
    expect((await api('POST', `/queues/${q}/messages/receive`, {})).body.messages).toEqual([]);
  });
});

/** Sends the messages in batches of 100 (one call each). */
async function sendMany(q: string, messages: Record<string, unknown>[]) {
  for (let i = 0; i < messages.length; i += 100) {
    const res = await api('POST', `/queues/${q}/messages/batch`, { messages: messages.slice(i, i + 100) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}

// The ManualClock stands still while a receive works, so a wait never ends for lack of real
// time: these tests do not depend on how fast the machine clears the expired messages. A one
// second wait polls five times; the backlogs are larger than five polls used to look at.
describe('T4/R1: a receive keeps going past expired messages', () => {
  it('T4: behind 300 expired messages, a receive waiting one second finds the live one and expires the rest', { timeout: 120_000 }, async () => {
    const q = await newQueue();
    await sendMany(
      q,
      Array.from({ length: 300 }, (_, i) => ({ body: `old ${i}`, timeToLive: 'PT1M' })),
    );
    await sendMany(q, [{ body: 'live' }]);
    clock.advance(2 * MINUTE);

    const got = await api('POST', `/queues/${q}/messages/receive`, { maxWaitTime: 'PT1S' });

    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['live']);
    const left = await api('GET', `/queues/${q}/messages?maxMessages=100`);
    expect(left.body.messages.map((m: { body: unknown }) => m.body)).toEqual(['live']);
  });

  it('T4: the same behind expired messages in a partitioned queue, with maxMessages 5', { timeout: 120_000 }, async () => {
    const q = await newQueue({ enablePartitioning: true });
    await sendMany(
      q,
      Array.from({ length: 400 }, (_, i) => ({ body: `old ${i}`, timeToLive: 'PT1M', partitionKey: 'k' })),
    );
    await sendMany(
      q,
      Array.from({ length: 5 }, (_, i) => ({ body: `live ${i}`, partitionKey: 'k' })),
    );
    clock.advance(2 * MINUTE);

    const got = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: 5, maxWaitTime: 'PT1S' });

    expect(got.status).toBe(200);
    expect(got.body.messages.map((m: { body: unknown }) => m.body).sort()).toEqual(['live 0', 'live 1', 'live 2', 'live 3', 'live 4']);
  });

  it('T4: an expired message its queue only deletes is removed from its index entry alone, without reading the message', async () => {
    // Today's layout: removal from the index entry alone is its mechanism, and the peek below
    // expects the receive to have cleared every expired message it passed (T7 lets a positioned
    // queue's peek still show them).
    const deps = { ...(await testDeps(clock, 'rcread')), ...indexLayout };
    const direct = apiClient(deps);
    // Every GetItem of a message item: the document client sends through the client's middleware stack.
    const messageReads: string[] = [];
    deps.client.middlewareStack.add(
      (next, context) => async (args) => {
        const key = (args.input as { Key?: { pk?: { S?: string } | string } }).Key?.pk;
        const pk = typeof key === 'string' ? key : key?.S;
        if (context.commandName === 'GetItemCommand' && pk?.startsWith(MESSAGE_PK_PREFIX)) messageReads.push(pk);
        return next(args);
      },
      { step: 'initialize', name: 'countMessageReads' },
    );
    expect((await direct('PUT', '/queues/rcread', {})).status).toBe(201);
    const sent = await direct('POST', '/queues/rcread/messages/batch', {
      messages: Array.from({ length: 20 }, (_, i) => ({ body: `old ${i}`, timeToLive: 'PT1M' })),
    });
    expect(sent.status).toBe(201);
    clock.advance(2 * MINUTE);

    const got = await direct('POST', '/queues/rcread/messages/receive', { maxMessages: 5 });

    expect(got.status).toBe(200);
    expect(got.body.messages).toEqual([]);
    expect((await direct('GET', '/queues/rcread/messages?maxMessages=100')).body.messages).toEqual([]);
    expect(messageReads).toEqual([]);
  });
});

describe('R2/R4/R6: what comes back comes back oldest first', () => {
  const bodiesOf = (messages: { body: string; deliveryCount: number }[]) => messages.map((m) => `${m.body}${m.deliveryCount}`);
  it.each(['index', 'tickets', 'positions'] as NewEntityLayout[])(
    'R2, R4, R6: on the %s layout, a message abandoned again and again, a batch abandoned last first, and lapses before and after an abandon come back in sequence order',
    async (layout) => {
      const deps = { ...(await testDeps(clock, `rorder${layout}`)), newEntityLayout: layout };
      const laid = apiClient(deps);
      const path = '/queues/order';
      expect((await laid('PUT', path, { lockDuration: 'PT30S', maxDeliveryCount: 100 })).status).toBe(201);
      for (const body of ['A', 'B', 'C', 'D']) expect((await laid('POST', `${path}/messages`, { body })).status).toBe(201);
      const receive = async (maxMessages: number) => {
        const got = await laid('POST', `${path}/messages/receive`, { maxMessages });
        expect(got.status, JSON.stringify(got.body)).toBe(200);
        return got.body.messages as { body: string; deliveryCount: number; sequenceNumber: string; lockToken: string }[];
      };
      const abandon = async (m: { sequenceNumber: string; lockToken: string }) =>
        expect((await laid('POST', `${path}/messages/${m.sequenceNumber}/abandon`, { lockToken: m.lockToken })).status).toBe(204);

      // A lone receiver that abandons gets the same message back each time (a ticketed queue took
      // the next head first and put it in line ahead of the abandoned one).
      const alone: string[] = [];
      for (let i = 0; i < 5; i++) {
        const [m] = await receive(1);
        alone.push(...bodiesOf([m!]));
        await abandon(m!);
      }
      expect(alone).toEqual(['A1', 'A2', 'A3', 'A4', 'A5']);

      // A batch abandoned last message first comes back in its own order.
      const batch = await receive(3);
      expect(bodiesOf(batch)).toEqual(['A6', 'B1', 'C1']);
      for (const m of [...batch].reverse()) await abandon(m);
      expect(bodiesOf(await receive(4))).toEqual(['A7', 'B2', 'C2', 'D1']);

      // An earlier message whose lock lapses after a later one was abandoned still goes first.
      clock.advance(31 * SECOND);
      const [a, b] = await receive(2);
      expect(bodiesOf([a!, b!])).toEqual(['A8', 'B3']);
      await abandon(b!);
      clock.advance(31 * SECOND);
      expect(bodiesOf(await receive(4))).toEqual(['A9', 'B4', 'C3', 'D2']);

      // A message taken fresh whose lock lapses, and a later one abandoned meanwhile: the earlier
      // goes first (a ticketed queue claimed what was abandoned before it took the lapse back).
      clock.advance(31 * SECOND);
      for (const m of await receive(4)) await laid('POST', `${path}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
      for (const body of ['E', 'F']) expect((await laid('POST', `${path}/messages`, { body })).status).toBe(201);
      const [e] = await receive(1);
      const [f] = await receive(1);
      expect(bodiesOf([e!, f!])).toEqual(['E1', 'F1']);
      clock.advance(20 * SECOND);
      await abandon(f!);
      clock.advance(11 * SECOND);
      expect(bodiesOf(await receive(4))).toEqual(['E2', 'F2']);
    },
  );

  it.each(['index', 'tickets', 'positions'] as NewEntityLayout[])(
    'R2, T4: on the %s layout, live messages back in line behind expired ones come before a newer message at the head',
    async (layout) => {
      const deps = { ...(await testDeps(clock, `rexpired${layout}`)), newEntityLayout: layout };
      const laid = apiClient(deps);
      const path = '/queues/behind';
      expect((await laid('PUT', path, { lockDuration: 'PT30S', maxDeliveryCount: 10 })).status).toBe(201);
      const batch = async (bodies: string[], extra = {}) =>
        expect((await laid('POST', `${path}/messages/batch`, { messages: bodies.map((body) => ({ body, ...extra })) })).status).toBe(201);
      await batch(['a1', 'a2', 'a3', 'a4'], { timeToLive: 'PT40S' });
      await batch(['b1', 'b2']);
      const held = (await laid('POST', `${path}/messages/receive`, { maxMessages: 6 })).body.messages as { sequenceNumber: string; lockToken: string }[];
      expect(held).toHaveLength(6);
      for (const m of held) expect((await laid('POST', `${path}/messages/${m.sequenceNumber}/abandon`, { lockToken: m.lockToken })).status).toBe(204);
      clock.advance(MINUTE);
      await batch(['c']);
      // More expired messages in line than one poll removes: the next poll goes on at once.
      const got: string[] = [];
      for (let i = 0; i < 3; i++)
        got.push(...((await laid('POST', `${path}/messages/receive`, { maxMessages: 1 })).body.messages as { body: string }[]).map((m) => m.body));
      expect(got).toEqual(['b1', 'b2', 'c']);
    },
  );
});
