/**
 * A batch send that writes before its entity read answers (lib/broker/send.ts
 * `sendBatchAhead`), as a single send does (send-ahead.test.ts): every message of the batch
 * is written with the entity a read of the same process saw a moment ago, beside the
 * request's own read, and acknowledged only when that read agrees (E4, E5). Here the entity
 * changes between two batches of a process (deleted, re-created, disabled, changed), a receive
 * takes a message before it can be taken back, the function dies between the writes and their
 * take-backs, and DynamoDB refuses a take-back or the read.
 *
 * The sending process has a client of its own (`sender`), as another Lambda instance would;
 * `other` is another process that changes the entity.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../../lib/deps.js';
import { messagePk } from '../../lib/store/keys.js';
import { type Json } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { inputOf } from '../support/faults.js';
import { type StoreFaultPlan } from '../support/dynamo-faults.js';
import {
  eidOf,
  faultyWorld,
  peekIds as peekInOrder,
  queueReadCall,
  reapAll,
  sendAheadWorld,
  sender,
  storedIn as storedInOrder,
  takeBackCall,
  isTakeBack,
  type Api,
  type TestDeps,
} from '../support/send-ahead.js';

// Tests of the batch written ahead and its take-backs pin today's layout (`indexLayout`): a
// positioned batch writes nothing before its entity read agrees, so there is nothing to take back.
const world = (layout: Pick<Deps, 'newEntityLayout'> = {}) => sendAheadWorld('send-ahead-batch', layout);

/** A batch of the messages `ids` (each its own id as body). */
const batch = (api: Api, ...ids: string[]) => api('POST', '/queues/q/messages/batch', { messages: ids.map((messageId) => ({ body: messageId, messageId })) });

/** The first batch of a process reads its entity first: after it, the process has seen the queue. */
async function firstBatch(api: Api) {
  const sent = await batch(api, 'm1');
  expect(sent.status).toBe(201);
}

/** A batch's messages are stored and delivered in no set order: its checks compare ids sorted. */
const storedIn = async (deps: TestDeps, eid: string) => (await storedInOrder(deps, eid)).sort();
const peekIds = async (api: Api) => (await peekInOrder(api)).sort();

/**
 * A process past its first batch (`m1`, since received and deleted) whose next take-back waits
 * while `other` receives one message: `received` is what that receive took.
 */
async function receiveBeforeTakeBack() {
  const { deps, other } = await world(indexLayout);
  const received: Json[] = [];
  const { api } = sender(deps, {
    match: isTakeBack,
    interleave: async () => {
      received.splice(0, received.length, ...(await other('POST', '/queues/q/messages/receive', { maxMessages: 1 })).body.messages);
    },
  });
  await firstBatch(api);
  expect((await other('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete' })).body.messages).toHaveLength(1);
  return { api, other, received };
}

describe('E4/E5: a batch that writes beside its entity read', () => {
  it('E4: into a queue deleted since the process last read it: every message is written ahead and taken back, and the batch answers 404', async () => {
    const { deps, other } = await world(indexLayout);
    const { api, puts } = sender(deps);
    await firstBatch(api);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const refused = await batch(api, 'm2', 'm3');

    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('EntityNotFound');
    expect(puts).toEqual([messagePk(eid, 'active', 0), messagePk(eid, 'active', 0), messagePk(eid, 'active', 0)]); // written ahead
    expect(await storedIn(deps, eid)).toEqual(['m1']);
  });

  it('E4: into a queue deleted and re-created since: every message stored once, in the new queue only', async () => {
    const { deps, other } = await world(indexLayout);
    const { api, puts } = sender(deps);
    await firstBatch(api);
    const old = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);
    expect((await other('PUT', '/queues/q', {})).status).toBe(201);
    const renewed = await eidOf(deps);

    const sent = await batch(api, 'm2', 'm3');

    expect(sent.status).toBe(201);
    expect((sent.body.results as Json[]).map((r) => r.messageId)).toEqual(['m2', 'm3']);
    expect(puts.slice(1).sort()).toEqual(
      [messagePk(old, 'active', 0), messagePk(old, 'active', 0), messagePk(renewed, 'active', 0), messagePk(renewed, 'active', 0)].sort(),
    );
    expect(await storedIn(deps, old)).toEqual(['m1']);
    expect(await peekIds(other)).toEqual(['m2', 'm3']);
  });

  it('E5: into a queue made SendDisabled since: EntityDisabled, and nothing of the batch is stored', async () => {
    const { deps, other } = await world(indexLayout);
    const { api, puts } = sender(deps);
    await firstBatch(api);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);

    const refused = await batch(api, 'm2', 'm3');

    expect(refused.body.error.code).toBe('EntityDisabled');
    expect(puts).toHaveLength(3);
    expect(await peekIds(other)).toEqual(['m1']);
  });

  it('T1: into a queue whose default time to live changed since: every message stored once, under the new properties', async () => {
    const { deps, other, clock } = await world(indexLayout);
    const { api, puts } = sender(deps);
    await firstBatch(api);
    expect((await other('PUT', '/queues/q', { defaultMessageTimeToLive: 'PT1M' })).status).toBe(200);

    const sent = await batch(api, 'm2', 'm3');

    expect(sent.status).toBe(201);
    expect((sent.body.results as Json[]).map((r) => r.expiresAt)).toEqual([
      new Date(clock.now() + 60_000).toISOString(),
      new Date(clock.now() + 60_000).toISOString(),
    ]);
    expect(puts).toHaveLength(5);
    expect(await peekIds(other)).toEqual(['m1', 'm2', 'm3']);
  });

  it('S1/S4/R1: a message a receive took before it could be taken back was stored and delivered: answered with its receipt, the rest refused each on its own (E5)', async () => {
    const { api, other, received } = await receiveBeforeTakeBack();
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);

    const sent = await batch(api, 'm2', 'm3');

    expect(sent.status).toBe(207);
    expect(received).toHaveLength(1);
    const results = sent.body.results as Json[];
    const took = results.find((r) => r.messageId === received[0].messageId)!;
    const refused = results.find((r) => r.messageId !== received[0].messageId)!;
    expect(took.sequenceNumber).toBe(received[0].sequenceNumber);
    expect(refused.error).toMatchObject({ code: 'EntityDisabled', retryable: false });
    expect((await other('POST', `/queues/q/messages/${took.sequenceNumber}/complete`, { lockToken: received[0].lockToken })).status).toBe(204);
    expect(await peekIds(other)).toEqual([]);
  });

  it('S1/S4: a message a receive took before it could be taken back, the queue re-configured but sending: the rest is stored anew, each message once', async () => {
    const { api, other, received } = await receiveBeforeTakeBack();
    expect((await other('PUT', '/queues/q', { defaultMessageTimeToLive: 'PT1M' })).status).toBe(200);

    const sent = await batch(api, 'm2', 'm3');

    expect(sent.status).toBe(201);
    expect((sent.body.results as Json[]).map((r) => r.messageId)).toEqual(['m2', 'm3']);
    expect(received).toHaveLength(1);
    expect((await other('POST', `/queues/q/messages/${received[0].sequenceNumber}/complete`, { lockToken: received[0].lockToken })).status).toBe(204);
    expect(await peekIds(other)).toEqual(['m2', 'm3'].filter((id) => id !== received[0].messageId));
  });
});

describe('E4: a batch written ahead into an incarnation that is gone is never acknowledged', () => {
  it('E4: also when a receive still in flight from before the deletion took its messages before the take-back: 404', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps, {
      match: isTakeBack,
      times: Infinity,
      // What a receive that read the queue before its deletion does to a message: lock it.
      interleave: async (c) => {
        await deps.db.send(
          new UpdateCommand({
            TableName: deps.tableName,
            Key: inputOf(c).Key,
            UpdateExpression: 'SET lockToken = :t, deliveryCount = :one',
            ExpressionAttributeValues: { ':t': 'straddling', ':one': 1 },
          }),
        );
      },
    });
    await firstBatch(api);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const refused = await batch(api, 'm2', 'm3');

    expect(refused.status).toBe(404);
    expect(await storedIn(deps, eid)).toEqual(['m1', 'm2', 'm3']); // locked, so not taken back: the reaper's
    await reapAll(deps);
    expect(await storedIn(deps, eid)).toEqual([]);
  });
});

describe('S1/E4: the function dies between the batch written ahead and its take-backs', () => {
  it('E4: into a deleted queue: the orphans are never delivered by the queue re-created under the name, and the reaper removes them', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps, { match: isTakeBack });
    await firstBatch(api);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const crashed = await batch(api, 'm2', 'm3');
    expect(crashed.status).toBe(500);
    // The take-back of one died; the other's ran on or not: whatever is left, nothing was acknowledged.
    const left = await storedIn(deps, eid);
    expect(left).toContain('m1');
    expect(left.length).toBeGreaterThanOrEqual(2);

    expect((await other('PUT', '/queues/q', {})).status).toBe(201);
    expect((await other('POST', '/queues/q/messages/receive', { maxMessages: 10 })).body.messages).toEqual([]);
    expect(await peekIds(other)).toEqual([]);
    await reapAll(deps);
    expect(await storedIn(deps, eid)).toEqual([]);
  });

  it('E5/S1: into a disabled queue: what stays is as after any crash past a put (an error that says to retry), and is delivered once when the queue is enabled', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps, { match: isTakeBack, times: Infinity });
    await firstBatch(api);
    expect((await other('PUT', '/queues/q', { status: 'Disabled' })).status).toBe(200);

    const crashed = await batch(api, 'm2', 'm3');

    expect(crashed.status).toBe(500);
    expect(crashed.body.error).toMatchObject({ code: 'InternalError', retryable: true });
    expect((await other('POST', '/queues/q/messages/receive', {})).body.error.code).toBe('EntityDisabled');
    expect((await other('PUT', '/queues/q', { status: 'Active' })).status).toBe(200);
    const got = (await other('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10 })).body.messages as Json[];
    expect(got.map((m) => m.messageId).sort()).toEqual(['m1', 'm2', 'm3']);
  });

  it('S1/E5: dying just before the take-backs or just after them leaves each message stored once or not at all, never twice', async () => {
    for (const phase of ['before', 'after'] as const) {
      const { deps, other } = await world(indexLayout);
      const { api } = sender(deps, { match: isTakeBack, phase, times: Infinity });
      await firstBatch(api);
      const eid = await eidOf(deps);
      expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);

      expect((await batch(api, 'm2', 'm3')).status).toBe(500);
      // Taken back (after) or not (before): never twice, never under another incarnation. The
      // request ended at the first take-back's death; the other, already sent, lands on its own.
      await expect.poll(() => storedIn(deps, eid)).toEqual(phase === 'after' ? ['m1'] : ['m1', 'm2', 'm3']);
    }
  });
});

describe('S1/E4: DynamoDB refuses a take-back or the read of a batch written ahead', () => {
  const faulty = (plan: StoreFaultPlan, layout: Pick<Deps, 'newEntityLayout'> = {}) => faultyWorld('send-ahead-batch', plan, firstBatch, layout);

  it("S1/E5: take-backs throttled past the SDK's retries while the queue is SendDisabled: the messages stay, so the batch answers them stored", async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, log } = await faulty(plan, indexLayout);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);
    plan.throttle = { when: takeBackCall };

    const sent = await batch(api, 'm2', 'm3');

    expect(log.throttledOut).toBe(2);
    expect(sent.status).toBe(201);
    expect((sent.body.results as Json[]).map((r) => r.messageId)).toEqual(['m2', 'm3']);
    expect(await peekIds(other)).toEqual(['m1', 'm2', 'm3']);
  });

  it('S1/E5: take-backs that meet a conflicting transaction are answered the same way', async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, log } = await faulty(plan, indexLayout);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);
    plan.conflict = { when: takeBackCall };

    const sent = await batch(api, 'm2', 'm3');

    expect(log.conflicted).toBe(2);
    expect(sent.status).toBe(201);
    expect(await peekIds(other)).toEqual(['m1', 'm2', 'm3']);
  });

  it('E4: take-backs throttled after a batch written ahead into a deleted queue: 404, and the reaper removes the orphans', async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, deps, eid, log } = await faulty(plan, indexLayout);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);
    plan.throttle = { when: takeBackCall };

    const refused = await batch(api, 'm2', 'm3');

    expect(log.throttledOut).toBe(2);
    expect(refused.status).toBe(404);
    expect(await storedIn(deps, eid)).toEqual(['m1', 'm2', 'm3']);
    await reapAll(deps);
    expect(await storedIn(deps, eid)).toEqual([]);
  });

  it('S1: the entity read throttled beside a batch written ahead: Throttled (503, retryable), and every message is taken back', async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, log } = await faulty(plan);
    plan.throttle = { when: queueReadCall };

    const refused = await batch(api, 'm2', 'm3');

    // The read, and the read once more (entities.ts `currentEntityOnceMore`).
    expect(log.throttledOut).toBe(2);
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'Throttled', retryable: true });
    expect(await peekIds(other)).toEqual(['m1']);
  });
});

describe('S8/T3: a batch the process may not write ahead reads its entity first', () => {
  it('S8: a session queue and a message without a session id: 400 naming it, and nothing is written', async () => {
    const { deps, other } = await world();
    expect((await other('PUT', '/queues/s', { requiresSession: true })).status).toBe(201);
    const { api, puts } = sender(deps);
    expect((await api('POST', '/queues/s/messages/batch', { messages: [{ body: 1, sessionId: 'a' }] })).status).toBe(201);

    const refused = await api('POST', '/queues/s/messages/batch', { messages: [{ body: 2, sessionId: 'a' }, { body: 3 }] });

    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('messages[1].sessionId');
    expect(puts).toHaveLength(1);
  });
});
