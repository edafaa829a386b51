/**
 * R3 on a positioned queue: a delivery is counted only for a message a peek-lock receive
 * actually handed out. A receive that fails after its claim's cursor write (a later step of the
 * claim, or the dead-letter work under its lease, throws) hands nothing of that claim out, so
 * the lapse of its lease must count no delivery for what it did not hand out
 * (lib/broker/positioned-receive.ts, leases.ts `markClaimUndelivered`). With maxDeliveryCount 1
 * an over-count shows at once: a message never handed out would be dead-lettered (D2) instead
 * of delivered. A receiver that dies outright after the cursor write (nothing of it runs any
 * more) counts the delivery at the lapse, as Service Bus counts one for a lock that expires
 * whatever became of its receiver.
 */
import { DeleteCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { InternalServerError } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { jsonMessages, queueEntity, sendPositioned } from '../support/positioned-queue.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { readLeases } from '../../lib/store/leases.js';
import { positionedPk } from '../../lib/store/keys.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'posundeliv')), newEntityLayout: positionedLayout };
});

async function positionedQueue(maxDeliveryCount: number, properties: Record<string, unknown> = {}) {
  const name = `uq${++queues}`;
  expect((await apiClient(deps)('PUT', `/queues/${name}`, { lockDuration: 'PT30S', maxDeliveryCount, ...properties })).status).toBe(201);
  const entity = await queueEntity(deps, name);
  return { name, entity, pk: positionedPk(entity.eid, 'active', 0) };
}

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);
const cursorWrite = both(is(PutCommand), onPrefix('cursor/'));

const receive = async (api: ReturnType<typeof apiClient>, name: string, maxMessages = 10) => {
  const res = await api('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages });
  return { status: res.status, messages: (res.status === 200 ? res.body.messages : []) as Json[] };
};
/** What a healthy receiver gets next: a claim may first write a dead claimer's lease and take it back. */
async function receiveNext(name: string): Promise<Json[]> {
  for (let i = 0; i < 3; i++) {
    const { messages } = await receive(apiClient(deps), name);
    if (messages.length > 0) return messages;
  }
  return [];
}
const deadLetters = async (name: string) =>
  ((await apiClient(deps)('GET', `/queues/${name}/$deadletterqueue/messages?maxMessages=10`)).body.messages as Json[]).map((m) => [m.body.n, m.deliveryCount]);

/**
 * A queue (maxDeliveryCount 1) whose next peek-lock claim goes through every step after its
 * cursor write: it takes back a lapsed lease of `a0` (delivered once, so past its last
 * delivery: dead-lettered under the claim's lease, D2), passes a void request whose landed
 * messages it deletes, and claims `b0` and `b1`, never delivered.
 */
async function everyStepAhead() {
  const q = await positionedQueue(1);
  await sendPositioned(deps, q.entity, jsonMessages('a', 1));
  expect((await receive(apiClient(deps), q.name)).messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['a0', 1]]);
  // A sender that died between its puts: positions of a request with a hole, voided once it ages.
  const dying = faultyDeps(deps, { match: is(PutCommand), nth: 2 });
  await expect(sendPositioned(dying, q.entity, jsonMessages('x', 3))).rejects.toThrow();
  await sendPositioned(deps, q.entity, jsonMessages('b', 2));
  clock.advance(Math.max(LOCK, HOLE_AFTER_MS) + SECOND);
  return q;
}

/** The steps of a peek-lock receive after its claim's cursor write, each to fail once. */
const afterTheClaim: [string, Fault][] = [
  ['the lease write, before it', { match: both(is(PutCommand), onPrefix('lease/')) }],
  ['the lease write, after it', { match: both(is(PutCommand), onPrefix('lease/')), phase: 'after' }],
  ["the lapsed lease's delete, before it", { match: both(is(DeleteCommand), onPrefix('lease/')) }],
  ["a void message's delete, before it", { match: both(is(DeleteCommand), onPrefix('pos/')) }],
  ["the dead-letter move's transaction, before it", { match: is(TransactWriteCommand) }],
  ["the dead-letter move's transaction, after it", { match: is(TransactWriteCommand), phase: 'after' }],
];

// Fails at the cursor claim's steps after its cursor write (lease write and delete, the claim's own deletes), which a
// ticketed queue's head never makes: the twins at the ticket's steps are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')(
  'positioned receive: a peek-lock receive failing after its claim counts no delivery for what it did not hand out',
  () => {
    it.each(afterTheClaim)('R3, D2: failing at %s, the claimed messages come back at the lapse undelivered', async (_, fault) => {
      const { name, pk } = await everyStepAhead();
      // A step that throws, not a process that dies: the receive goes on to mark what it did not hand out.
      const failing = faultyDeps(deps, { ...fault, afterwards: 'lives' });
      const failed = await receive(apiClient(failing), name);
      expect(failing.faults.tripped).toBe(1);
      expect(failed.status).toBe(500);
      clock.advance(LOCK + SECOND);
      // Never handed out: delivered now for the first time, not dead-lettered as past their last delivery.
      const next = await receiveNext(name);
      expect(next.map((m) => [m.body.n, m.deliveryCount])).toEqual([
        ['b0', 1],
        ['b1', 1],
      ]);
      // a0 had one delivery, whether dead-lettered by the failing receive or after its lapse.
      expect(await deadLetters(name)).toEqual([['a0', 1]]);
      const api = apiClient(deps);
      for (const m of next) expect((await api('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken })).status).toBe(204);
      clock.advance(LOCK + SECOND);
      expect((await receive(api, name)).messages).toEqual([]);
      expect(await readLeases(deps, pk)).toEqual([]);
    });

    it("R3: DynamoDB failing the lease write past the SDK's retries (InternalServerError) counts no delivery for the claim it fails", async () => {
      const { name, entity } = await positionedQueue(1);
      await sendPositioned(deps, entity, jsonMessages('s', 2));
      const failing = faultyDeps(deps, {
        match: both(is(PutCommand), onPrefix('lease/')),
        interleave: async () => {
          throw new InternalServerError({ $metadata: { httpStatusCode: 500 }, message: 'injected' });
        },
      });
      expect((await receive(apiClient(failing), name)).status).toBe(500);
      clock.advance(LOCK + SECOND);
      expect((await receiveNext(name)).map((m) => [m.body.n, m.deliveryCount])).toEqual([
        ['s0', 1],
        ['s1', 1],
      ]);
      expect(await deadLetters(name)).toEqual([]);
    });

    it('R3, R10: a receive that hands out its first claim and fails in its second answers the first, counted, and counts none for the second', async () => {
      const { name, entity } = await positionedQueue(1, { defaultMessageTimeToLive: 'PT1M' });
      await sendPositioned(deps, entity, jsonMessages('e', 1));
      clock.advance(2 * MINUTE);
      await sendPositioned(deps, entity, jsonMessages('q', 2));
      // The first claim takes the expired e0 and q0; removing e0 leaves one wanted, and the
      // claim made again for it (q1) fails at its lease write.
      const failing = faultyDeps(deps, { match: both(is(PutCommand), onPrefix('lease/')), nth: 2, afterwards: 'lives' });
      const first = await receive(apiClient(failing), name, 2);
      expect(failing.faults.tripped).toBe(1);
      expect(first.status).toBe(200);
      expect(first.messages.map((m) => [m.body.n, m.deliveryCount])).toEqual([['q0', 1]]);
      clock.advance(LOCK + SECOND);
      // q0 was delivered once, its lock ran out: past its last delivery (D2). q1 never was.
      expect((await receiveNext(name)).map((m) => [m.body.n, m.deliveryCount])).toEqual([['q1', 1]]);
      expect(await deadLetters(name)).toEqual([['q0', 1]]);
    });

    it('R3: a receiver that dies outright after its cursor write counts the delivery at the lapse, as Service Bus counts an expired lock', async () => {
      const { name, entity } = await positionedQueue(10);
      await sendPositioned(deps, entity, jsonMessages('d', 2));
      // Once the cursor write has landed, nothing of the receiver runs any more.
      const dying = faultyDeps(deps, { match: cursorWrite, phase: 'after' });
      expect((await receive(apiClient(dying), name)).status).toBe(500);
      expect(dying.faults.tripped).toBeGreaterThan(0);
      clock.advance(LOCK + SECOND);
      expect((await receiveNext(name)).map((m) => [m.body.n, m.deliveryCount])).toEqual([
        ['d0', 2],
        ['d1', 2],
      ]);
    });
  },
);
