/**
 * What the lock reminder tests (R6 for batches) share: a table and ManualClock of their own
 * per file (workers keep modules between files, so nothing here is module state), the root
 * rule, queues of 30 s locks holding `m-0`.., receives and settlements through the API, and
 * looks past the API at a queue's reminder items and stored messages.
 */
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { ruleStore } from '../../lib/broker/authorization.js';
import { brokerContext } from '../../lib/broker/context.js';
import { reminderPk } from '../../lib/store/keys.js';
import { apiClient, TEST_ROOT_KEY } from './api.js';
import { both, faultyDeps, inputOf, is } from './faults.js';
import type { Msg } from './queue-helpers.js';
import { messageItems } from './stream.js';
import { ManualClock, testDeps } from './table.js';

export const SECOND = 1000;
export const LOCK = 30 * SECOND;

export type Deps = Awaited<ReturnType<typeof testDeps>>;
export type Api = ReturnType<typeof apiClient>;

export const idsOf = (ms: Msg[]) => ms.map((m) => m.messageId as string);
export const countsOf = (ms: Msg[]) => ms.map((m) => m.deliveryCount as number);

/** The Query of a lapsed batch's range (on the table, from one sequence number to another). */
export const isRangeQuery = both(is(QueryCommand), (c) => inputOf(c).IndexName === undefined && String(inputOf(c).KeyConditionExpression).includes('BETWEEN'));

/** A file's queues; `open` (in its beforeAll) makes the table, the client and the root rule the rest use. */
export function reminderQueues() {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  let deps: Deps;
  let api: Api;

  /**
   * `layout`: the files of lock reminders pass `indexLayout` (default-layout.ts), since only
   * today's layout takes a batch out of the `ready` index under a reminder, and `reminders` and
   * `ids` read today's items only: on a positioned queue they would find nothing to check.
   */
  async function open(prefix: string, layout: Pick<Deps, 'newEntityLayout'> = {}): Promise<{ deps: Deps; api: Api }> {
    deps = { ...(await testDeps(clock, prefix)), ...layout };
    api = apiClient(deps);
    await ruleStore(brokerContext(deps)).ensureRoot(TEST_ROOT_KEY);
    return { deps, api };
  }

  /** A queue with 30 s locks holding `n` messages `m-0`.. in that order. */
  async function queueWith(name: string, n: number, props: Record<string, unknown> = {}): Promise<string> {
    expect((await api('PUT', `/queues/${name}`, { lockDuration: 'PT30S', ...props })).status).toBe(201);
    if (n > 0) {
      const res = await api('POST', `/queues/${name}/messages/batch`, {
        messages: Array.from({ length: n }, (_, i) => ({ body: { i }, messageId: `m-${i}` })),
      });
      expect(res.status).toBe(201);
    }
    return name;
  }

  const receiveWith = async (using: Api, queue: string, maxMessages = 10): Promise<Msg[]> => {
    const res = await using('POST', `/queues/${queue}/messages/receive`, { maxMessages });
    expect(res.status).toBe(200);
    return res.body.messages as Msg[];
  };
  const got = (queue: string, maxMessages = 10) => receiveWith(api, queue, maxMessages);
  const settle = (queue: string, m: Msg, action: string) =>
    api('POST', `/queues/${queue}/messages/${m.sequenceNumber as string}/${action}`, { lockToken: m.lockToken });

  async function eidOf(queue: string): Promise<string> {
    const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: { pk: 'queues', sk: queue } }));
    return out.Item!.eid as string;
  }

  /** The reminder items of a queue's one active partition. */
  async function reminders(queue: string): Promise<Record<string, unknown>[]> {
    const pk = reminderPk(`msg/${await eidOf(queue)}/a/0`);
    const out = await deps.db.send(
      new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }),
    );
    return (out.Items ?? []) as Record<string, unknown>[];
  }

  /** Each message id's stored copies in the queue: every message once, nowhere twice. */
  async function ids(queue: string): Promise<string[]> {
    return (await messageItems(deps, queue, 'active')).map((m) => m.messageId).sort();
  }

  /** An api whose every DynamoDB call is recorded (and otherwise made as usual). */
  function recorded(): { api: Api; calls: unknown[] } {
    const calls: unknown[] = [];
    const recording = faultyDeps(deps, { match: () => true, times: Infinity, interleave: async (command) => void calls.push(command) });
    return { api: apiClient(recording), calls };
  }

  return { clock, open, queueWith, receiveWith, got, settle, eidOf, reminders, ids, recorded };
}
