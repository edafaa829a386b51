/**
 * Writes that landed, whose answer was lost (DynamoDB answered 500 InternalServerError, or the
 * network timed out after the write was applied), and that the SDK's retry strategy sent again:
 * the second attempt meets the item the first wrote and fails its own condition. Each such write
 * must read that refusal as its own landed write, never as another writer's: a send that
 * answered "not stored" while its message is delivered makes the client's resend a second copy
 * (S1), a renumbered put stores one message twice (S1, S2), and a take read as an empty head
 * leaves a ticket nobody holds, whose take-back counts a delivery (R3).
 *
 * Through the API on DynamoDB Local, the faults injected inside the SDK's retry loop
 * (test/support/dynamo-faults.ts `retried`); time from the ManualClock.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import {
  CURSOR_PK_PREFIX,
  LEASE_PK_PREFIX,
  MESSAGE_PK_PREFIX,
  POSITION_COUNTER_PK_PREFIX,
  POSITIONED_PK_PREFIX,
  REMINDER_PK_PREFIX,
  SESSIONS_PK_PREFIX,
} from '../../lib/store/keys.js';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { ManualClock, testDeps } from '../support/table.js';

const LOCK_MS = 30_000;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

type TestDeps = Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: NewEntityLayout };

const pkOf = (c: StoreCall): string => String((c.input.Item ?? c.input.Key)?.pk?.S ?? '');
/** A message's put (no transaction) into a partition whose pk starts with `prefix`. */
const messagePut = (prefix: string) => (c: StoreCall) => c.operation === 'PutItem' && pkOf(c).startsWith(prefix) && c.input.Item?.tomb === undefined;
/** The first call `when` chooses, and no later one. */
const once = (when: (c: StoreCall) => boolean) => {
  let chosen = false;
  return (c: StoreCall) => !chosen && when(c) && (chosen = true);
};
/** A cursor claim's write (leases.ts `writeCursor`): a put of the cursor carrying a claim record. */
const cursorClaim = (c: StoreCall) => c.operation === 'PutItem' && pkOf(c).startsWith(CURSOR_PK_PREFIX) && c.input.Item?.claim !== undefined;
/** A ticket's take: the counter update that sets `taken`. */
const take = (c: StoreCall) =>
  c.operation === 'UpdateItem' && pkOf(c).startsWith(POSITION_COUNTER_PK_PREFIX) && /^SET taken/.test(String(c.input.UpdateExpression));

async function world(layout: NewEntityLayout, prefix: string) {
  const deps: TestDeps = { ...(await testDeps(clock, prefix)), newEntityLayout: layout };
  const api = apiClient(deps);
  let queues = 0;
  const newQueue = async (properties: Record<string, unknown> = {}) => {
    const name = `q${++queues}`;
    expect((await api('PUT', `/queues/${name}`, { lockDuration: 'PT30S', ...properties })).status).toBe(201);
    return name;
  };
  /**
   * An API whose chosen writes meet `fault`: they land, lose their answer and are sent again by
   * the SDK (`retried`); land and lose the answer of every attempt (`lostOut`); or never land,
   * every attempt answered 500 (`failedOut`). Either of the last two, the broker sees a 500.
   */
  const faulting = (fault: 'retried' | 'lostOut' | 'failedOut', when: (c: StoreCall) => boolean) => {
    const store = faultyStore(deps.db, { [fault]: { when } }, { fastRetries: true });
    return { api: apiClient({ ...deps, db: store.db }), log: store.log };
  };
  const retrying = (when: (c: StoreCall) => boolean) => faulting('retried', when);
  /** Receives and completes until nothing is left, letting locks and holes lapse; the bodies received, with their delivery counts. */
  const drain = async (queue: string) => {
    const got: Json[] = [];
    for (let empty = 0; empty < 3;) {
      const res = await api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
      const messages = (res.status === 200 ? res.body.messages : []) as Json[];
      for (const m of messages) {
        got.push({ n: m.body.n, deliveryCount: m.deliveryCount });
        expect((await api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
      }
      if (messages.length > 0) empty = 0;
      else {
        empty++;
        clock.advance(LOCK_MS + HOLE_AFTER_MS);
      }
    }
    return got;
  };
  return { deps, api, newQueue, faulting, retrying, drain };
}

type World = Awaited<ReturnType<typeof world>>;

const sendOne = (api: ReturnType<typeof apiClient>, queue: string, n: string) => api('POST', `/queues/${queue}/messages`, { body: { n }, messageId: n });

/** A duplicate-detected send, its puts one transaction, that landed and was retried: stored once, as the SDK repeats its ClientRequestToken (S1, S7). */
async function storedOnceThroughItsToken(w: World) {
  const queue = await w.newQueue({ requiresDuplicateDetection: true });
  const { api, log } = w.retrying((c) => c.operation === 'TransactWriteItems');
  const sent = await sendOne(api, queue, 'marked');
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  expect(log.retried).toBe(1);
  expect(await w.drain(queue)).toEqual([{ n: 'marked', deliveryCount: 1 }]);
}

/**
 * A duplicate-detected send, its puts one transaction, whose every attempt answered 500: the
 * transaction landed (`lostOut`), or it did not (`failedOut`). Only what the store holds may
 * decide the answer: stored, and delivered once; or an error the client may retry, nothing
 * delivered, and the resend stored once (S1, S7).
 */
async function markedSendThrough(w: World, fault: 'lostOut' | 'failedOut') {
  const queue = await w.newQueue({ requiresDuplicateDetection: true });
  const transaction = once((c) => c.operation === 'TransactWriteItems');
  const { api, log } = w.faulting(fault, transaction);
  const sent = await sendOne(api, queue, 'marked');
  expect(log[fault]).toBe(1);
  if (fault === 'lostOut') {
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  } else {
    expect(sent.status, JSON.stringify(sent.body)).toBe(500);
    expect(sent.body.error.retryable).toBe(true);
    expect(await w.drain(queue)).toEqual([]);
    expect((await sendOne(w.api, queue, 'marked')).status).toBe(201);
  }
  expect(await w.drain(queue)).toEqual([{ n: 'marked', deliveryCount: 1 }]);
}

/**
 * A send of one message `n` whose put (into a partition whose pk starts with `prefix`) landed and
 * lost its answer: the SDK sent it again (`retried`), or every attempt's answer was lost
 * (`lostOut`). Either way it answers stored and the message is delivered once (S1).
 */
async function sentOnceThrough(w: World, fault: 'retried' | 'lostOut', prefix: string, n: string) {
  const queue = await w.newQueue();
  const put = once(messagePut(prefix));
  const { api, log } = w.faulting(fault, put);
  const sent = await sendOne(api, queue, n);
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  expect(log[fault]).toBe(1);
  expect(await w.drain(queue)).toEqual([{ n, deliveryCount: 1 }]);
}

/**
 * A batch of three whose middle put (into a partition whose pk starts with `prefix`) landed and
 * lost the answer of every attempt: the put reads its item back, so the batch answers each
 * message stored (S1, S4) and each is delivered once.
 */
async function batchStoredThroughLostAnswers(w: World, prefix: string) {
  const queue = await w.newQueue();
  const { api, log } = w.faulting(
    'lostOut',
    once((c) => messagePut(prefix)(c) && c.input.Item?.messageId?.S === 'b1'),
  );
  const sent = await api('POST', `/queues/${queue}/messages/batch`, { messages: ['b0', 'b1', 'b2'].map((n) => ({ body: { n }, messageId: n })) });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  expect(log.lostOut).toBe(1);
  expect((await w.drain(queue)).sort((x, y) => String(x.n).localeCompare(String(y.n)))).toEqual(['b0', 'b1', 'b2'].map((n) => ({ n, deliveryCount: 1 })));
}

/**
 * A positioned message's removal (`removal`: a `done` marker's put, a delete) that landed and lost
 * the answer of every attempt reads its position back: a receive-and-delete of three hands each
 * out once (R10), and a complete under a live lock answers completed (R4).
 */
async function removedThroughLostAnswers(w: World, removal: (c: StoreCall) => boolean) {
  const queue = await w.newQueue();
  for (const n of ['m0', 'm1', 'm2']) expect((await sendOne(w.api, queue, n)).status).toBe(201);
  const taking = w.faulting('lostOut', once(removal));
  const got = await taking.api('POST', `/queues/${queue}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 3, maxWaitTime: 'PT0S' });
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  expect(taking.log.lostOut).toBe(1);
  expect((got.body.messages as Json[]).map((m) => m.body.n)).toEqual(['m0', 'm1', 'm2']);
  expect(await w.drain(queue)).toEqual([]);

  const { queue: locked, m } = await oneReceived(w);
  const completing = w.faulting('lostOut', once(removal));
  const completed = await completing.api('POST', `/queues/${locked}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
  expect(completed.status, JSON.stringify(completed.body)).toBe(204);
  expect(completing.log.lostOut).toBe(1);
  expect(await w.drain(locked)).toEqual([]);
}

/**
 * A receive of one whose take (`write`) landed and lost the answer of every attempt: the message
 * is handed out now, or left for a later receive, at delivery count 1 either way; a take
 * nobody holds would spend a delivery at its lapse (R10, R3).
 */
async function noDeliverySpentThrough(w: World, write: (c: StoreCall) => boolean) {
  const queue = await w.newQueue();
  expect((await sendOne(w.api, queue, 'one')).status).toBe(201);
  const { api, log } = w.faulting('lostOut', once(write));
  const got = await api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
  expect(log.lostOut).toBe(1);
  const [m] = got.status === 200 ? (got.body.messages as Json[]) : [];
  if (m) {
    expect(m).toMatchObject({ body: { n: 'one' }, deliveryCount: 1 });
    expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
  }
  expect(await w.drain(queue), JSON.stringify(got.body)).toEqual(m ? [] : [{ n: 'one', deliveryCount: 1 }]);
}

/** A new queue of `w` holding one message, `one`, and that message received under its lock. */
async function oneReceived(w: World) {
  const queue = await w.newQueue();
  expect((await sendOne(w.api, queue, 'one')).status).toBe(201);
  const got = await w.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
  const [m] = got.body.messages as Json[];
  return { queue, m };
}

/**
 * R3, R1: a peek-lock receive of three from a new queue of `w`, its chosen `write`s landed and
 * retried by the SDK, hands out each message once, at delivery count 1; completed, nothing comes
 * back. Returns the fault log, for the caller to say how many writes were retried.
 */
async function batchReceivedThroughItsRetry(w: World, write: (c: StoreCall) => boolean) {
  const queue = await w.newQueue();
  for (const n of ['m0', 'm1', 'm2']) expect((await sendOne(w.api, queue, n)).status).toBe(201);
  const { api, log } = w.retrying(write);
  const got = await api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 3, maxWaitTime: 'PT0S' });
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  const messages = got.body.messages as Json[];
  expect(messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
    ['m0', 1],
    ['m1', 1],
    ['m2', 1],
  ]);
  for (const m of messages)
    expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
  expect(await w.drain(queue)).toEqual([]);
  return log;
}

/**
 * R4, R5: `m`'s `action` (in `queue`), its `write` landed and retried by the SDK, answers done;
 * the lock ended with it, so a complete with the same token, by the caller, is refused.
 */
async function settledThroughItsRetry(w: World, queue: string, m: Json, action: 'complete' | 'abandon' | 'defer', write: (c: StoreCall) => boolean) {
  const { api, log } = w.retrying(once(write));
  const settled = await api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/${action}`, { lockToken: m.lockToken });
  expect(log.retried).toBe(1);
  expect(settled.status, JSON.stringify(settled.body)).toBe(204);
  const again = await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });
  expect(again.status).toBe(410);
  expect(again.body).toMatchObject({ error: { code: 'MessageLockLost' } });
}

/** R4, R5: a complete whose `write` landed and was retried answers completed; the same token again is refused, and nothing comes back. */
async function completedOnceThroughItsRetry(w: World, write: (c: StoreCall) => boolean) {
  const { queue, m } = await oneReceived(w);
  await settledThroughItsRetry(w, queue, m, 'complete', write);
  expect(await w.drain(queue)).toEqual([]);
}

describe('S1: a positioned put the SDK retried after it landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('positions', 'retriedpos');
  });

  it('S1: a send whose put landed and was retried answers stored, and its message is delivered once', async () => {
    await sentOnceThrough(w, 'retried', POSITIONED_PK_PREFIX, 'once');
  });

  it('S1: a batch whose every put landed and was retried answers stored, each message delivered once', async () => {
    const queue = await w.newQueue();
    const { api, log } = w.retrying(messagePut(POSITIONED_PK_PREFIX));
    const sent = await api('POST', `/queues/${queue}/messages/batch`, { messages: ['b0', 'b1', 'b2'].map((n) => ({ body: { n }, messageId: n })) });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(log.retried).toBe(3);
    expect((await w.drain(queue)).map((m: Json) => m.n)).toEqual(['b0', 'b1', 'b2']);
  });

  it('S1, S7: a duplicate-detected send, its puts one transaction, that landed and was retried is stored once (ClientRequestToken)', async () => {
    await storedOnceThroughItsToken(w);
  });

  it('S1, S4: a batch whose middle put landed and lost the answer of every attempt reads its position back: each message stored, delivered once', async () => {
    await batchStoredThroughLostAnswers(w, POSITIONED_PK_PREFIX);
  });

  it('S1, S7: a duplicate-detected send whose transaction landed and lost every answer reads its positions back and answers stored', async () => {
    await markedSendThrough(w, 'lostOut');
  });

  it('S1, S7: a duplicate-detected send whose transaction failed unapplied answers an error, never stored, and its resend is stored once', async () => {
    await markedSendThrough(w, 'failedOut');
  });
});

describe('S1, S2: a draw of positions the SDK retried after it landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('tickets', 'retrieddraw');
  });
  /** A send's draw: the counter update that adds to `next`. */
  const draw = (c: StoreCall) =>
    c.operation === 'UpdateItem' && pkOf(c).startsWith(POSITION_COUNTER_PK_PREFIX) && /ADD #next/.test(String(c.input.UpdateExpression));

  it('S1, S2: draws once: no hole is left before the message, so a receive right after the send hands it out', async () => {
    const queue = await w.newQueue();
    const { api, log } = w.retrying(once(draw));
    expect((await sendOne(api, queue, 'drawn')).status).toBe(201);
    expect(log.retried).toBe(1);
    // A position drawn and never put would hold the head back for HOLE_AFTER_MS: the clock stands still here.
    const got = await w.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
    const [m, ...more] = got.body.messages as Json[];
    expect([m?.body.n, more]).toEqual(['drawn', []]);
    expect((await w.api('POST', `/queues/${queue}/messages/${m!.sequenceNumber}/complete`, { lockToken: m!.lockToken })).status).toBe(204);
    expect(await w.drain(queue)).toEqual([]);
  });
});

describe('R3, R1: a cursor claim the SDK retried after it landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('positions', 'retriedclaim');
  });

  it('R3, R1: the receive hands out what its claim took, once, at delivery count 1', async () => {
    const queue = await w.newQueue();
    for (const n of ['c0', 'c1']) expect((await sendOne(w.api, queue, n)).status).toBe(201);
    const { api, log } = w.retrying(once(cursorClaim));
    const got = await api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 2, maxWaitTime: 'PT0S' });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(log.retried).toBe(1);
    const messages = got.body.messages as Json[];
    expect(messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([
      ['c0', 1],
      ['c1', 1],
    ]);
    for (const m of messages)
      expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    expect(await w.drain(queue)).toEqual([]);
  });

  it('R10, R3: a claim that landed and lost every answer spends no delivery: the message comes at delivery count 1', async () => {
    await noDeliverySpentThrough(w, cursorClaim);
  });
});

/** A renew's two writes that a retry after landing can meet: the drop of the entry from the old lease (which lost the message), and the put of its own lease (which answered 500). */
const renewWrites: [string, string, (c: StoreCall) => boolean][] = [
  [
    'its drop from the old lease',
    'retriedrenew',
    (c) => c.operation === 'UpdateItem' && pkOf(c).startsWith(LEASE_PK_PREFIX) && /SET e = :rest/.test(String(c.input.UpdateExpression)),
  ],
  ["its own lease's put", 'retriedownlease', (c) => c.operation === 'PutItem' && pkOf(c).startsWith(LEASE_PK_PREFIX) && c.input.Item?.o !== undefined],
];

describe.each(renewWrites)('R4, R6: a renew whose %s landed and was retried', (_name, table, write) => {
  let w: World;
  beforeAll(async () => {
    w = await world('positions', table);
  });

  it('R4, R6: the renew answers renewed, the lock holds to its new end, and the message is never stranded', async () => {
    const queue = await w.newQueue();
    expect((await sendOne(w.api, queue, 'renewed')).status).toBe(201);
    const got = await w.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
    const [m] = got.body.messages as Json[];
    clock.advance(LOCK_MS / 2);
    const { api, log } = w.retrying(once(write));
    const renewed = await api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/renew-lock`, { lockToken: m.lockToken });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect(log.retried).toBe(1);
    // Past the first lock's end, within the renewed one: nobody else gets it.
    clock.advance(LOCK_MS / 2 + 1000);
    const other = await w.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
    expect(other.status === 204 || (other.body.messages ?? []).length === 0).toBe(true);
    // Not completed, the message comes back after the renewed lock, once, counted once more.
    clock.advance(LOCK_MS);
    expect(await w.drain(queue)).toEqual([{ n: 'renewed', deliveryCount: 2 }]);
  });
});

describe("S1, S2: a put of today's layout the SDK retried after it landed", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedidx');
  });

  it('S1, S2: a send whose put landed and was retried is stored once, not renumbered into a second copy', async () => {
    await sentOnceThrough(w, 'retried', MESSAGE_PK_PREFIX, 'once');
  });

  it.each(['retried', 'lostOut'] as const)(
    'R3, R1, R10: a receive whose lock landed (answers %s) hands the message out, once, at delivery count 1',
    async (fault) => {
      const queue = await w.newQueue();
      expect((await sendOne(w.api, queue, 'locked')).status).toBe(201);
      const lock = (c: StoreCall) =>
        c.operation === 'UpdateItem' && pkOf(c).startsWith(MESSAGE_PK_PREFIX) && /lockToken = :token/.test(String(c.input.UpdateExpression));
      const { api, log } = w.faulting(fault, once(lock));
      const got = await api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      expect(log[fault]).toBe(1);
      const [m] = got.body.messages as Json[];
      expect(m).toMatchObject({ body: { n: 'locked' }, deliveryCount: 1 });
      expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
      expect(await w.drain(queue)).toEqual([]);
    },
  );

  it('S1, S7: a put in one transaction (with its duplicate marker) that landed and was retried is stored once: the SDK repeats its ClientRequestToken', async () => {
    await storedOnceThroughItsToken(w);
  });

  it('S1: a send whose put landed and lost the answer of every attempt (a 500 the SDK gave up on) reads it back and answers stored', async () => {
    await sentOnceThrough(w, 'lostOut', MESSAGE_PK_PREFIX, 'landed');
  });

  it('S4: a batch whose middle put landed and lost every answer says each message was stored, and each is delivered once', async () => {
    await batchStoredThroughLostAnswers(w, MESSAGE_PK_PREFIX);
  });

  it('S1, S7: a duplicate-detected send whose transaction landed and lost every answer reads it back and answers stored', async () => {
    await markedSendThrough(w, 'lostOut');
  });

  it('S1, S7: a duplicate-detected send whose transaction failed unapplied answers an error, never stored, and its resend is stored once', async () => {
    await markedSendThrough(w, 'failedOut');
  });

  it("S1, F1: a topic's fan-out, one transaction, that landed and lost every answer reads its copies back and answers stored: one copy a subscription", async () => {
    expect((await w.api('PUT', '/topics/fanned', {})).status).toBe(201);
    for (const s of ['a', 'b']) expect((await w.api('PUT', `/topics/fanned/subscriptions/${s}`, { lockDuration: 'PT30S' })).status).toBe(201);
    const { api, log } = w.faulting(
      'lostOut',
      once((c) => c.operation === 'TransactWriteItems'),
    );
    const sent = await api('POST', '/topics/fanned/messages', { body: { n: 'copied' }, messageId: 'copied' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(log.lostOut).toBe(1);
    for (const s of ['a', 'b']) {
      const got = await w.api('POST', `/topics/fanned/subscriptions/${s}/messages/receive`, { maxMessages: 10, maxWaitTime: 'PT0S' });
      expect((got.body.messages as Json[]).map((m) => m.body.n)).toEqual(['copied']);
    }
  });
});

describe('R3, R1: a ticket take the SDK retried after it landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('tickets', 'retriedtake');
  });

  it('R3, R1: the receive hands out the ticket its take wrote, once, at delivery count 1', async () => {
    const queue = await w.newQueue();
    expect((await sendOne(w.api, queue, 'one')).status).toBe(201);
    const { api, log } = w.retrying(take);
    const got = await api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 1, maxWaitTime: 'PT0S' });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(log.retried).toBeGreaterThan(0);
    const [m] = got.body.messages as Json[];
    expect(m).toMatchObject({ body: { n: 'one' }, deliveryCount: 1 });
    expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    expect(await w.drain(queue)).toEqual([]);
  });

  it('R3, R1: a take of several that landed and was retried hands out its ticket whole', async () => {
    expect((await batchReceivedThroughItsRetry(w, take)).retried).toBeGreaterThan(0);
  });

  it('R10, R3: a take that landed and lost every answer spends no delivery: the message comes at delivery count 1', async () => {
    await noDeliverySpentThrough(w, take);
  });
});

describe('R4: a complete the SDK retried after its done marker landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('tickets', 'retriedcomplete');
  });
  /** A complete's write: the put of a `done` marker over the message. */
  const marker = (c: StoreCall) => c.operation === 'PutItem' && pkOf(c).startsWith(POSITIONED_PK_PREFIX) && c.input.Item?.done !== undefined;

  it('R4, R5: the complete answers completed, the same token again is refused, and the message is never delivered again', async () => {
    await completedOnceThroughItsRetry(w, marker);
  });

  it('R1, R10: a receive-and-delete whose done marker landed and was retried hands the message out, once', async () => {
    const queue = await w.newQueue();
    expect((await sendOne(w.api, queue, 'one')).status).toBe(201);
    const { api, log } = w.retrying(once(marker));
    const got = await api('POST', `/queues/${queue}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 1, maxWaitTime: 'PT0S' });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(log.retried).toBe(1);
    expect((got.body.messages as Json[]).map((m) => m.body.n)).toEqual(['one']);
    expect(await w.drain(queue)).toEqual([]);
  });

  it('R10, R4: a done marker that landed and lost every answer is read back: a receive-and-delete hands each message out, a complete answers completed', async () => {
    await removedThroughLostAnswers(w, marker);
  });

  it('R9, R4: a batch complete whose every marker landed and was retried answers ok for each', async () => {
    const queue = await w.newQueue();
    for (const n of ['m0', 'm1', 'm2']) expect((await sendOne(w.api, queue, n)).status).toBe(201);
    const got = await w.api('POST', `/queues/${queue}/messages/receive`, { maxMessages: 3, maxWaitTime: 'PT0S' });
    const tokens = (got.body.messages as Json[]).map((m) => m.lockToken as string);
    expect(tokens).toHaveLength(3);
    const { api, log } = w.retrying(marker);
    const completed = await api('POST', `/queues/${queue}/messages/complete`, { lockTokens: tokens });
    expect(completed.status, JSON.stringify(completed.body)).toBe(200);
    expect(completed.body.results).toEqual(tokens.map((lockToken) => ({ lockToken, ok: true })));
    expect(log.retried).toBeGreaterThan(0);
    expect(await w.drain(queue)).toEqual([]);
  });
});

describe('R4: a complete of a cursor-leased queue the SDK retried after its delete landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('positions', 'retriedposcomplete');
  });
  /** A complete's write: the delete of a positioned message (no transaction). */
  const positionedDelete = (c: StoreCall) => c.operation === 'DeleteItem' && pkOf(c).startsWith(POSITIONED_PK_PREFIX);

  it('R4, R5: the complete answers completed, the same token again is refused, and the message is never delivered again', async () => {
    await completedOnceThroughItsRetry(w, positionedDelete);
  });

  it('R10, R4: a delete that landed and lost every answer is read back: a receive-and-delete hands each message out, a complete answers completed', async () => {
    await removedThroughLostAnswers(w, positionedDelete);
  });
});

describe("R4: a complete of today's layout the SDK retried after its delete landed", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedidxcomplete');
  });
  /** A complete's write: the delete of a message item (no transaction). */
  const messageDelete = (c: StoreCall) => c.operation === 'DeleteItem' && pkOf(c).startsWith(MESSAGE_PK_PREFIX);

  it('R4, R5: the complete answers completed, the same token again is refused, and the message is never delivered again', async () => {
    await completedOnceThroughItsRetry(w, messageDelete);
  });

  it('N4, R4: a session message completed alone, its delete retried after it landed, answers completed', async () => {
    const queue = await w.newQueue({ requiresSession: true });
    expect((await w.api('POST', `/queues/${queue}/messages`, { body: { n: 's' }, sessionId: 'a' })).status).toBe(201);
    const accepted = await w.api('POST', `/queues/${queue}/sessions/accept`, { sessionId: 'a' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const { sessionLockToken } = accepted.body as { sessionLockToken: string };
    const got = await w.api('POST', `/queues/${queue}/sessions/a/receive`, { sessionLockToken, maxMessages: 1, maxWaitTime: 'PT0S' });
    const [m] = got.body.messages as Json[];
    expect(m).toMatchObject({ body: { n: 's' } });
    await settledThroughItsRetry(w, queue, m, 'complete', messageDelete);
  });
});

describe("R10, N3: a session's receive-and-delete the SDK retried after its delete landed", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedsessionrad');
  });
  const messageDelete = (c: StoreCall) => c.operation === 'DeleteItem' && pkOf(c).startsWith(MESSAGE_PK_PREFIX);

  it.each([
    [1, 'retried'],
    [3, 'retried'],
    [3, 'lostOut'],
  ] as const)('R10, N3: hands the message out, once, in a receive of %i whose first delete landed (answers %s)', async (maxMessages, fault) => {
    const queue = await w.newQueue({ requiresSession: true });
    for (const n of ['s0', 's1', 's2']) expect((await w.api('POST', `/queues/${queue}/messages`, { body: { n }, sessionId: 'a' })).status).toBe(201);
    const accepted = await w.api('POST', `/queues/${queue}/sessions/accept`, { sessionId: 'a' });
    const { sessionLockToken } = accepted.body as { sessionLockToken: string };
    const { api, log } = w.faulting(fault, once(messageDelete));
    const got = await api('POST', `/queues/${queue}/sessions/a/receive`, { sessionLockToken, mode: 'receiveAndDelete', maxMessages, maxWaitTime: 'PT0S' });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(log[fault]).toBe(1);
    const first = (got.body.messages as Json[]).map((m) => [m.body.n, m.deliveryCount]);
    expect(first).toEqual(
      [
        ['s0', 1],
        ['s1', 1],
        ['s2', 1],
      ].slice(0, maxMessages),
    );
    // The rest of the session, then nothing: each message handed out once.
    const rest = await w.api('POST', `/queues/${queue}/sessions/a/receive`, {
      sessionLockToken,
      mode: 'receiveAndDelete',
      maxMessages: 10,
      maxWaitTime: 'PT0S',
    });
    expect((rest.body.messages as Json[]).map((m) => m.body.n)).toEqual(['s0', 's1', 's2'].slice(maxMessages));
  });

  it('R10, N3: it reads what it deletes first, in one call: a receive-and-delete of 3 makes one BatchGetItem and reads no message on its own', async () => {
    const queue = await w.newQueue({ requiresSession: true });
    for (const n of ['s0', 's1', 's2']) expect((await w.api('POST', `/queues/${queue}/messages`, { body: { n }, sessionId: 'a' })).status).toBe(201);
    const accepted = await w.api('POST', `/queues/${queue}/sessions/accept`, { sessionId: 'a' });
    const { sessionLockToken } = accepted.body as { sessionLockToken: string };
    const batchGets = faultyDeps(w.deps, { match: is(BatchGetCommand), times: 0 });
    const gets = faultyDeps(batchGets, { match: both(is(GetCommand), (c) => String(inputOf(c).Key?.pk).startsWith(MESSAGE_PK_PREFIX)), times: 0 });
    const got = await apiClient(gets)('POST', `/queues/${queue}/sessions/a/receive`, {
      sessionLockToken,
      mode: 'receiveAndDelete',
      maxMessages: 3,
      maxWaitTime: 'PT0S',
    });
    expect((got.body.messages as Json[]).map((m) => m.body.n)).toEqual(['s0', 's1', 's2']);
    expect(batchGets.faults.seen).toBe(1);
    expect(gets.faults.seen).toBe(0);
  });
});

describe("R10: a receive-and-delete of today's layout, without sessions, the SDK retried after its delete landed", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedidxrad');
  });
  /** The take's write: the delete of a message item, alone or as a transaction's only part. */
  const messageDelete = (c: StoreCall) =>
    (c.operation === 'DeleteItem' && pkOf(c).startsWith(MESSAGE_PK_PREFIX)) ||
    (c.operation === 'TransactWriteItems' &&
      (c.input.TransactItems as { Delete?: { Key: { pk: { S: string } } } }[]).some((t) => t.Delete?.Key.pk.S.startsWith(MESSAGE_PK_PREFIX)));
  const receiveAndDelete = (api: World['api'], path: string, maxMessages: number) =>
    api('POST', `${path}/messages/receive`, { mode: 'receiveAndDelete', maxMessages, maxWaitTime: 'PT0S' });

  it.each([1, 3])('R10, R1: a queue hands the message out, once, in a receive of %i', async (maxMessages) => {
    const queue = await w.newQueue();
    for (const n of ['m0', 'm1', 'm2']) expect((await sendOne(w.api, queue, n)).status).toBe(201);
    const { api, log } = w.retrying(once(messageDelete));
    const got = await receiveAndDelete(api, `/queues/${queue}`, maxMessages);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(log.retried).toBe(1);
    expect((got.body.messages as Json[]).map((m) => [m.body.n, m.deliveryCount])).toEqual(
      [
        ['m0', 1],
        ['m1', 1],
        ['m2', 1],
      ].slice(0, maxMessages),
    );
    const rest = await receiveAndDelete(w.api, `/queues/${queue}`, 10);
    expect((rest.body.messages as Json[]).map((m) => m.body.n)).toEqual(['m0', 'm1', 'm2'].slice(maxMessages));
  });

  it.each(['lostOut', 'failedOut'] as const)(
    'R10, R1: a take whose delete answered 500 to every attempt (%s) is sent again under its token: each message handed out, once',
    async (fault) => {
      const queue = await w.newQueue();
      for (const n of ['m0', 'm1', 'm2']) expect((await sendOne(w.api, queue, n)).status).toBe(201);
      const { api, log } = w.faulting(fault, once(messageDelete));
      const got = await receiveAndDelete(api, `/queues/${queue}`, 3);
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      expect(log[fault]).toBe(1);
      expect((got.body.messages as Json[]).map((m) => [m.body.n, m.deliveryCount])).toEqual([
        ['m0', 1],
        ['m1', 1],
        ['m2', 1],
      ]);
      expect((await receiveAndDelete(w.api, `/queues/${queue}`, 10)).body.messages).toEqual([]);
    },
  );

  it('R10, R1: a dead-letter subqueue hands the message out, once (the operator draining dead letters)', async () => {
    const { queue, m } = await oneReceived(w);
    expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/deadletter`, { lockToken: m.lockToken, deadLetterReason: 'r' })).status).toBe(
      204,
    );
    const { api, log } = w.retrying(once(messageDelete));
    const got = await receiveAndDelete(api, `/queues/${queue}/$deadletterqueue`, 1);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(log.retried).toBe(1);
    expect((got.body.messages as Json[]).map((d) => [d.body.n, d.deadLetterReason])).toEqual([['one', 'r']]);
    expect((await receiveAndDelete(w.api, `/queues/${queue}/$deadletterqueue`, 10)).body.messages).toEqual([]);
  });
});

describe('N2, N4: a session lock the SDK retried after its write landed', () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedsessionlock');
  });
  const sessionPk = (c: StoreCall) => pkOf(c).startsWith(SESSIONS_PK_PREFIX);
  /** An accept's write: the update of the session item that takes its lock. */
  const lockTake = (c: StoreCall) => c.operation === 'UpdateItem' && sessionPk(c) && /lockToken = :token/.test(String(c.input.UpdateExpression));
  /** A release's write: the update or delete of the session item that gives its lock up. */
  const lockRelease = (c: StoreCall) =>
    sessionPk(c) && ((c.operation === 'UpdateItem' && /REMOVE .*lockToken/.test(String(c.input.UpdateExpression))) || c.operation === 'DeleteItem');

  const sessionQueue = async (n: number) => {
    const queue = await w.newQueue({ requiresSession: true });
    for (let i = 0; i < n; i++) expect((await w.api('POST', `/queues/${queue}/messages`, { body: { n: `s${i}` }, sessionId: 'a' })).status).toBe(201);
    return queue;
  };
  const receiveUnder = (queue: string, sessionLockToken: string) =>
    w.api('POST', `/queues/${queue}/sessions/a/receive`, { sessionLockToken, maxMessages: 10, maxWaitTime: 'PT0S' });

  it.each([
    ['a named accept', { sessionId: 'a' }],
    ['an accept of the next session', {}],
  ])('N2: %s answers with the lock it took, and that lock receives the session', async (_name, body) => {
    const queue = await sessionQueue(1);
    const { api, log } = w.retrying(once(lockTake));
    const accepted = await api('POST', `/queues/${queue}/sessions/accept`, { ...body, maxWaitTime: 'PT0S' });
    expect(log.retried).toBe(1);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const { sessionLockToken, sessionId } = accepted.body as { sessionLockToken: string; sessionId: string };
    expect(sessionId).toBe('a');
    const got = await receiveUnder(queue, sessionLockToken);
    expect((got.body.messages as Json[]).map((m) => m.body.n)).toEqual(['s0']);
  });

  it.each([1, 3])(
    'N3, R10: a receive of %i whose held record landed and was retried hands each message out, once, at delivery count 1',
    async (maxMessages) => {
      const queue = await sessionQueue(3);
      const accepted = await w.api('POST', `/queues/${queue}/sessions/accept`, { sessionId: 'a' });
      const { sessionLockToken } = accepted.body as { sessionLockToken: string };
      /** The receive's write of the session's held record (session-lock.ts `recordHeld`). */
      const heldRecord = (c: StoreCall) => c.operation === 'UpdateItem' && sessionPk(c) && /SET held = :held/.test(String(c.input.UpdateExpression));
      const { api, log } = w.retrying(once(heldRecord));
      const got = await api('POST', `/queues/${queue}/sessions/a/receive`, { sessionLockToken, maxMessages, maxWaitTime: 'PT0S' });
      expect(log.retried).toBe(1);
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      const first = got.body.messages as Json[];
      expect(first.map((m) => [m.body.n, m.deliveryCount])).toEqual(
        [
          ['s0', 1],
          ['s1', 1],
          ['s2', 1],
        ].slice(0, maxMessages),
      );
      const rest = (await receiveUnder(queue, sessionLockToken)).body.messages as Json[];
      expect(rest.map((m) => m.body.n)).toEqual(['s0', 's1', 's2'].slice(maxMessages));
      for (const m of [...first, ...rest])
        expect((await w.api('POST', `/queues/${queue}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
    },
  );

  it.each([
    ['holding messages', 1],
    ['holding none', 0],
  ])('N4: a release of a session %s answers released, and the session can be accepted at once', async (_name, n) => {
    const queue = await sessionQueue(Math.max(n, 1));
    const accepted = await w.api('POST', `/queues/${queue}/sessions/accept`, { sessionId: 'a' });
    const { sessionLockToken } = accepted.body as { sessionLockToken: string };
    if (n === 0) {
      const got = await w.api('POST', `/queues/${queue}/sessions/a/receive`, {
        sessionLockToken,
        mode: 'receiveAndDelete',
        maxMessages: 10,
        maxWaitTime: 'PT0S',
      });
      expect(got.body.messages as Json[]).toHaveLength(1);
    }
    const { api, log } = w.retrying(once(lockRelease));
    const released = await api('POST', `/queues/${queue}/sessions/a/release`, { sessionLockToken });
    expect(log.retried).toBe(1);
    expect(released.status, JSON.stringify(released.body)).toBe(204);
    const again = await w.api('POST', `/queues/${queue}/sessions/accept`, { sessionId: 'a' });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const got = await receiveUnder(queue, (again.body as { sessionLockToken: string }).sessionLockToken);
    expect((got.body.messages as Json[]).map((m) => m.body.n)).toEqual(n === 1 ? ['s0'] : []);
  });
});

describe("R3: a batch receive of today's layout whose reminder the SDK retried after it landed", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedreminder');
  });
  /** A batch's reminder: a put of an item that lists its takes (store/reminders.ts). */
  const reminderPut = (c: StoreCall) => c.operation === 'PutItem' && pkOf(c).startsWith(REMINDER_PK_PREFIX);

  it('R3, R1: the receive hands out the batch, each message once, at delivery count 1', async () => {
    expect((await batchReceivedThroughItsRetry(w, once(reminderPut))).retried).toBe(1);
  });
});

describe("R4: an abandon or a defer of today's layout the SDK retried after its update landed", () => {
  let w: World;
  beforeAll(async () => {
    w = await world('index', 'retriedidxrelease');
  });
  /** A settlement's update of a message item that ends its lock (no transaction). */
  const release = (c: StoreCall) =>
    c.operation === 'UpdateItem' && pkOf(c).startsWith(MESSAGE_PK_PREFIX) && /REMOVE .*lockToken/.test(String(c.input.UpdateExpression));

  it('R4: the abandon answers abandoned, and the message comes back at once, its delivery counted once', async () => {
    const { queue, m } = await oneReceived(w);
    await settledThroughItsRetry(w, queue, m, 'abandon', release);
    expect(await w.drain(queue)).toEqual([{ n: 'one', deliveryCount: 2 }]);
  });

  it('R4, R7: the defer answers deferred, and the message is received by its number', async () => {
    const { queue, m } = await oneReceived(w);
    await settledThroughItsRetry(w, queue, m, 'defer', release);
    const deferred = await w.api('POST', `/queues/${queue}/messages/deferred`, { sequenceNumbers: [m.sequenceNumber] });
    expect((deferred.body.messages as Json[]).map((d) => [d.body.n, d.state])).toEqual([['one', 'Deferred']]);
  });
});
