/**
 * Settlement correctness: batch settlement answers per token (R9), lock tokens are GUIDs
 * whose case does not matter (R5), and settling a message of a deleted queue is refused, not
 * acknowledged (E4).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { queueMaker } from '../support/queue-helpers.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'scorrect'));
});

type Msg = Record<string, Json>;

const newQueue = queueMaker(() => api, 'sc');

async function locked(q: string, n: number): Promise<Msg[]> {
  for (let i = 0; i < n; i++) expect((await api('POST', `/queues/${q}/messages`, { body: i })).status).toBe(201);
  const got = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: n });
  expect(got.body.messages).toHaveLength(n);
  return got.body.messages;
}

const peekCount = async (q: string) => (await api('GET', `/queues/${q}/messages?maxMessages=100`)).body.messages.length;

describe('R9: one malformed token in a batch settlement gets its own result', () => {
  it('R9: three valid tokens and "not-a-token": the three are completed, the malformed one gets a BadRequest result naming it', async () => {
    const q = await newQueue();
    const msgs = await locked(q, 3);
    const tokens = [...msgs.map((m) => m.lockToken as string), 'not-a-token'];

    const res = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: tokens });

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toHaveLength(4);
    for (const m of msgs) expect(res.body.results).toContainEqual({ lockToken: m.lockToken, ok: true });
    const bad = res.body.results.find((r: Msg) => r.lockToken === 'not-a-token');
    expect(bad.error).toMatchObject({ code: 'BadRequest', retryable: false });
    expect(bad.error.message).toContain('not-a-token');
    expect(await peekCount(q)).toBe(0);
  });

  it('R9: a token that is not a string is reported in its own result too; abandon settles the rest', async () => {
    const q = await newQueue();
    const [m] = await locked(q, 1);

    const res = await api('POST', `/queues/${q}/messages/abandon`, { lockTokens: [m!.lockToken, 42] });

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results[0]).toEqual({ lockToken: m!.lockToken, ok: true });
    expect(res.body.results[1].error.code).toBe('BadRequest');
    expect(res.body.results[1].error.message).toContain('42');
  });

  it('R9: a body that is not a list of tokens is still a 400 that settles nothing', async () => {
    const q = await newQueue();
    const [m] = await locked(q, 1);
    for (const body of [{ lockTokens: m!.lockToken }, { lockTokens: [] }, {}, { lockTokens: Array(101).fill(m!.lockToken) }]) {
      const res = await api('POST', `/queues/${q}/messages/complete`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toContain('lockTokens');
    }
    expect(await peekCount(q)).toBe(1);
  });
});

describe('R5: lock tokens are GUIDs, case-insensitive', () => {
  it('R5: an upper-cased token completes, renews, abandons, and settles in a batch', async () => {
    const q = await newQueue();
    const [a, b, c] = await locked(q, 3);
    const upper = (m: Msg) => (m.lockToken as string).toUpperCase();

    const renewed = await api('POST', `/queues/${q}/messages/${a!.sequenceNumber}/renew-lock`, { lockToken: upper(a!) });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect((await api('POST', `/queues/${q}/messages/${a!.sequenceNumber}/complete`, { lockToken: upper(a!) })).status).toBe(204);
    expect((await api('POST', `/queues/${q}/messages/${b!.sequenceNumber}/abandon`, { lockToken: upper(b!) })).status).toBe(204);
    const batch = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: [upper(c!)] });
    expect(batch.body.results).toEqual([{ lockToken: upper(c!), ok: true }]);
    const left = (await api('GET', `/queues/${q}/messages?maxMessages=100`)).body.messages;
    expect(left.map((m: Msg) => m.sequenceNumber)).toEqual([b!.sequenceNumber]);
  });
});

describe('E4: settling after the queue is deleted is refused', () => {
  it('E4: renew-lock, complete, abandon, defer, dead-letter and a batch answer 404 EntityNotFound once the queue is gone', async () => {
    const q = await newQueue();
    const msgs = await locked(q, 2);
    const [m] = msgs;
    // The settlement cache has seen the queue.
    expect((await api('POST', `/queues/${q}/messages/${msgs[1]!.sequenceNumber}/renew-lock`, { lockToken: msgs[1]!.lockToken })).status).toBe(200);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);

    for (const action of ['renew-lock', 'complete', 'abandon', 'defer', 'deadletter']) {
      const res = await api('POST', `/queues/${q}/messages/${m!.sequenceNumber}/${action}`, { lockToken: m!.lockToken });
      expect(res.status, `${action}: ${JSON.stringify(res.body)}`).toBe(404);
      expect(res.body.error.code).toBe('EntityNotFound');
    }
    const batch = await api('POST', `/queues/${q}/messages/complete`, { lockTokens: msgs.map((x) => x.lockToken) });
    expect(batch.status).toBe(404);
  });

  it('E4: after the queue is re-created, a token of the old queue gets 410 (lock lost), and the new queue settles normally', async () => {
    const q = await newQueue();
    const [old] = await locked(q, 1);
    expect((await api('POST', `/queues/${q}/messages/${old!.sequenceNumber}/renew-lock`, { lockToken: old!.lockToken })).status).toBe(200);
    expect((await api('DELETE', `/queues/${q}`)).status).toBe(204);
    expect((await api('PUT', `/queues/${q}`, {})).status).toBe(201);

    const res = await api('POST', `/queues/${q}/messages/${old!.sequenceNumber}/complete`, { lockToken: old!.lockToken });
    expect(res.status, JSON.stringify(res.body)).toBe(410);

    const [fresh] = await locked(q, 1);
    expect((await api('POST', `/queues/${q}/messages/${fresh!.sequenceNumber}/complete`, { lockToken: fresh!.lockToken })).status).toBe(204);
  });
});
