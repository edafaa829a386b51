/**
 * A cold start that meets a refusing DynamoDB (IAM still propagating after a deploy, a
 * throttle) fails the requests it meets, and only those: the instance's root-key check runs
 * again on the next request instead of answering 5xx until Lambda recycles it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { faultyDeps } from '../support/faults.js';
import { ManualClock, testDeps } from '../support/table.js';

const clock = new ManualClock();
let deps: Awaited<ReturnType<typeof testDeps>>;

beforeAll(async () => {
  deps = await testDeps(clock, 'cold-start');
});

/** What DynamoDB answers a role whose policy IAM has not propagated yet, or a throttle. */
const refusal = (name: string, status: number) => async () => {
  throw Object.assign(new Error(`${name}: refused`), { name, $fault: 'client', $metadata: { httpStatusCode: status } });
};

describe('a cold start that meets a refusing DynamoDB', () => {
  it.each([
    ['AccessDeniedException', 400],
    ['ProvisionedThroughputExceededException', 400],
  ])('A2: after %s on its first calls, the same instance serves later requests', async (name, status) => {
    // prepare: DynamoDB refuses the instance's first three calls, then answers normally
    const faulty = faultyDeps(deps, { match: () => true, times: 3, interleave: refusal(name, status) });
    const api = apiClient(faulty);

    // act
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await api('GET', '/queues')).status);

    // assess: each refusal failed the request that met it, and nothing after them
    expect(faulty.faults.tripped).toBe(3);
    expect(statuses.slice(0, 3).every((s) => s >= 500)).toBe(true);
    expect(statuses.slice(3)).toEqual([200, 200, 200]);
  });
});
