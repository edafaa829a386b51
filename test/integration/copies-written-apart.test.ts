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
import { describe, expect, it } from 'vitest';
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
  const world = async (name: string, topicProps: Record<string, unknown>, refuse: (c: StoreCall) => boolean) => {
    const deps = { ...(await testDeps(clock, `cwa${layout}`)), newEntityLayout: layout };
    const api = apiClient(deps);
    expect((await api('PUT', `/topics/${name}`, topicProps)).status).toBe(201);
    for (let i = 0; i < SUBSCRIPTIONS; i++) expect((await api('PUT', `/topics/${name}/subscriptions/s${i}`, {})).status).toBe(201);
    const refused = apiClient({ ...deps, db: faultyStore(deps.db, { throttle: { when: refuse } }, { fastRetries: true }).db });
    /** The message ids each subscription holds, scheduled ones included. */
    const held = async () => {
      const ids: string[][] = [];
      for (let i = 0; i < SUBSCRIPTIONS; i++) {
        const peeked = await api('GET', `/topics/${name}/subscriptions/s${i}/messages?fromSequenceNumber=0&maxMessages=10`);
        ids.push((peeked.body.messages as Json[]).map((m) => m.messageId as string));
      }
      return ids;
    };
    return { api, refused, held };
  };

  it('S1, S4, F1: a copy refused after others were stored answers 500, may be stored, not Throttled', async () => {
    const w = await world('copy', {}, nthOf(5, isCopyPut));
    const sent = await w.refused('POST', '/topics/copy/messages', { body: bigBody, messageId: 'm' });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(500);
    expect((sent.body.error as Json).retryable).toBe(true);
    expect((await w.held()).filter((ids) => ids.includes('m')).length).toBeGreaterThan(0);
  });

  it('S4, F1: in a batch, that message answers the whole batch 500, never "not stored"', async () => {
    const w = await world('batch', {}, nthOf(5, isCopyPut));
    const sent = await w.refused('POST', '/topics/batch/messages/batch', { messages: [{ body: bigBody, messageId: 'b' }] });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(500);
    expect((await w.held()).filter((ids) => ids.includes('b')).length).toBeGreaterThan(0);
  });

  it('S7, S1: a duplicate marker refused once is asked again: 201, and the resend is dropped', async () => {
    const w = await world('dd', { requiresDuplicateDetection: true }, nthOf(1, isMarkerPut));
    const sent = await w.refused('POST', '/topics/dd/messages', { body: bigBody, messageId: 'd' });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(201);
    expect((await w.api('POST', '/topics/dd/messages', { body: bigBody, messageId: 'd' })).status).toBe(201);
    expect(await w.held()).toEqual(Array.from({ length: SUBSCRIPTIONS }, () => ['d']));
  });

  it('S7, S1, S4: a duplicate marker the store keeps refusing answers 500 with every copy stored', async () => {
    const w = await world('ddout', { requiresDuplicateDetection: true }, isMarkerPut);
    const sent = await w.refused('POST', '/topics/ddout/messages', { body: bigBody, messageId: 'd' });
    expect(sent.status, JSON.stringify(sent.body).slice(0, 300)).toBe(500);
    expect((sent.body.error as Json).retryable).toBe(true);
    expect(await w.held()).toEqual(Array.from({ length: SUBSCRIPTIONS }, () => ['d']));
  });

  it('S6, S1: a cancel record refused once is asked again: 201, and its number cancels every copy', async () => {
    const w = await world('sched', {}, nthOf(1, isRecordPut));
    const at = new Date(clock.now() + 10 * 60_000).toISOString();
    const sent = await w.refused('POST', '/topics/sched/messages', { body: 'small', messageId: 's', scheduledEnqueueTime: at });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(await w.held()).toEqual(Array.from({ length: SUBSCRIPTIONS }, () => ['s']));
    expect((await w.api('DELETE', `/topics/sched/messages/scheduled/${sent.body.sequenceNumber as string}`)).status).toBe(204);
    expect(await w.held()).toEqual(Array.from({ length: SUBSCRIPTIONS }, () => []));
  });

  it('S6, S1, S4: a cancel record the store keeps refusing answers 500 with the copies stored', async () => {
    const w = await world('schedout', {}, isRecordPut);
    const at = new Date(clock.now() + 10 * 60_000).toISOString();
    const sent = await w.refused('POST', '/topics/schedout/messages', { body: 'small', messageId: 's', scheduledEnqueueTime: at });
    expect(sent.status, JSON.stringify(sent.body)).toBe(500);
    expect((sent.body.error as Json).retryable).toBe(true);
    expect(await w.held()).toEqual(Array.from({ length: SUBSCRIPTIONS }, () => ['s']));
  });
});
