/**
 * Queue management over the API handler: names (E1), properties and defaults (E2), the
 * implicit subqueues (E3), delete and re-create (E4), status (E5), and listing with paging.
 * Counts (E6) need the stream consumer and are covered elsewhere.
 */
import { describe, expect, it } from 'vitest';
import { apiClient, apiOnTable, type Json, type Reply } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { expectError, queueHelpers } from '../support/queue-helpers.js';

const clock = new ManualClock();
let counter = 0;
const fresh = (stem = 'q') => `${stem}${++counter}`;

const api = apiOnTable(clock, 'qentities');

/** ISO 8601 duration (days and time parts) to milliseconds, to compare durations by value. */
function isoMs(text: string): number {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!m) throw new Error(`not an ISO duration: ${text}`);
  const [, d = '0', h = '0', min = '0', s = '0'] = m;
  return ((Number(d) * 24 + Number(h)) * 60 + Number(min)) * 60_000 + Number(s) * 1000;
}

const { createQueue, send, receive } = queueHelpers(() => api);

async function peek(path: string, query = '') {
  const got = await api('GET', `${path}/messages${query}`);
  expect(got.status, JSON.stringify(got.body)).toBe(200);
  return got.body.messages as Record<string, Json>[];
}

async function allQueueNames(): Promise<string[]> {
  const names: string[] = [];
  let next: string | null = null;
  do {
    const page: Reply = await api('GET', `/queues?top=100${next ? `&next=${next}` : ''}`);
    expect(page.status).toBe(200);
    names.push(...page.body.items.map((i: { name: string }) => i.name));
    next = page.body.next;
  } while (next);
  return names;
}

describe('E1: entity names', () => {
  it('E1: a queue name of 260 characters is accepted; 261 is refused with 400 naming queueName and creates nothing', async () => {
    // prepare
    const longest = `L${'a'.repeat(258)}9`;
    const tooLong = `T${'a'.repeat(259)}9`;
    // act
    const ok = await api('PUT', `/queues/${longest}`, {});
    const refused = await api('PUT', `/queues/${tooLong}`, {});
    // assess
    expect(ok.status).toBe(201);
    expect(ok.body.name).toBe(longest);
    expect((await api('GET', `/queues/${longest}`)).status).toBe(200);
    expectError(refused, 400, 'BadRequest', 'queueName');
    const names = await allQueueNames();
    expect(names).toContain(longest);
    expect(names.some((n) => n.length > 260)).toBe(false);
  });

  it('E1: a topic name may be 260 characters, a subscription name 50; one more is refused', async () => {
    // prepare
    const topic = `t${'b'.repeat(259)}`;
    const sub = `s${'c'.repeat(49)}`;
    // act
    const topicOk = await api('PUT', `/topics/${topic}`, {});
    const topicLong = await api('PUT', `/topics/${topic}x`, {});
    const subOk = await api('PUT', `/topics/${topic}/subscriptions/${sub}`, {});
    const subLong = await api('PUT', `/topics/${topic}/subscriptions/${sub}x`, {});
    // assess
    expect(topicOk.status).toBe(201);
    expectError(topicLong, 400, 'BadRequest', 'topicName');
    expect(subOk.status).toBe(201);
    expectError(subLong, 400, 'BadRequest', 'subscriptionName');
    expect((await api('GET', `/topics/${topic}/subscriptions/${sub}x`)).status).toBe(400);
  });

  it('E1: names made of letters, digits, ".", "-" and "_" are accepted, including one character', async () => {
    // prepare
    const names = ['x', '7', 'Ab.c-d_9', 'a..b', 'A-_-.Z'];
    // act
    const replies = await Promise.all(names.map((n) => api('PUT', `/queues/${n}`, {})));
    // assess
    for (const [i, r] of replies.entries()) {
      expect(r.status, names[i]).toBe(201);
      expect(r.body.name).toBe(names[i]);
    }
  });

  it.each(['a b', 'a*b', 'a$b', 'a%b', 'a:b', 'a+b', 'a~b', 'a@b', 'ä', 'a#b', 'a?b', 'a,b', 'a;b', "a'b", 'a"b'])(
    'E1: the character in %j is not allowed in a name (400 naming queueName, nothing created)',
    async (name) => {
      // prepare
      const before = await allQueueNames();
      // act
      const reply = await api('PUT', `/queues/${encodeURIComponent(name)}`, {});
      // assess
      expectError(reply, 400, 'BadRequest', 'queueName');
      expect(await allQueueNames()).toEqual(before);
    },
  );

  it.each(['a/b', 'a\\b', 'a\u0000b', 'a\u001fb', '.', '..'])(
    'E1: %j (a "/", a control character or a dot segment) creates nothing: 400, or 403 from the authorizer that cannot read the path',
    async (name) => {
      // prepare
      const before = await allQueueNames();
      // act
      const reply = await api('PUT', `/queues/${encodeURIComponent(name)}`, {});
      // assess
      expect([400, 403]).toContain(reply.status);
      expect(reply.body.error).toMatchObject({ code: expect.any(String), requestId: expect.any(String) });
      expect(await allQueueNames()).toEqual(before);
    },
  );

  it.each(['.a', '-a', '_a', 'a.', 'a-', 'a_', '-', '_', '.a.', '..a'])(
    'E1: %j does not start and end with a letter or digit: 400 naming queueName',
    async (name) => {
      // act
      const reply = await api('PUT', `/queues/${encodeURIComponent(name)}`, {});
      // assess
      expectError(reply, 400, 'BadRequest', 'queueName');
      expectError(await api('GET', `/queues/${encodeURIComponent(name)}`), 400, 'BadRequest', 'queueName');
    },
  );

  it('E1: names are case-insensitive: one entity, the first spelling kept everywhere', async () => {
    // prepare
    const first = `MixedCase${++counter}`;
    await createQueue(first, { maxDeliveryCount: 7 });
    // act
    const again = await api('PUT', `/queues/${first.toUpperCase()}`, { lockDuration: 'PT30S' });
    const read = await api('GET', `/queues/${first.toLowerCase()}`);
    const sent = await send(first.toLowerCase(), { body: 'hello' });
    const got = await receive(`/queues/${first.toUpperCase()}`, { mode: 'receiveAndDelete' });
    const names = await allQueueNames();
    const deleted = await api('DELETE', `/queues/${first.toUpperCase()}`);
    const afterDelete = await api('GET', `/queues/${first}`);
    // assess
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ name: first, maxDeliveryCount: 7, lockDuration: 'PT30S' });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ name: first, maxDeliveryCount: 7, lockDuration: 'PT30S' });
    expect(got.map((m) => m.sequenceNumber)).toEqual([sent.sequenceNumber]);
    expect(names.filter((n) => n.toLowerCase() === first.toLowerCase())).toEqual([first]);
    expect(deleted.status).toBe(204);
    expectError(afterDelete, 404, 'EntityNotFound');
  });
});

describe('E2: queue properties', () => {
  it('E2: a new queue has every default (PUT answer and GET agree)', async () => {
    // prepare
    const name = fresh();
    // act
    const created = await api('PUT', `/queues/${name}`, {});
    const read = await api('GET', `/queues/${name}`);
    // assess
    const defaults = {
      name,
      lockDuration: 'PT1M',
      maxDeliveryCount: 10,
      defaultMessageTimeToLive: null,
      deadLetteringOnMessageExpiration: false,
      autoDeleteOnIdle: null,
      requiresSession: false,
      forwardTo: null,
      forwardDeadLetteredMessagesTo: null,
      status: 'Active',
      requiresDuplicateDetection: false,
      duplicateDetectionHistoryTimeWindow: 'PT10M',
      maxSizeInMegabytes: 1024,
    };
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject(defaults);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject(defaults);
    expect(read.body.runtime).toMatchObject({ createdAt: new Date(clock.now()).toISOString() });
    // Subscription-only property is not shown on a queue.
    expect(read.body).not.toHaveProperty('deadLetteringOnFilterEvaluationExceptions');
  });

  it('E2: a PUT without a body or with null creates a queue with the defaults', async () => {
    // prepare
    const a = fresh();
    const b = fresh();
    // act
    const noBody = await api('PUT', `/queues/${a}`);
    const nullBody = await api('PUT', `/queues/${b}`, null);
    // assess
    expect(noBody.status).toBe(201);
    expect(noBody.body).toMatchObject({ lockDuration: 'PT1M', maxDeliveryCount: 10 });
    expect(nullBody.status).toBe(201);
    expect(nullBody.body).toMatchObject({ lockDuration: 'PT1M', maxDeliveryCount: 10 });
  });

  const bounds: [string, unknown, 'accepted' | 'refused'][] = [
    ['lockDuration', 'PT5S', 'accepted'],
    ['lockDuration', 'PT5M', 'accepted'],
    ['lockDuration', 'PT4S', 'refused'],
    ['lockDuration', 'PT4.999S', 'refused'],
    ['lockDuration', 'PT5M1S', 'refused'],
    ['lockDuration', 'PT300.001S', 'refused'],
    ['lockDuration', null, 'refused'],
    ['lockDuration', 30, 'refused'],
    ['maxDeliveryCount', 1, 'accepted'],
    ['maxDeliveryCount', 2_000, 'accepted'],
    ['maxDeliveryCount', 0, 'refused'],
    ['maxDeliveryCount', -1, 'refused'],
    ['maxDeliveryCount', 1.5, 'refused'],
    ['maxDeliveryCount', '3', 'refused'],
    ['autoDeleteOnIdle', 'PT5M', 'accepted'],
    ['autoDeleteOnIdle', 'P365D', 'accepted'],
    ['autoDeleteOnIdle', null, 'accepted'],
    ['autoDeleteOnIdle', 'PT4M59S', 'refused'],
    ['autoDeleteOnIdle', 'PT0S', 'refused'],
    ['duplicateDetectionHistoryTimeWindow', 'PT20S', 'accepted'],
    ['duplicateDetectionHistoryTimeWindow', 'P7D', 'accepted'],
    ['duplicateDetectionHistoryTimeWindow', 'PT19S', 'refused'],
    ['duplicateDetectionHistoryTimeWindow', 'PT19.999S', 'refused'],
    ['duplicateDetectionHistoryTimeWindow', 'P7DT1S', 'refused'],
    ['duplicateDetectionHistoryTimeWindow', 'P8D', 'refused'],
    ['defaultMessageTimeToLive', null, 'accepted'],
    ['defaultMessageTimeToLive', 'P14D', 'accepted'],
    ['defaultMessageTimeToLive', 'banana', 'refused'],
    ['defaultMessageTimeToLive', '-PT5M', 'refused'],
    ['status', 'Paused', 'refused'],
    ['requiresSession', 'yes', 'refused'],
  ];

  it.each(bounds)('E2: %s = %j is %s', async (field, value, accepted) => {
    // prepare
    const name = fresh();
    // act
    const reply = await api('PUT', `/queues/${name}`, { [field]: value });
    // assess
    if (accepted === 'accepted') {
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      const shown = reply.body[field];
      if (typeof value === 'string' && value.startsWith('P')) expect(isoMs(shown as string)).toBe(isoMs(value));
      else expect(shown).toEqual(value);
    } else {
      expectError(reply, 400, 'BadRequest', field);
      expectError(await api('GET', `/queues/${name}`), 404, 'EntityNotFound');
    }
  });

  it('E2: durations are answered as ISO 8601 strings of the same length of time', async () => {
    // prepare
    const name = fresh();
    const given = { lockDuration: 'PT300S', defaultMessageTimeToLive: 'PT90S', autoDeleteOnIdle: 'PT1H', duplicateDetectionHistoryTimeWindow: 'P1DT12H' };
    // act
    const created = await api('PUT', `/queues/${name}`, given);
    const read = await api('GET', `/queues/${name}`);
    // assess
    expect(created.status).toBe(201);
    for (const body of [created.body, read.body]) {
      for (const [k, v] of Object.entries(given)) {
        expect(body[k]).toMatch(/^P(?!$)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/);
        expect(isoMs(body[k])).toBe(isoMs(v));
      }
    }
  });

  it('E2: null means unlimited, and a PUT on an existing queue changes only the properties it gives', async () => {
    // prepare
    const name = fresh();
    await createQueue(name, { lockDuration: 'PT30S', defaultMessageTimeToLive: 'P1D', autoDeleteOnIdle: 'PT10M' });
    // act
    const partial = await api('PUT', `/queues/${name}`, { maxDeliveryCount: 2 });
    const unlimited = await api('PUT', `/queues/${name}`, { defaultMessageTimeToLive: null, autoDeleteOnIdle: null });
    const read = await api('GET', `/queues/${name}`);
    // assess
    expect(partial.status).toBe(200);
    expect(partial.body).toMatchObject({ lockDuration: 'PT30S', defaultMessageTimeToLive: 'P1D', autoDeleteOnIdle: 'PT10M', maxDeliveryCount: 2 });
    expect(unlimited.status).toBe(200);
    expect(read.body).toMatchObject({ lockDuration: 'PT30S', defaultMessageTimeToLive: null, autoDeleteOnIdle: null, maxDeliveryCount: 2 });
  });

  it('E2/B2: an update with one bad property is refused whole and changes nothing', async () => {
    // prepare
    const name = fresh();
    await createQueue(name, { lockDuration: 'PT30S' });
    // act
    const refused = await api('PUT', `/queues/${name}`, { maxDeliveryCount: 3, lockDuration: 'PT10M' });
    const read = await api('GET', `/queues/${name}`);
    // assess
    expectError(refused, 400, 'BadRequest', 'lockDuration');
    expect(read.body).toMatchObject({ lockDuration: 'PT30S', maxDeliveryCount: 10 });
  });
});

describe('E3: dead-letter and transfer dead-letter subqueues', () => {
  const subqueuePaths = ['$deadletterqueue', '%24deadletterqueue', '$transferdeadletterqueue', '%24transferdeadletterqueue', '%24DeadLetterQueue'];

  it.each(subqueuePaths)('E3: /queues/{q}/%s resolves for peek and for both receive modes', async (sub) => {
    // prepare
    const name = fresh();
    await createQueue(name);
    await send(name, { body: 'stays in the active queue' });
    // act
    const peeked = await peek(`/queues/${name}/${sub}`);
    const locked = await receive(`/queues/${name}/${sub}`, { mode: 'peekLock' });
    const deleted = await receive(`/queues/${name}/${sub}`, { mode: 'receiveAndDelete' });
    // assess
    expect(peeked).toEqual([]);
    expect(locked).toEqual([]);
    expect(deleted).toEqual([]);
    expect(await peek(`/queues/${name}`)).toHaveLength(1);
  });

  it('E3: a dead-lettered message is reached through $deadletterqueue and %24deadletterqueue alike', async () => {
    // prepare
    const name = fresh();
    await createQueue(name);
    const sent = await send(name, { body: { n: 1 }, messageId: 'dl-1' });
    const [m] = await receive(`/queues/${name}`);
    const dead = await api('POST', `/queues/${name}/messages/${m!.sequenceNumber}/deadletter`, {
      lockToken: m!.lockToken,
      deadLetterReason: 'bad',
      deadLetterErrorDescription: 'why',
    });
    expect(dead.status).toBe(204);
    // act
    const viaDollar = await peek(`/queues/${name}/$deadletterqueue`);
    const viaEncoded = await peek(`/queues/${name}/%24deadletterqueue`);
    const transfer = await peek(`/queues/${name}/$transferdeadletterqueue`);
    const taken = await receive(`/queues/${name}/%24deadletterqueue`, { mode: 'receiveAndDelete' });
    const afterwards = await peek(`/queues/${name}/$deadletterqueue`);
    // assess
    expect(viaDollar).toHaveLength(1);
    expect(viaEncoded).toEqual(viaDollar);
    expect(viaDollar[0]).toMatchObject({
      messageId: 'dl-1',
      body: { n: 1 },
      deadLetterReason: 'bad',
      deadLetterErrorDescription: 'why',
      enqueuedSequenceNumber: sent.sequenceNumber,
    });
    expect(transfer).toEqual([]);
    expect(taken.map((t) => t.messageId)).toEqual(['dl-1']);
    expect(afterwards).toEqual([]);
    expect(await peek(`/queues/${name}`)).toEqual([]);
  });

  it.each(['$deadletterqueue', '%24deadletterqueue', '$transferdeadletterqueue'])(
    'E3: /queues/{q}/%s cannot be created or deleted on its own; the queue is untouched',
    async (sub) => {
      // prepare
      const name = fresh();
      await createQueue(name, { maxDeliveryCount: 4 });
      await send(name, { body: 'keep me' });
      const before = await allQueueNames();
      // act
      const put = await api('PUT', `/queues/${name}/${sub}`, {});
      const del = await api('DELETE', `/queues/${name}/${sub}`);
      // assess
      for (const r of [put, del]) {
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.status).toBeLessThan(500);
        expect(r.body.error).toMatchObject({ code: expect.any(String), requestId: expect.any(String) });
      }
      expect(await allQueueNames()).toEqual(before);
      const read = await api('GET', `/queues/${name}`);
      expect(read.status).toBe(200);
      expect(read.body.maxDeliveryCount).toBe(4);
      expect(await peek(`/queues/${name}`)).toHaveLength(1);
      expect(await peek(`/queues/${name}/${sub}`)).toEqual([]);
    },
  );

  it('E3: "$deadletterqueue" is not a queue name', async () => {
    // act
    const dollar = await api('PUT', '/queues/$deadletterqueue', {});
    const encoded = await api('PUT', '/queues/%24transferdeadletterqueue', {});
    // assess
    expectError(dollar, 400, 'BadRequest', 'queueName');
    expectError(encoded, 400, 'BadRequest', 'queueName');
  });

  it('E3: the subqueues of a queue that does not exist are not found', async () => {
    // act
    const peeked = await api('GET', '/queues/never-made/$deadletterqueue/messages');
    const received = await api('POST', '/queues/never-made/%24transferdeadletterqueue/messages/receive', {});
    // assess
    expectError(peeked, 404, 'EntityNotFound');
    expectError(received, 404, 'EntityNotFound');
  });

  it('E3/D5: nothing can be sent to a subqueue directly', async () => {
    // prepare
    const name = fresh();
    await createQueue(name);
    // act
    const one = await api('POST', `/queues/${name}/$deadletterqueue/messages`, { body: 1 });
    const batch = await api('POST', `/queues/${name}/%24transferdeadletterqueue/messages/batch`, { messages: [{ body: 1 }] });
    // assess
    expectError(one, 400, 'BadRequest');
    expectError(batch, 400, 'BadRequest');
    expect(await peek(`/queues/${name}/$deadletterqueue`)).toEqual([]);
    expect(await peek(`/queues/${name}/$transferdeadletterqueue`)).toEqual([]);
  });
});

describe('E4: delete and re-create', () => {
  it('E4: DELETE of a queue that does not exist is 404 EntityNotFound; a second DELETE is 404 too', async () => {
    // prepare
    const name = fresh();
    await createQueue(name);
    // act
    const absent = await api('DELETE', `/queues/${fresh()}`);
    const first = await api('DELETE', `/queues/${name}`);
    const second = await api('DELETE', `/queues/${name}`);
    // assess
    expectError(absent, 404, 'EntityNotFound');
    expect(first.status).toBe(204);
    expectError(second, 404, 'EntityNotFound');
  });

  it('E3/E4: after delete and re-create none of the old messages (active, locked, scheduled, deferred, dead-lettered) is ever delivered', async () => {
    // prepare: one message in every state
    const name = fresh();
    await createQueue(name, { lockDuration: 'PT5S', maxDeliveryCount: 3 });
    for (const id of ['dead', 'deferred', 'locked', 'active-1', 'active-2']) await send(name, { body: id, messageId: id });
    const scheduled = await send(name, { body: 'scheduled', messageId: 'scheduled', scheduledEnqueueTime: new Date(clock.now() + 60_000).toISOString() });
    const [dead, deferred, locked] = await receive(`/queues/${name}`, { maxMessages: 3 });
    expect([dead?.messageId, deferred?.messageId, locked?.messageId]).toEqual(['dead', 'deferred', 'locked']);
    expect((await api('POST', `/queues/${name}/messages/${dead!.sequenceNumber}/deadletter`, { lockToken: dead!.lockToken })).status).toBe(204);
    expect((await api('POST', `/queues/${name}/messages/${deferred!.sequenceNumber}/defer`, { lockToken: deferred!.lockToken })).status).toBe(204);

    // act
    const deleted = await api('DELETE', `/queues/${name}`);
    const gone = await api('GET', `/queues/${name}`);
    const sendToGone = await api('POST', `/queues/${name}/messages`, { body: 'x' });
    const receiveFromGone = await api('POST', `/queues/${name}/messages/receive`, {});
    const recreated = await api('PUT', `/queues/${name}`, {});

    // assess
    expect(deleted.status).toBe(204);
    expectError(gone, 404, 'EntityNotFound');
    expectError(sendToGone, 404, 'EntityNotFound');
    expectError(receiveFromGone, 404, 'EntityNotFound');
    expect(recreated.status).toBe(201);
    expect(recreated.body).toMatchObject({ lockDuration: 'PT1M', maxDeliveryCount: 10 }); // old properties are gone too
    expect(await receive(`/queues/${name}`, { maxMessages: 100 })).toEqual([]);
    expect(await receive(`/queues/${name}`, { maxMessages: 100, mode: 'receiveAndDelete' })).toEqual([]);
    expect(await peek(`/queues/${name}`, '?maxMessages=100')).toEqual([]);
    expect(await peek(`/queues/${name}/$deadletterqueue`)).toEqual([]);
    expect(await receive(`/queues/${name}/$deadletterqueue`, { maxMessages: 100 })).toEqual([]);
    expectError(await api('POST', `/queues/${name}/messages/deferred`, { sequenceNumbers: [deferred!.sequenceNumber] }), 404, 'MessageNotFound');
    expectError(await api('POST', `/queues/${name}/messages/${locked!.sequenceNumber}/complete`, { lockToken: locked!.lockToken }), 410, 'MessageLockLost');
    expectError(await api('DELETE', `/queues/${name}/messages/scheduled/${scheduled.sequenceNumber}`), 404, 'MessageNotFound');

    // and later, once every old lock and schedule has passed
    clock.advance(2 * 60_000);
    expect(await receive(`/queues/${name}`, { maxMessages: 100, mode: 'receiveAndDelete' })).toEqual([]);
    expect(await peek(`/queues/${name}`, '?maxMessages=100')).toEqual([]);
    const fresh1 = await send(name, { body: 'new', messageId: 'new' });
    const got = await receive(`/queues/${name}`, { maxMessages: 100, mode: 'receiveAndDelete' });
    expect(got.map((m) => [m.messageId, m.sequenceNumber])).toEqual([['new', fresh1.sequenceNumber]]);
  });
});

describe('E5: entity status', () => {
  it('E5: Disabled refuses sends, batch sends and receives (both modes) with EntityDisabled, storing nothing', async () => {
    // prepare
    const name = fresh();
    await createQueue(name, { status: 'Disabled' });
    // act
    const sent = await api('POST', `/queues/${name}/messages`, { body: 1 });
    const batch = await api('POST', `/queues/${name}/messages/batch`, { messages: [{ body: 1 }, { body: 2 }] });
    const locked = await api('POST', `/queues/${name}/messages/receive`, { mode: 'peekLock' });
    const deleted = await api('POST', `/queues/${name}/messages/receive`, { mode: 'receiveAndDelete' });
    // assess
    for (const r of [sent, batch, locked, deleted]) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body.error).toMatchObject({ code: 'EntityDisabled', retryable: false, requestId: expect.any(String) });
      expect(r.body.error.message).toContain('Disabled');
    }
    expect(await peek(`/queues/${name}`)).toEqual([]);
  });

  it('E5: SendDisabled refuses sends but still lets receivers drain the queue', async () => {
    // prepare
    const name = fresh();
    await createQueue(name);
    const before = await send(name, { body: 'before' });
    expect((await api('PUT', `/queues/${name}`, { status: 'SendDisabled' })).status).toBe(200);
    // act
    const refused = await api('POST', `/queues/${name}/messages`, { body: 'after' });
    const refusedBatch = await api('POST', `/queues/${name}/messages/batch`, { messages: [{ body: 'after' }] });
    const got = await receive(`/queues/${name}`, { maxMessages: 10 });
    // assess
    expect(refused.body.error).toMatchObject({ code: 'EntityDisabled' });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refusedBatch.body.error).toMatchObject({ code: 'EntityDisabled' });
    expect(got.map((m) => m.sequenceNumber)).toEqual([before.sequenceNumber]);
    expect((await api('POST', `/queues/${name}/messages/${got[0]!.sequenceNumber}/complete`, { lockToken: got[0]!.lockToken })).status).toBe(204);
  });

  it('E5: ReceiveDisabled refuses receives (both modes) but accepts sends; re-activated, the messages are there', async () => {
    // prepare
    const name = fresh();
    await createQueue(name, { status: 'ReceiveDisabled' });
    // act
    const sent = await api('POST', `/queues/${name}/messages`, { body: 'waiting' });
    const locked = await api('POST', `/queues/${name}/messages/receive`, { mode: 'peekLock' });
    const deleted = await api('POST', `/queues/${name}/messages/receive`, { mode: 'receiveAndDelete' });
    const reactivated = await api('PUT', `/queues/${name}`, { status: 'Active' });
    const got = await receive(`/queues/${name}`, { mode: 'receiveAndDelete' });
    // assess
    expect(sent.status).toBe(201);
    for (const r of [locked, deleted]) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body.error).toMatchObject({ code: 'EntityDisabled', requestId: expect.any(String) });
    }
    expect(reactivated.status).toBe(200);
    expect(got.map((m) => m.sequenceNumber)).toEqual([sent.body.sequenceNumber]);
  });

  it('E5/R7: ReceiveDisabled also refuses receiving a deferred message by sequence number, and locks nothing', async () => {
    // prepare
    const name = fresh();
    await createQueue(name);
    await send(name, { body: 'deferred' });
    const [m] = await receive(`/queues/${name}`);
    expect((await api('POST', `/queues/${name}/messages/${m!.sequenceNumber}/defer`, { lockToken: m!.lockToken })).status).toBe(204);
    expect((await api('PUT', `/queues/${name}`, { status: 'ReceiveDisabled' })).status).toBe(200);
    // act
    const refused = await api('POST', `/queues/${name}/messages/deferred`, { sequenceNumbers: [m!.sequenceNumber] });
    // assess
    expect(refused.status, JSON.stringify(refused.body)).toBeGreaterThanOrEqual(400);
    expect(refused.body.error).toMatchObject({ code: 'EntityDisabled' });
    expect((await api('PUT', `/queues/${name}`, { status: 'Active' })).status).toBe(200);
    const again = await api('POST', `/queues/${name}/messages/deferred`, { sequenceNumbers: [m!.sequenceNumber] });
    expect(again.status).toBe(200);
    expect(again.body.messages).toHaveLength(1);
  });
});

describe('listing queues', () => {
  it('GET /queues pages with top and next: name order, no gaps, no repeats, next null at the end', async () => {
    // prepare: a table of its own, so the list is known exactly
    const listApi = apiClient(await testDeps(clock, 'qlist'));
    const names = ['charlie', 'Alpha', 'echo', 'bravo', 'Delta'];
    for (const n of names) expect((await listApi('PUT', `/queues/${n}`, {})).status).toBe(201);
    // act
    const pages: string[][] = [];
    let next: string | null = null;
    do {
      const page: Reply = await listApi('GET', `/queues?top=2${next ? `&next=${encodeURIComponent(next)}` : ''}`);
      expect(page.status).toBe(200);
      pages.push(page.body.items.map((i: { name: string }) => i.name));
      next = page.body.next;
      expect(pages.length).toBeLessThan(10);
    } while (next);
    const all = await listApi('GET', '/queues');
    // assess
    for (const p of pages) expect(p.length).toBeLessThanOrEqual(2);
    expect(pages.flat()).toEqual(['Alpha', 'bravo', 'charlie', 'Delta', 'echo']);
    expect(pages[0]).toHaveLength(2);
    expect(all.body.items.map((i: { name: string }) => i.name)).toEqual(['Alpha', 'bravo', 'charlie', 'Delta', 'echo']);
    expect(all.body.next).toBeNull();
    expect(all.body.items[0]).toMatchObject({ name: 'Alpha', lockDuration: 'PT1M', runtime: expect.any(Object) });
  });

  it.each(['top=0', 'top=101', 'top=abc', 'top=-1', 'top=1.5'])('GET /queues?%s is refused with 400 naming top', async (query) => {
    // act
    const reply = await api('GET', `/queues?${query}`);
    // assess
    expectError(reply, 400, 'BadRequest', 'top');
  });

  it.each(['%21%21%21', 'zzzz', Buffer.from('UPPER CASE').toString('base64url')])(
    'GET /queues?next=%s (not a token of this API) is refused with 400 naming next',
    async (token) => {
      // act
      const reply = await api('GET', `/queues?next=${token}`);
      // assess
      expectError(reply, 400, 'BadRequest', 'next');
    },
  );
});
