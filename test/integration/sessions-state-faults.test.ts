/**
 * N5 under what DynamoDB answers on AWS and DynamoDB Local never does: a session-state write
 * whose transaction is cancelled by a conflict (a lock renewal of the same session item in
 * flight) or a throttle has not lost its lock. Only the lock's own condition failing is 410.
 * A conflict or a throttle at the SDK's retry of a write whose first answer was lost says
 * nothing of that first attempt, which may have landed: not 503 then, which promises nothing
 * changed, but a retryable 500.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { faultyDeps, is } from '../support/faults.js';
import { faultyStore, type StoreCall } from '../support/dynamo-faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>>;
let api: ReturnType<typeof apiClient>;
let counter = 0;

beforeAll(async () => {
  deps = await testDeps(clock, 'session-state-faults');
  api = apiClient(deps);
});

/** A cancelled TransactWriteItems with these reasons, one per item (the state, then the session lock). */
const cancelled = (codes: string[]) =>
  new TransactionCanceledException({
    $metadata: { httpStatusCode: 400 },
    message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}]`,
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

/** A session queue with one message in session `s`, accepted: its lock token. */
async function heldSession(): Promise<{ q: string; token: string }> {
  const q = `st${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { requiresSession: true, lockDuration: 'PT1M' })).status).toBe(201);
  expect((await api('POST', `/queues/${q}/messages`, { body: 1, sessionId: 's' })).status).toBe(201);
  const accepted = await api('POST', `/queues/${q}/sessions/accept`, { sessionId: 's' });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  return { q, token: accepted.body.sessionLockToken };
}

const state = (text: string) => Buffer.from(text).toString('base64');

describe('N5: setting session state when DynamoDB cancels the transaction', () => {
  it.each([['TransactionConflict'], ['ThrottlingError'], ['ProvisionedThroughputExceeded']])(
    'N5/B1: cancelled with %s on the session item is a retryable 503; the lock holds and a retry writes the state',
    async (code) => {
      // prepare
      const { q, token } = await heldSession();
      const faulty = faultyDeps(deps, { match: is(TransactWriteCommand), interleave: async () => Promise.reject(cancelled(['None', code])) });

      // act
      const refused = await apiClient(faulty)('PUT', `/queues/${q}/sessions/s/state`, { sessionLockToken: token, state: state('one') });
      const retried = await api('PUT', `/queues/${q}/sessions/s/state`, { sessionLockToken: token, state: state('one') });

      // assess
      expect(faulty.faults.tripped).toBe(1);
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: 'Throttled', retryable: true });
      expect(refused.headers['retry-after']).toBeDefined();
      expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
      const read = await api('GET', `/queues/${q}/sessions/s/state?sessionLockToken=${token}`);
      expect(read.body.state).toBe(state('one'));
    },
  );

  it('N5: cancelled on the lock condition is 410 SessionLockLost, as a lapsed lock is', async () => {
    // prepare
    const { q, token } = await heldSession();
    const faulty = faultyDeps(deps, {
      match: is(TransactWriteCommand),
      interleave: async () => Promise.reject(cancelled(['None', 'ConditionalCheckFailed'])),
    });

    // act
    const injected = await apiClient(faulty)('PUT', `/queues/${q}/sessions/s/state`, { sessionLockToken: token, state: state('x') });
    clock.advance(61_000);
    const lapsed = await api('PUT', `/queues/${q}/sessions/s/state`, { sessionLockToken: token, state: state('x') });

    // assess
    expect(injected.status).toBe(410);
    expect(injected.body.error.code).toBe('SessionLockLost');
    expect(lapsed.status).toBe(410);
    expect(lapsed.body.error.code).toBe('SessionLockLost');
  });
});

describe('N5: a state write refused at the retry of an attempt that landed', () => {
  const stateWrite = (c: StoreCall) => c.operation === 'TransactWriteItems' && String(c.input.TransactItems?.[0]?.Put?.Item?.pk?.S ?? '').length > 0;
  it('N5, B1: refused with a conflict after its first attempt landed unanswered, it answers 500, not 503', async () => {
    const { q, token } = await heldSession();
    let attempts = 0;
    const store = faultyStore(
      deps.db,
      // The first attempt lands and loses its answer; the SDK's second meets a conflict.
      { retried: { when: stateWrite }, conflict: { when: (c) => stateWrite(c) && ++attempts === 2 } },
      { fastRetries: true },
    );

    const answered = await apiClient({ ...deps, db: store.db })('PUT', `/queues/${q}/sessions/s/state`, { sessionLockToken: token, state: state('landed') });

    expect(store.log.retried).toBe(1);
    expect(store.log.conflicted).toBe(1);
    expect(answered.status, JSON.stringify(answered.body)).toBe(500);
    expect(answered.body.error).toMatchObject({ retryable: true });
    const read = await api('GET', `/queues/${q}/sessions/s/state?sessionLockToken=${token}`);
    expect(read.body.state).toBe(state('landed'));
  });
});
