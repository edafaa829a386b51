/**
 * Auto-forwarding (F2) over the API handler: queue to queue, subscription to queue, queue
 * to topic, chains up to the hop limit, loops, and targets that cannot take the message
 * (disabled, deleted), which leave it in the source's transfer dead-letter subqueue (E3).
 * Counts (E6) need the stream consumer and are not checked here.
 */
import { describe, expect, it } from 'vitest';
import { apiOnTable } from '../support/api.js';
import { ManualClock } from '../support/table.js';
import { entityHelpers } from '../support/queue-helpers.js';

const clock = new ManualClock(Date.UTC(2030, 3, 1, 10, 0, 0));
let counter = 0;
const fresh = (stem = 'fw') => `${stem}${++counter}`;

const api = apiOnTable(clock, 'forward-routing');

const { putOk: put, sendTo: send, receiveAll, peekAll, dlq, tdlq } = entityHelpers(() => api);

/** Queues q0 -> q1 -> ... -> q{hops}: `hops` forwarding hops from q0 to the last. */
async function chain(hops: number): Promise<string[]> {
  const names = Array.from({ length: hops + 1 }, () => fresh('hop'));
  for (let i = names.length - 1; i >= 0; i--) {
    const next = names[i + 1];
    await put(`/queues/${names[i]}`, next ? { forwardTo: `queues/${next}` } : {});
  }
  return names;
}

describe('F2: forwarding arrives', () => {
  it('F2: queue -> queue: the message arrives in the target with its content, and nothing stays in the source', async () => {
    const target = fresh('target');
    const source = fresh('source');
    await put(`/queues/${target}`);
    await put(`/queues/${source}`, { forwardTo: `queues/${target}` });
    const message = {
      body: { order: 7 },
      messageId: 'fw-1',
      correlationId: 'c',
      subject: 'order',
      contentType: 'application/json',
      applicationProperties: { color: 'red', n: 2 },
    };
    expect((await send(`/queues/${source}`, message)).messageId).toBe('fw-1');
    const got = await receiveAll(`/queues/${target}`);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject(message);
    expect(await peekAll(`/queues/${source}`)).toEqual([]);
    expect(await peekAll(tdlq(`/queues/${source}`))).toEqual([]);
  });

  it("F2: subscription -> queue: the subscription's copy (after its rule action) arrives in the queue", async () => {
    const topic = fresh('topic');
    const target = fresh('target');
    await put(`/queues/${target}`);
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/fwd`, { forwardTo: `queues/${target}` });
    await api('DELETE', `/topics/${topic}/subscriptions/fwd/rules/$Default`);
    await put(`/topics/${topic}/subscriptions/fwd/rules/red`, { filter: { sql: "color = 'red'" }, action: { sql: "SET via = 'fwd'" } });
    await put(`/topics/${topic}/subscriptions/stay`);
    const sent = await send(`/topics/${topic}`, { body: 'r', messageId: 'red-1', applicationProperties: { color: 'red' } });
    expect(sent.subscriptions.sort()).toEqual(['fwd', 'stay']);
    await send(`/topics/${topic}`, { body: 'b', messageId: 'blue-1', applicationProperties: { color: 'blue' } });
    const got = await receiveAll(`/queues/${target}`);
    expect(got.map((m) => m.messageId)).toEqual(['red-1']);
    expect(got[0].applicationProperties).toEqual({ color: 'red', via: 'fwd', RuleName: 'red' });
    expect(await peekAll(`/topics/${topic}/subscriptions/fwd`)).toEqual([]);
    expect((await receiveAll(`/topics/${topic}/subscriptions/stay`)).map((m) => m.messageId)).toEqual(['red-1', 'blue-1']);
  });

  it('F2: queue -> topic: the message fans out at the target topic by its rules', async () => {
    const topic = fresh('topic');
    const source = fresh('source');
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/all`);
    await put(`/topics/${topic}/subscriptions/red`);
    await api('DELETE', `/topics/${topic}/subscriptions/red/rules/$Default`);
    await put(`/topics/${topic}/subscriptions/red/rules/r`, { filter: { sql: "color = 'red'" } });
    await put(`/queues/${source}`, { forwardTo: `topics/${topic}` });
    await send(`/queues/${source}`, { body: 1, messageId: 'q-red', applicationProperties: { color: 'red' } });
    await send(`/queues/${source}`, { body: 2, messageId: 'q-blue', applicationProperties: { color: 'blue' } });
    expect((await receiveAll(`/topics/${topic}/subscriptions/all`)).map((m) => m.messageId)).toEqual(['q-red', 'q-blue']);
    expect((await receiveAll(`/topics/${topic}/subscriptions/red`)).map((m) => m.messageId)).toEqual(['q-red']);
    expect(await peekAll(`/queues/${source}`)).toEqual([]);
  });

  it('F2: forwardTo written as a bare name (accepted by E2 validation) reaches the queue of that name', async () => {
    const target = fresh('bare');
    const source = fresh('source');
    await put(`/queues/${target}`);
    expect((await put(`/queues/${source}`, { forwardTo: target })).forwardTo).toBe(target);
    const res = await api('POST', `/queues/${source}/messages`, { body: 'bare' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await receiveAll(`/queues/${target}`)).toHaveLength(1);
  });

  it("F2/T1: a forwarded message takes the target's time to live when that is shorter", async () => {
    const target = fresh('target');
    const source = fresh('source');
    await put(`/queues/${target}`, { defaultMessageTimeToLive: 'PT2M' });
    await put(`/queues/${source}`, { forwardTo: `queues/${target}` });
    await send(`/queues/${source}`, { body: 1, timeToLive: 'PT1H' });
    const [m] = await peekAll(`/queues/${target}`);
    expect(m.timeToLive).toBe('PT2M');
    expect(Date.parse(m.expiresAt) - Date.parse(m.enqueuedTime)).toBe(2 * 60_000);
  });
});

describe('F2: the hop limit', () => {
  it('F2: a chain of 4 hops arrives at the end', async () => {
    const names = await chain(4);
    await send(`/queues/${names[0]}`, { body: 'four hops', messageId: 'h4' });
    const last = names[names.length - 1]!;
    expect((await receiveAll(`/queues/${last}`)).map((m) => m.messageId)).toEqual(['h4']);
    for (const n of names) expect(await peekAll(tdlq(`/queues/${n}`)), n).toEqual([]);
  });

  it('F2/D1: 5 hops end in the transfer dead-letter subqueue of the entity that could not forward, with MaxTransferHopCountExceeded', async () => {
    const names = await chain(5);
    await send(`/queues/${names[0]}`, { body: 'five hops', messageId: 'h5', applicationProperties: { k: 'v' } });
    const stuck = names[4]!; // reached after 4 hops; its own hop would be the 5th
    const dead = await receiveAll(tdlq(`/queues/${stuck}`));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      messageId: 'h5',
      body: 'five hops',
      applicationProperties: { k: 'v' },
      deadLetterReason: 'MaxTransferHopCountExceeded',
      deadLetterSource: `queues/${stuck}`,
    });
    expect(dead[0].deadLetterErrorDescription).toEqual(expect.any(String));
    expect(await peekAll(`/queues/${names[5]}`)).toEqual([]);
    for (const n of names) {
      expect(await peekAll(`/queues/${n}`), n).toEqual([]);
      if (n !== stuck) expect(await peekAll(tdlq(`/queues/${n}`)), n).toEqual([]);
      expect(await peekAll(dlq(`/queues/${n}`)), n).toEqual([]);
    }
  });

  it('F2: hops through a topic count: queue -> topic -> subscription -> queue -> queue -> queue stops at the 5th hop', async () => {
    // q1 -(1)-> topic; sub -(2)-> q2 -(3)-> q3 -(4)-> q4 -(5)-> q5
    const [q2, , q4, q5] = await chain(3);
    const topic = fresh('topic');
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/s`, { forwardTo: `queues/${q2}` });
    const q1 = fresh('q1');
    await put(`/queues/${q1}`, { forwardTo: `topics/${topic}` });
    await send(`/queues/${q1}`, { body: 'through a topic', messageId: 'ht' });
    const dead = await receiveAll(tdlq(`/queues/${q4}`));
    expect(dead.map((m) => [m.messageId, m.deadLetterReason])).toEqual([['ht', 'MaxTransferHopCountExceeded']]);
    expect(await peekAll(`/queues/${q5}`)).toEqual([]);
  });

  it('F2: a loop ends in a transfer dead-letter subqueue and does not spin', async () => {
    const a = fresh('loopa');
    const b = fresh('loopb');
    await put(`/queues/${a}`);
    await put(`/queues/${b}`, { forwardTo: `queues/${a}` });
    await put(`/queues/${a}`, { forwardTo: `queues/${b}` });
    await send(`/queues/${a}`, { body: 'spin', messageId: 'loop' });
    const dead = [...(await receiveAll(tdlq(`/queues/${a}`))), ...(await receiveAll(tdlq(`/queues/${b}`)))];
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ messageId: 'loop', deadLetterReason: 'MaxTransferHopCountExceeded' });
    expect(await peekAll(`/queues/${a}`)).toEqual([]);
    expect(await peekAll(`/queues/${b}`)).toEqual([]);
  });

  it("F2: a loop through a topic (subscription forwards to its own topic) ends in the subscription's transfer dead-letter subqueue", async () => {
    const topic = fresh('selfloop');
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/back`, { forwardTo: `topics/${topic}` });
    await put(`/topics/${topic}/subscriptions/keep`);
    const sent = await send(`/topics/${topic}`, { body: 'around', messageId: 'around' });
    expect(sent.subscriptions.sort()).toEqual(['back', 'keep']);
    const dead = await receiveAll(tdlq(`/topics/${topic}/subscriptions/back`));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      messageId: 'around',
      deadLetterReason: 'MaxTransferHopCountExceeded',
      deadLetterSource: `topics/${topic}/subscriptions/back`,
    });
    // `keep` gets the original and one copy per pass through the topic (4 forwarding hops).
    expect(await receiveAll(`/topics/${topic}/subscriptions/keep`)).toHaveLength(5);
    expect(await peekAll(`/topics/${topic}/subscriptions/back`)).toEqual([]);
  });
});

describe('F2: targets that cannot take the message', () => {
  it("F2: a disabled target queue: the message goes to the source's transfer dead-letter subqueue with a reason", async () => {
    const target = fresh('off');
    const source = fresh('source');
    await put(`/queues/${target}`, { status: 'Disabled' });
    await put(`/queues/${source}`, { forwardTo: `queues/${target}` });
    const res = await api('POST', `/queues/${source}/messages`, { body: 'x', messageId: 'to-disabled' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const dead = await receiveAll(tdlq(`/queues/${source}`));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ messageId: 'to-disabled', deadLetterSource: `queues/${source}` });
    expect(dead[0].deadLetterReason).toEqual(expect.any(String));
    expect(dead[0].deadLetterReason).not.toBe('MaxTransferHopCountExceeded');
    expect(dead[0].deadLetterErrorDescription).toContain(target);
    await put(`/queues/${target}`, { status: 'Active' });
    expect(await peekAll(`/queues/${target}`)).toEqual([]);
  });

  it("F2: a send-disabled target topic sends a subscription's copy to the subscription's transfer dead-letter subqueue", async () => {
    const topic = fresh('topic');
    const closed = fresh('closed');
    await put(`/topics/${closed}`, { status: 'SendDisabled' });
    await put(`/topics/${closed}/subscriptions/s`);
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/fwd`, { forwardTo: `topics/${closed}` });
    await send(`/topics/${topic}`, { body: 'x', messageId: 'to-closed' });
    const dead = await receiveAll(tdlq(`/topics/${topic}/subscriptions/fwd`));
    expect(dead.map((m) => m.messageId)).toEqual(['to-closed']);
    expect(dead[0].deadLetterReason).toEqual(expect.any(String));
    expect(dead[0].deadLetterSource).toBe(`topics/${topic}/subscriptions/fwd`);
    expect(await peekAll(`/topics/${closed}/subscriptions/s`)).toEqual([]);
  });

  it('F2: a receive-disabled target still takes forwarded messages', async () => {
    const target = fresh('recvoff');
    const source = fresh('source');
    await put(`/queues/${target}`, { status: 'ReceiveDisabled' });
    await put(`/queues/${source}`, { forwardTo: `queues/${target}` });
    await send(`/queues/${source}`, { body: 'x' });
    expect(await peekAll(`/queues/${target}`)).toHaveLength(1);
    expect(await peekAll(tdlq(`/queues/${source}`))).toEqual([]);
  });

  it("F2: a deleted target: the message goes to the source's transfer dead-letter subqueue with a reason; the send succeeds", async () => {
    const target = fresh('deleted');
    const source = fresh('source');
    await put(`/queues/${target}`);
    await put(`/queues/${source}`, { forwardTo: `queues/${target}` });
    expect((await api('DELETE', `/queues/${target}`)).status).toBe(204);
    const res = await api('POST', `/queues/${source}/messages`, { body: 'x', messageId: 'to-deleted' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const dead = await receiveAll(tdlq(`/queues/${source}`));
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ messageId: 'to-deleted', deadLetterSource: `queues/${source}` });
    expect(dead[0].deadLetterReason).toEqual(expect.any(String));
    expect(dead[0].deadLetterReason).not.toBe('MaxTransferHopCountExceeded');
    expect(dead[0].deadLetterErrorDescription).toContain(target);
    // Re-created, the target gets what is sent from now on, and nothing from before.
    await put(`/queues/${target}`);
    await send(`/queues/${source}`, { body: 'y', messageId: 'after' });
    expect((await receiveAll(`/queues/${target}`)).map((m) => m.messageId)).toEqual(['after']);
  });

  it('F2: a subscription whose target topic was deleted keeps the copy in its transfer dead-letter subqueue', async () => {
    const topic = fresh('topic');
    const gone = fresh('gonetopic');
    await put(`/topics/${gone}`);
    await put(`/topics/${topic}`);
    await put(`/topics/${topic}/subscriptions/fwd`, { forwardTo: `topics/${gone}` });
    expect((await api('DELETE', `/topics/${gone}`)).status).toBe(204);
    await send(`/topics/${topic}`, { body: 'x', messageId: 'to-gone-topic' });
    const dead = await receiveAll(tdlq(`/topics/${topic}/subscriptions/fwd`));
    expect(dead.map((m) => m.messageId)).toEqual(['to-gone-topic']);
    expect(dead[0].deadLetterErrorDescription).toContain(gone);
  });

  it('S8/F2: a forwarded copy without sessionId is not put in a target that requires sessions; it is dead-lettered with "Session id is null"', async () => {
    const target = fresh('sessions');
    const source = fresh('source');
    await put(`/queues/${target}`, { requiresSession: true });
    await put(`/queues/${source}`, { forwardTo: `queues/${target}` });
    await send(`/queues/${source}`, { body: 'no session', messageId: 'ns' });
    await send(`/queues/${source}`, { body: 'session', messageId: 'ws', sessionId: 'S1' });
    expect((await peekAll(`/queues/${target}`)).map((m) => m.messageId)).toEqual(['ws']);
    // Where: the target's dead-letter subqueue (as for fan-out) or the source's transfer one.
    const dead = [...(await peekAll(dlq(`/queues/${target}`))), ...(await peekAll(tdlq(`/queues/${source}`)))];
    expect(dead.map((m) => [m.messageId, m.deadLetterReason])).toEqual([['ns', 'Session id is null']]);
  });
});
