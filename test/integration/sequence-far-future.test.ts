/**
 * S2: in the year 2300 (reachable with the local clock) the broker still accepts its
 * own sequence numbers: settle by lock token, cancel a schedule, receive deferred, peek from.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock(Date.UTC(2300, 0, 1, 12, 0, 0));
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  api = apiClient(await testDeps(clock, 'seq-future'));
});

describe('S2: sequence numbers in the year 2300', () => {
  it('S2: send, receive, complete, defer and receive deferred, cancel a schedule, peek from a number', async () => {
    expect((await api('PUT', '/queues/future', {})).status).toBe(201);
    const sent = await api('POST', '/queues/future/messages', { body: 'a' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(BigInt(sent.body.sequenceNumber) <= (1n << 63n) - 1n).toBe(true);

    const [m] = (await api('POST', '/queues/future/messages/receive', {})).body.messages;
    expect((await api('POST', `/queues/future/messages/${m.sequenceNumber}/defer`, { lockToken: m.lockToken })).status).toBe(204);
    const deferred = await api('POST', '/queues/future/messages/deferred', { sequenceNumbers: [m.sequenceNumber] });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(200);
    const d = deferred.body.messages[0];
    expect((await api('POST', `/queues/future/messages/${d.sequenceNumber}/complete`, { lockToken: d.lockToken })).status).toBe(204);

    const scheduled = await api('POST', '/queues/future/messages', { body: 's', scheduledEnqueueTime: new Date(clock.now() + 60_000).toISOString() });
    expect((await api('GET', `/queues/future/messages?fromSequenceNumber=${scheduled.body.sequenceNumber}`)).body.messages).toHaveLength(1);
    expect((await api('DELETE', `/queues/future/messages/scheduled/${scheduled.body.sequenceNumber}`)).status).toBe(204);
  });
});
