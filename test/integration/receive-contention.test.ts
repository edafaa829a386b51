/**
 * Lost lock races: a receiver that lost a race for a message reads a larger page and
 * starts at a random place in it, so crowded receivers stop racing for the head; so does a
 * crowd of one process whose reads overlap, before any race is lost. A lone receiver never
 * loses a race and keeps strict order (R2).
 */
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from '../support/api.js';
import { both, faultyDeps, inputOf, is } from '../support/faults.js';
import { ManualClock, testDeps } from '../support/table.js';
import { indexLayout } from '../support/default-layout.js';

type Deps = Awaited<ReturnType<typeof testDeps>>;
const clock = new ManualClock(Date.UTC(2031, 5, 1, 12, 0, 0));
let deps: Deps;
let api: ReturnType<typeof apiClient>;
let counter = 0;

beforeAll(async () => {
  // Today's layout (indexLayout): every test here watches the pages of the `ready` index and
  // the lock of a message read from it, calls a positioned receive (heads taken by claim or
  // ticket) never makes; on it the page sizes and lost locks counted below would be none at all.
  deps = { ...(await testDeps(clock, 'contend')), ...indexLayout };
  api = apiClient(deps);
});

async function queueWith(n: number): Promise<string> {
  const q = `ct${++counter}`;
  expect((await api('PUT', `/queues/${q}`, { lockDuration: 'PT5M' })).status).toBe(201);
  for (let i = 0; i < n; i++) expect((await api('POST', `/queues/${q}/messages`, { body: i })).status).toBe(201);
  return q;
}

const isLock = both(is(UpdateCommand), (c) => String(inputOf(c).UpdateExpression).includes('lockToken = :token'));
const isReadyQuery = both(is(QueryCommand), (c) => inputOf(c).IndexName === 'ready');

/** The same deps, noting the page size (Limit) of every Query of the ready index. */
function noteLimits<D extends Deps>(d: D, limits: number[]): D {
  const send = d.db.send.bind(d.db) as (c: unknown) => Promise<unknown>;
  const db = new Proxy(d.db, {
    get: (target, prop) => (prop === 'send' ? (c: unknown) => (isReadyQuery(c) && limits.push(inputOf(c).Limit), send(c)) : Reflect.get(target, prop)),
  });
  return { ...d, db };
}

describe('lost lock races', () => {
  it('R2: a lone receiver takes the messages in strict sequence order with a small page', async () => {
    const q = await queueWith(12);
    const limits: number[] = [];
    const lone = apiClient(noteLimits(deps, limits));

    const bodies: number[] = [];
    for (let i = 0; i < 12; i++) bodies.push(...(await lone('POST', `/queues/${q}/messages/receive`, {})).body.messages.map((m: { body: number }) => m.body));

    expect(bodies).toEqual([...Array(12).keys()]);
    expect(Math.max(...limits)).toBeLessThan(100);
  });

  it('R1: a receiver that loses the head to another receiver takes another message, then reads a larger page from a random place', async () => {
    const q = await queueWith(40);
    const limits: number[] = [];
    let other: unknown[] = [];
    // Between this receiver's read and its lock, another receiver takes the head.
    const racing = faultyDeps(deps, {
      match: isLock,
      interleave: async () => {
        other = (await api('POST', `/queues/${q}/messages/receive`, {})).body.messages;
      },
    });
    const crowded = apiClient(noteLimits(racing, limits));

    const first = await crowded('POST', `/queues/${q}/messages/receive`, {});

    expect(other.map((m) => (m as { body: number }).body)).toEqual([0]);
    expect(first.body.messages).toHaveLength(1);
    expect(first.body.messages[0].body).not.toBe(0); // the lost one went to the other receiver, once
    expect(limits).toEqual([10]);

    // From now on this process knows the queue is crowded: a page of 100, from a random place.
    const next: number[] = [];
    for (let i = 0; i < 3; i++) next.push(...(await crowded('POST', `/queues/${q}/messages/receive`, {})).body.messages.map((m: { body: number }) => m.body));
    expect(limits.slice(1)).toEqual([100, 100, 100]);
    expect(next).toHaveLength(3);
    expect(new Set([...next, first.body.messages[0].body, 0]).size).toBe(5); // nothing delivered twice
  });

  it('R1: a burst of receivers of one process on a quiet queue, their reads in flight together, do not all go for the head', async () => {
    const RECEIVERS = 8;
    const q = await queueWith(40); // never received from: no crowd seen on it yet, as after a quiet spell
    let lost = 0;
    let held: (() => void)[] = [];
    const release = () => (held.forEach((go) => go()), (held = []));
    // Every first read of the ready index waits until all the receivers have one in flight:
    // the burst, read for read, that a busy server sees when a crowd comes back.
    const send = deps.db.send.bind(deps.db) as (c: unknown) => Promise<unknown>;
    let reads = 0;
    const db = new Proxy(deps.db, {
      get: (target, prop) =>
        prop === 'send'
          ? async (c: unknown) => {
              if (isReadyQuery(c) && ++reads <= RECEIVERS) {
                await new Promise<void>((go) => {
                  held.push(go);
                  if (held.length === RECEIVERS) release();
                });
              }
              try {
                return await send(c);
              } catch (e) {
                if (isLock(c) && (e as Error).name === 'ConditionalCheckFailedException') lost++;
                throw e;
              }
            }
          : Reflect.get(target, prop),
    });
    const burst = apiClient({ ...deps, db });

    const replies = await Promise.all(Array.from({ length: RECEIVERS }, () => burst('POST', `/queues/${q}/messages/receive`, {})));

    const bodies = replies.map((r) => r.body.messages.map((m: { body: number }) => m.body)).flat();
    expect(bodies).toHaveLength(RECEIVERS);
    expect(new Set(bodies).size).toBe(RECEIVERS); // nothing handed out twice
    // Strict order would have sent all eight for message 0, seven of them losing a billed write.
    expect(lost).toBe(0);
  });
});
