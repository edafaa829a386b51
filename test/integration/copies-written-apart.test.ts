/**
 * S1, S4 for a send stored in more than one write: a topic's copies too large for one
 * transaction are put side by side, then the duplicate marker (S7) or the cancel record of a
 * scheduled send (S6). Once one of those writes landed, the message is stored, in some or all of
 * its copies: a later refusal for load may not answer "nothing stored" (a 503, or a batch's
 * "not stored"), since the sender's resend would be a second copy it was told was none. The
 * record is asked again while the store refuses it; what still fails answers a retryable 500,
 * "may be stored". Real DynamoDB Local; the refusals injected inside the SDK's retry loop
 * (test/support/dynamo-faults.ts), on the table's own layout and on the ticketed one.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { NewEntityLayout } from '../../lib/deps.js';
import { DEDUP_PK_PREFIX, SCHEDULED_COPIES_PK_PREFIX } from '../../lib/store/keys.js';
import { apiClient, type Json } from '../support/api.js';
import { faultyStore, seededRandom, type StoreCall } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2031, 4, 1, 9, 0, 0));
const SUBSCRIPTIONS = 18;

/** 240 KB that does not compress: 18 copies are more than one 4 MB transaction holds. */
const random = seededRandom(7);
const bigBody = Buffer.from(Array.from({ length: 180 * 1024 }, () => Math.floor(random() * 256))).toString('base64');

const putOf = (c: StoreCall, prefix: string) => c.operation === 'PutItem' && String(c.input.Item?.pk?.S ?? '').startsWith(prefix);
/** A copy's put: the only puts that carry the big body. */
const isCopyPut = (c: StoreCall) => c.operation === 'PutItem' && JSON.stringify(c.input.Item ?? {}).length > 100_000;
/** The `n`th call `pick` chooses, and no other: the first record only (then asked again), or the fifth copy (four may have landed). */
const nthOf = (n: number, pick: (c: StoreCall) => boolean) => {
  let seen = 0;
  return (c: StoreCall) => pick(c) && ++seen === n;
};
const isMarkerPut = (c: StoreCall) => putOf(c, DEDUP_PK_PREFIX);
const isRecordPut = (c: StoreCall) => putOf(c, SCHEDULED_COPIES_PK_PREFIX);

describe.each(['index', 'tickets'] as NewEntityLayout[])('a topic send written in parts, on the %s layout', (layout) => {
  let deps: Awaited<ReturnType<typeof testDeps>>;
  let api: ReturnType<typeof apiClient>;
  /** Two topics of SUBSCRIPTIONS subscriptions each, `plain` and `dd` (duplicate detection), shared by the cases: each sends its own ids. */
  beforeAll(async () => {
    deps = { ...(await testDeps(clock, `cwa${layout}`)), newEntityLayout: layout };
    api = apiClient(deps);
    for (const [topic, props] of [
      ['plain', {}],
      ['dd', { requiresDuplicateDetection: true }],
    ] as const) {
      expect((await api('PUT', `/topics/${topic}`, props)).status).toBe(201);
      for (let i = 0; i < SUBSCRIPTIONS; i++) expect((await api('PUT', `/topics/${topic}/subscriptions/s${i}`, {})).status).toBe(201);
    }
  });
  /** The API through a store that refuses (throttles past the SDK's retries) the calls `refuse` picks. */
  const refusing = (refuse: (c: StoreCall) => boolean) =>
    apiClient({ ...deps, db: faultyStore(deps.db, { throttle: { when: refuse } }, { fastRetries: true }).db });
  /** How many copies of the message `id` each subscription of `topic` holds, scheduled ones included. */
  const copies = async (topic: string, id: string) => {
    const counts: number[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const peeked = await api('GET', `/topics/${topic}/subscriptions/s${i}/messages?fromSequenceNumber=0&maxMessages=50`);
      counts.push((peeked.body.messages as Json[]).filter((m) => m.messageId === id).length);
    }
    return counts;
  };
  const once = Array.from({ length: SUBSCRIPTIONS }, () => 1);
  const none = Array.from({ length: SUBSCRIPTIONS }, () => 0);
  const inFuture = () => new Date(clock.now() + 10 * 60_000).toISOString();

  it('S1, S4, F1: a copy refused after others were stored answers 500, may be stored, not Throttled', async () => {
    const sent = await refusing(nthOf(5, isCopyPut))('POST', '/topics/plain/messages', { body: bigBody, messageId: 'm' });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(500);
    expect((sent.body.error as Json).retryable).toBe(true);
    expect((await copies('plain', 'm')).some((n) => n > 0)).toBe(true);
  });

  it('S4, F1: in a batch, that message answers the whole batch 500, never "not stored"', async () => {
    const sent = await refusing(nthOf(5, isCopyPut))('POST', '/topics/plain/messages/batch', { messages: [{ body: bigBody, messageId: 'b' }] });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(500);
    expect((await copies('plain', 'b')).some((n) => n > 0)).toBe(true);
  });

  it('S7, S1: a duplicate marker refused once is asked again: 201, and the resend is dropped', async () => {
    const sent = await refusing(nthOf(1, isMarkerPut))('POST', '/topics/dd/messages', { body: bigBody, messageId: 'd1' });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(201);
    expect((await api('POST', '/topics/dd/messages', { body: bigBody, messageId: 'd1' })).status).toBe(201);
    expect(await copies('dd', 'd1')).toEqual(once);
  });

  it('S7, S1, S4: a duplicate marker the store keeps refusing answers 500 with every copy stored', async () => {
    const sent = await refusing(isMarkerPut)('POST', '/topics/dd/messages', { body: bigBody, messageId: 'd2' });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(500);
    expect((sent.body.error as Json).retryable).toBe(true);
    expect(await copies('dd', 'd2')).toEqual(once);
  });

  it('S6, S1: a cancel record refused once is asked again: 201, and its number cancels every copy', async () => {
    const sent = await refusing(nthOf(1, isRecordPut))('POST', '/topics/plain/messages', { body: 'small', messageId: 's1', scheduledEnqueueTime: inFuture() });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(await copies('plain', 's1')).toEqual(once);
    expect((await api('DELETE', `/topics/plain/messages/scheduled/${sent.body.sequenceNumber as string}`)).status).toBe(204);
    expect(await copies('plain', 's1')).toEqual(none);
  });

  it('S6, S1, S4: a cancel record the store keeps refusing answers 500 with the copies stored', async () => {
    const sent = await refusing(isRecordPut)('POST', '/topics/plain/messages', { body: 'small', messageId: 's2', scheduledEnqueueTime: inFuture() });
    expect(sent.status, JSON.stringify(sent.body)).toBe(500);
    expect((sent.body.error as Json).retryable).toBe(true);
    expect(await copies('plain', 's2')).toEqual(once);
  });
});
