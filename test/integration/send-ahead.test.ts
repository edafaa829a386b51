/**
 * A send that writes before its entity read answers (lib/broker/send.ts): the message is
 * written with the entity a read of the same process saw a moment ago, beside the request's
 * own read, and acknowledged only when that read agrees (E4, E5). Here the entity changes
 * between the two sends of a process (deleted, re-created, disabled, changed), a receive takes
 * the message before it can be taken back, the function dies between the write and the
 * take-back, and DynamoDB refuses the take-back or the read.
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
  isMessagePut,
  isTakeBack,
  peekIds,
  queueReadCall,
  reapAll,
  sendAheadWorld,
  sender,
  storedIn,
  takeBackCall,
  type Api,
} from '../support/send-ahead.js';

// Tests of the write ahead and its take-back pin today's layout (`indexLayout`): a positioned
// send writes nothing before its entity read agrees, so there is nothing to take back.
const world = (layout: Pick<Deps, 'newEntityLayout'> = {}) => sendAheadWorld('send-ahead', layout);

describe('E4/E5: a send that writes beside its entity read', () => {
  it('E4: into a queue deleted since the process last read it: the write goes ahead, is taken back, and the send answers 404', async () => {
    const { deps, other } = await world(indexLayout);
    const { api, puts } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const refused = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('EntityNotFound');
    expect(puts).toEqual([messagePk(eid, 'active', 0), messagePk(eid, 'active', 0)]); // written ahead
    expect(await storedIn(deps, eid)).toEqual(['m1']);
  });

  it('E4: into a queue deleted and re-created since: stored once, in the new queue only', async () => {
    const { deps, other } = await world(indexLayout);
    const { api, puts } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    const old = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);
    expect((await other('PUT', '/queues/q', {})).status).toBe(201);
    const renewed = await eidOf(deps);

    const sent = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(sent.status).toBe(201);
    expect(puts.slice(1)).toEqual([messagePk(old, 'active', 0), messagePk(renewed, 'active', 0)]);
    expect(await storedIn(deps, old)).toEqual(['m1']);
    expect(await peekIds(other)).toEqual(['m2']);
  });

  it('E5: into a queue made SendDisabled since: EntityDisabled, and nothing of the send is stored', async () => {
    const { deps, other } = await world(indexLayout);
    const { api, puts } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);

    const refused = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(refused.body.error.code).toBe('EntityDisabled');
    expect(puts).toHaveLength(2);
    expect(await peekIds(other)).toEqual(['m1']);
  });

  it('T1: into a queue whose default time to live changed since: stored once, under the new properties', async () => {
    const { deps, other, clock } = await world(indexLayout);
    const { api, puts } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    expect((await other('PUT', '/queues/q', { defaultMessageTimeToLive: 'PT1M' })).status).toBe(200);

    const sent = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(sent.status).toBe(201);
    expect(sent.body.expiresAt).toBe(new Date(clock.now() + 60_000).toISOString());
    expect(puts).toHaveLength(3);
    expect(await peekIds(other)).toEqual(['m1', 'm2']);
  });

  it('S1/R1: a message a receive took before it could be taken back was stored and delivered: the send answers with its receipt', async () => {
    const { deps, other } = await world(indexLayout);
    let received: Json[] = [];
    const { api } = sender(deps, {
      match: isTakeBack,
      interleave: async () => {
        received = (await other('POST', '/queues/q/messages/receive', { maxMessages: 10 })).body.messages;
      },
    });
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    expect((await other('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete' })).body.messages).toHaveLength(1);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);

    const sent = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(sent.status).toBe(201);
    expect(received.map((m) => [m.messageId, m.sequenceNumber])).toEqual([['m2', sent.body.sequenceNumber]]);
    expect((await other('POST', `/queues/q/messages/${sent.body.sequenceNumber}/complete`, { lockToken: received[0].lockToken })).status).toBe(204);
    expect(await peekIds(other)).toEqual([]);
  });
});

describe('E4: a write ahead into an incarnation that is gone is never acknowledged', () => {
  it('E4: also when a receive still in flight from before the deletion took it before the take-back: 404', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps, {
      match: isTakeBack,
      // What a receive that read the queue before its deletion does to the message: lock it.
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
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const refused = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(refused.status).toBe(404);
    expect(await storedIn(deps, eid)).toEqual(['m1', 'm2']); // locked, so not taken back: the reaper's
    await reapAll(deps);
    expect(await storedIn(deps, eid)).toEqual([]);
  });
});

describe('E4: concurrent sends of one process, sharing an entity read put off until their writes end', () => {
  /** The sending process, its message puts slowed down (as DynamoDB Local's are on a large table), so its shared entity reads are put off. */
  const slowSender = (deps: Deps) =>
    sender(deps, { match: isMessagePut, times: Infinity, phase: 'before', interleave: () => new Promise((r) => setTimeout(r, 150)) });
  const sendAll = (api: Api, ids: string[]) => Promise.all(ids.map((messageId) => api('POST', '/queues/q/messages', { body: messageId, messageId })));

  it('E4: a queue deleted before they began: every one answers 404, and nothing they wrote ahead is acknowledged or left behind', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = slowSender(deps);
    // Rounds of concurrent sends: the process learns that its requests come together and that its writes outlast its reads.
    for (const round of ['a', 'b']) expect((await sendAll(api, [`${round}1`, `${round}2`, `${round}3`])).map((r) => r.status)).toEqual([201, 201, 201]);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const refused = await sendAll(api, ['c1', 'c2', 'c3']);

    expect(refused.map((r) => r.status)).toEqual([404, 404, 404]);
    expect((await storedIn(deps, eid)).sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3']);
  });

  it('E4: a queue deleted and re-created before they began: every message is stored once, in the new queue only', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = slowSender(deps);
    for (const round of ['a', 'b']) expect((await sendAll(api, [`${round}1`, `${round}2`, `${round}3`])).map((r) => r.status)).toEqual([201, 201, 201]);
    const old = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);
    expect((await other('PUT', '/queues/q', {})).status).toBe(201);

    const sent = await sendAll(api, ['c1', 'c2', 'c3']);

    expect(sent.map((r) => r.status)).toEqual([201, 201, 201]);
    expect((await storedIn(deps, old)).sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3']);
    expect((await peekIds(other)).sort()).toEqual(['c1', 'c2', 'c3']);
  });
});

describe('S1/E4: the function dies between the write ahead and its take-back', () => {
  it('E4: into a deleted queue: the orphan is never delivered by the queue re-created under the name, and the reaper removes it', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps, { match: isTakeBack });
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    const eid = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const crashed = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });
    expect(crashed.status).toBe(500);
    expect(await storedIn(deps, eid)).toEqual(['m1', 'm2']);

    expect((await other('PUT', '/queues/q', {})).status).toBe(201);
    expect((await other('POST', '/queues/q/messages/receive', { maxMessages: 10 })).body.messages).toEqual([]);
    expect(await peekIds(other)).toEqual([]);
    await reapAll(deps);
    expect(await storedIn(deps, eid)).toEqual([]);
  });

  it('E5/S1: into a disabled queue: the message stays as after any crash past a put (an error that says to retry), and is delivered once when the queue is enabled', async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps, { match: isTakeBack });
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    expect((await other('PUT', '/queues/q', { status: 'Disabled' })).status).toBe(200);

    const crashed = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(crashed.status).toBe(500);
    expect(crashed.body.error).toMatchObject({ code: 'InternalError', retryable: true });
    expect((await other('POST', '/queues/q/messages/receive', {})).body.error.code).toBe('EntityDisabled');
    expect((await other('PUT', '/queues/q', { status: 'Active' })).status).toBe(200);
    const got = (await other('POST', '/queues/q/messages/receive', { mode: 'receiveAndDelete', maxMessages: 10 })).body.messages as Json[];
    expect(got.map((m) => m.messageId)).toEqual(['m1', 'm2']);
  });

  it('S1/E5: dying just before the take-back or just after it leaves the message stored once or not at all, never twice', async () => {
    for (const phase of ['before', 'after'] as const) {
      const { deps, other } = await world(indexLayout);
      const { api } = sender(deps, { match: isTakeBack, phase });
      expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
      const eid = await eidOf(deps);
      expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);

      expect((await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' })).status).toBe(500);
      // Taken back (after) or not (before): never twice, never under another incarnation.
      expect(await storedIn(deps, eid)).toEqual(phase === 'after' ? ['m1'] : ['m1', 'm2']);
    }
  });
});

describe('S1/E4: DynamoDB refuses the take-back or the read', () => {
  const faulty = (plan: StoreFaultPlan, layout: Pick<Deps, 'newEntityLayout'> = {}) =>
    faultyWorld(
      'send-ahead',
      plan,
      async (api) => {
        expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
      },
      layout,
    );

  it("S1/E5: a take-back throttled past the SDK's retries while the queue is SendDisabled: the message stays, so the send answers stored", async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, log } = await faulty(plan, indexLayout);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);
    plan.throttle = { when: takeBackCall };

    const sent = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(log.throttledOut).toBe(1);
    expect(sent.status).toBe(201);
    expect(await peekIds(other)).toEqual(['m1', 'm2']);
  });

  it('S1/E5: a take-back that meets a conflicting transaction is answered the same way', async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, log } = await faulty(plan, indexLayout);
    expect((await other('PUT', '/queues/q', { status: 'SendDisabled' })).status).toBe(200);
    plan.conflict = { when: takeBackCall };

    const sent = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(log.conflicted).toBe(1);
    expect(sent.status).toBe(201);
    expect(await peekIds(other)).toEqual(['m1', 'm2']);
  });

  it('E4: a take-back throttled after a write ahead into a deleted queue: 404, and the reaper removes the orphan', async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, deps, eid, log } = await faulty(plan, indexLayout);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);
    plan.throttle = { when: takeBackCall };

    const refused = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    expect(log.throttledOut).toBe(1);
    expect(refused.status).toBe(404);
    expect(await storedIn(deps, eid)).toEqual(['m1', 'm2']);
    await reapAll(deps);
    expect(await storedIn(deps, eid)).toEqual([]);
  });

  it('S1: the entity read throttled beside a write ahead: Throttled (503, retryable), and the write is taken back', async () => {
    const plan: StoreFaultPlan = {};
    const { api, other, log } = await faulty(plan);
    plan.throttle = { when: queueReadCall };

    const refused = await api('POST', '/queues/q/messages', { body: 2, messageId: 'm2' });

    // The read, and the read once more (entities.ts `currentEntityOnceMore`).
    expect(log.throttledOut).toBe(2);
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'Throttled', retryable: true });
    expect(await peekIds(other)).toEqual(['m1']);
  });
});

describe('E4/E5: a receive that reads its first page beside its entity read', () => {
  it("E4: a queue deleted and re-created since the process last read it: only the new queue's message is handed out", async () => {
    const { deps, other } = await world(indexLayout);
    const { api } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    const old = await eidOf(deps);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);
    expect((await other('PUT', '/queues/q', {})).status).toBe(201);
    expect((await other('POST', '/queues/q/messages', { body: 2, messageId: 'm2' })).status).toBe(201);

    const got = await api('POST', '/queues/q/messages/receive', { maxMessages: 10 });

    expect((got.body.messages as Json[]).map((m) => m.messageId)).toEqual(['m2']);
    expect(await storedIn(deps, old)).toEqual(['m1']);
  });

  it('E4: a queue deleted since: 404, and the old message stays untouched for the reaper', async () => {
    const { deps, other } = await world();
    const { api } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    expect((await other('DELETE', '/queues/q')).status).toBe(204);

    const got = await api('POST', '/queues/q/messages/receive', { maxMessages: 10 });

    expect(got.status).toBe(404);
    expect(got.body.error.code).toBe('EntityNotFound');
  });

  it('E5: a queue made ReceiveDisabled since: EntityDisabled, and nothing is locked', async () => {
    const { deps, other } = await world();
    const { api } = sender(deps);
    expect((await api('POST', '/queues/q/messages', { body: 1, messageId: 'm1' })).status).toBe(201);
    expect((await other('PUT', '/queues/q', { status: 'ReceiveDisabled' })).status).toBe(200);

    const got = await api('POST', '/queues/q/messages/receive', { maxMessages: 10 });

    expect(got.body.error.code).toBe('EntityDisabled');
    const peeked = (await other('GET', '/queues/q/messages?maxMessages=10')).body.messages as Json[];
    expect(peeked.map((m) => [m.messageId, m.deliveryCount])).toEqual([['m1', 0]]);
  });
});
