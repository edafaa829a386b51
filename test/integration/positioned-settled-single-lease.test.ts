/**
 * A single complete that settles the only message of its lease deletes the lease at once, when
 * the process that claimed it completes it (broker/positioned-receive.ts `forgetSettledLeases`,
 * store/leases.ts `deleteSettledLease`, each with `remembered`): no read for it, and the lapse then
 * reads and deletes nothing for it (R4, R6). A lease of more messages, or one claimed in another
 * process, stays for its lapse. A Lambda dying at each step of the complete, or DynamoDB
 * refusing the lease's delete, loses, doubles and strands nothing (D3).
 */
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Json } from '../support/api.js';
import { ManualClock, testDeps } from '../support/table.js';
import { jsonMessages, messagesLeft, queueEntity, recordingCalls, sendPositioned } from '../support/positioned-queue.js';
import { both, faultyDeps, inputOf, is, type Fault } from '../support/faults.js';
import { faultyStore } from '../support/dynamo-faults.js';
import { claim, forgetRememberedLeases, readCursor, readLeases } from '../../lib/store/leases.js';
import { positionedPk } from '../../lib/store/keys.js';
import { positionedLayout } from '../support/positioned-layout.js';
import type { EntityLayout } from '../../lib/deps.js';

const SECOND = 1000;
const LOCK = 30 * SECOND;
const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
let deps: Awaited<ReturnType<typeof testDeps>> & { newEntityLayout: EntityLayout };
let queues = 0;

beforeAll(async () => {
  deps = { ...(await testDeps(clock, 'possingle')), newEntityLayout: positionedLayout };
});

async function positionedQueue() {
  const name = `ss${++queues}`;
  expect((await apiClient(deps)('PUT', `/queues/${name}`, { lockDuration: 'PT30S' })).status).toBe(201);
  const entity = await queueEntity(deps, name);
  return { name, entity, pk: positionedPk(entity.eid, 'active', 0) };
}

const pkOf = (c: unknown) => String((inputOf(c).Item ?? inputOf(c).Key)?.pk ?? '');
const onPrefix = (prefix: string) => (c: unknown) => pkOf(c).startsWith(prefix);

async function receive(name: string, maxMessages: number): Promise<Json[]> {
  const res = await apiClient(deps)('POST', `/queues/${name}/messages/receive`, { maxWaitTime: 'PT0S', maxMessages });
  return (res.status === 200 ? res.body.messages : []) as Json[];
}

const completeOne = (name: string, m: Json, via = apiClient(deps)) =>
  via('POST', `/queues/${name}/messages/${m.sequenceNumber}/complete`, { lockToken: m.lockToken });

// Pins lease items and their deletes: a ticket has none (its counter entry leaves with the next take); the
// twins on a ticketed queue are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned single complete: a lease of one message goes at once', () => {
  it('R4, R6: the lease goes with its message; the lapse reads and deletes nothing for it, and another receiver does not write it back', async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('a', 1));
    const [m] = await receive(name, 1);
    const { calls, store } = recordingCalls(deps);
    expect((await completeOne(name, m!, apiClient(store))).status).toBeLessThan(300);
    // No read of the lease: this process remembers it.
    expect(calls.filter((c) => c.endsWith(' lease'))).toEqual(['DeleteCommand lease']);
    expect(await readLeases(deps, pk)).toEqual([]);
    forgetRememberedLeases();
    const other = recordingCalls(deps);
    expect((await claim(other.store, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(other.calls.filter((c) => c.startsWith('PutCommand lease') || c.startsWith('TransactWriteCommand'))).toEqual([]);
    expect((await readCursor(deps, pk)).claim).toBeUndefined();
    clock.advance(LOCK + SECOND);
    const later = recordingCalls(deps);
    expect((await claim(later.store, pk, 10, { lockMs: LOCK })).messages).toEqual([]);
    expect(later.calls.filter((c) => c.startsWith('DeleteCommand') || c.startsWith('PutCommand'))).toEqual([]);
    expect(await messagesLeft(deps, pk)).toEqual([]);
  });

  it('R4, R6: a lease of two messages stays after one single complete, and one claimed in another process stays too (no read paid)', async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('b', 3));
    const two = await receive(name, 2);
    expect((await completeOne(name, two[0]!)).status).toBeLessThan(300);
    expect(await readLeases(deps, pk)).toHaveLength(1);
    const [alone] = await receive(name, 1);
    forgetRememberedLeases();
    const { calls, store } = recordingCalls(deps);
    expect((await completeOne(name, alone!, apiClient(store))).status).toBeLessThan(300);
    expect(calls.filter((c) => c.endsWith(' lease'))).toEqual([]);
    expect(await readLeases(deps, pk)).toHaveLength(2);
    // The lapse takes back the one message still held, once, and deletes both.
    clock.advance(LOCK + SECOND);
    const back = await receive(name, 10);
    expect(back.map((x) => x.body.n)).toEqual(['b1']);
    expect(back[0]!.deliveryCount).toBe(2);
    expect((await completeOne(name, back[0]!)).status).toBeLessThan(300);
    expect(await messagesLeft(deps, pk)).toEqual([]);
  });
});

const completeCrashes: [string, Fault][] = [
  ["the message's delete, before it", { match: both(is(DeleteCommand), onPrefix('pos/')) }],
  ["the message's delete, after it", { match: both(is(DeleteCommand), onPrefix('pos/')), phase: 'after' }],
  ["the lease's delete, before it", { match: both(is(DeleteCommand), onPrefix('lease/')) }],
  ["the lease's delete, after it", { match: both(is(DeleteCommand), onPrefix('lease/')), phase: 'after' }],
];

// Pins lease items and their deletes: a ticket has none (its counter entry leaves with the next take); the
// twins on a ticketed queue are in ticket-receive.test.ts.
describe.skipIf(positionedLayout === 'tickets')('positioned single complete: a Lambda dying at each step', () => {
  it.each(completeCrashes)('D3, R4, R6: a single complete dying at %s loses, doubles and strands nothing', async (_, fault) => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('k', 1));
    const [m] = await receive(name, 1);
    const dying = faultyDeps(deps, fault);
    expect((await completeOne(name, m!, apiClient(dying))).status).toBe(500);
    expect(dying.faults.tripped).toBe(1);
    // A retry completes it, or finds it completed (its lock lost).
    const retry = await completeOne(name, m!);
    expect([200, 204, 410]).toContain(retry.status);
    expect(await messagesLeft(deps, pk)).toEqual([]);
    // Whatever was left of the lease goes at its lapse; nothing comes back.
    clock.advance(LOCK + SECOND);
    expect(await receive(name, 10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect((await readCursor(deps, pk)).back ?? []).toEqual([]);
  });

  it('D3, R6: a lease delete refused for load answers the complete; the lapse deletes the lease instead', async () => {
    const { name, entity, pk } = await positionedQueue();
    await sendPositioned(deps, entity, jsonMessages('t', 1));
    const [m] = await receive(name, 1);
    const refusing = faultyStore(
      deps.db,
      { throttle: { when: (c) => c.operation === 'DeleteItem' && String(c.input.Key?.pk?.S ?? '').startsWith('lease/') } },
      { fastRetries: true },
    );
    expect((await completeOne(name, m!, apiClient({ ...deps, db: refusing.db }))).status).toBeLessThan(300);
    expect(await readLeases(deps, pk)).toHaveLength(1);
    clock.advance(LOCK + SECOND);
    expect(await receive(name, 10)).toEqual([]);
    expect(await readLeases(deps, pk)).toEqual([]);
    expect(await messagesLeft(deps, pk)).toEqual([]);
  });
});
