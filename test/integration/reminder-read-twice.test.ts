/**
 * A message that one receive meets twice: the `ready` index, which lags its table on AWS, still
 * shows its row from before a batch took it, and the lapse of that batch's lock reminder puts
 * it back in the same page. The receive takes it once and its next batch's reminder names it
 * once (R6, R10); BatchGetItem refuses a request that names a key twice, so a reminder naming a
 * message twice (as one written before this was so may) would fail every receive that meets
 * its lapse, and the queue would deliver nothing again. Real DynamoDB Local; the lagging row
 * injected into the index Query's answer.
 */
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { newBatchLockToken, sequenceOfLockToken } from '../../lib/messages/lock-token.js';
import { apiClient } from '../support/api.js';
import { indexLayout } from '../support/default-layout.js';
import { countsOf, idsOf, LOCK, reminderQueues, type Api, type Deps } from '../support/reminder-queues.js';

const { clock, open, queueWith, got, receiveWith, reminders, settle } = reminderQueues();
let deps: Deps;
let api: Api;

beforeAll(async () => ({ deps, api } = await open('reminder-twice', indexLayout)));

type Row = Record<string, unknown>;

/**
 * `db` whose Queries of the `ready` index answer also `extra()` (rows as an index that has not
 * caught up with its table still shows them), and which keeps the rows each such Query found.
 */
function lagging(db: DynamoDBDocumentClient, extra: () => Row[]): { db: DynamoDBDocumentClient; seen: Row[] } {
  const seen: Row[] = [];
  const send = async (command: unknown) => {
    const out = await db.send(command as never);
    if (!(command instanceof QueryCommand) || command.input.IndexName !== 'ready') return out;
    const items = (out as { Items?: Row[] }).Items ?? [];
    seen.push(...items);
    return { ...out, Items: [...items, ...extra()] };
  };
  return { db: new Proxy(db, { get: (target, prop, receiver) => (prop === 'send' ? send : Reflect.get(target, prop, receiver)) }), seen };
}

describe('R6, R10: a message met twice in one receive', () => {
  it("R6, R10: a lapsed batch met beside its message's lagging row is taken once, and its new reminder names each message once", async () => {
    const q = await queueWith('twice', 2);
    let stale: Row[] = [];
    const index = lagging(deps.db, () => stale);
    const lagged: Api = apiClient({ ...deps, db: index.db });

    // A batch of both, under one reminder; the index's rows of them as that receive read them.
    const first = await receiveWith(lagged, q, 10);
    expect(idsOf(first)).toEqual(['m-0', 'm-1']);
    const before = index.seen.find((row) => String(row.sk).endsWith(first[0]!.sequenceNumber as string));
    expect(before).toBeDefined();

    // The lock lapses; the index still shows m-0 where it was before the take, beside the reminder.
    clock.advance(LOCK + 1);
    stale = [before!];
    const again = await receiveWith(lagged, q, 10);
    stale = [];
    expect(idsOf(again).sort()).toEqual(['m-0', 'm-1']);
    expect(countsOf(again)).toEqual([2, 2]);
    const named = (await reminders(q)).flatMap((r) => Object.keys(r.takes as Row).map(sequenceOfLockToken));
    expect(named.map(String).sort()).toEqual(again.map((m) => String(m.sequenceNumber)).sort());

    // And once more past that lock: both come back, and nothing fails.
    clock.advance(LOCK + 1);
    const third = await got(q, 10);
    expect(idsOf(third).sort()).toEqual(['m-0', 'm-1']);
  });

  it('R6, R10: a lapsed reminder that names a message twice brings it back once, and the queue goes on', async () => {
    const q = await queueWith('named-twice', 2);
    const batch = await got(q, 10);
    expect(idsOf(batch)).toEqual(['m-0', 'm-1']);
    expect((await settle(q, batch[1]!, 'complete')).status).toBe(204);
    // The reminder as a receive that met m-0 twice wrote it: two tokens for m-0, one of them never taken.
    const [reminder] = await reminders(q);
    const takes = Object.fromEntries(Object.entries(reminder!.takes as Record<string, number>).filter(([token]) => token === batch[0]!.lockToken));
    takes[newBatchLockToken(BigInt(batch[0]!.sequenceNumber as string), 2)] = 0;
    await deps.db.send(new PutCommand({ TableName: deps.tableName, Item: { ...reminder, takes } }));

    clock.advance(LOCK + 1);
    const res = await api('POST', `/queues/${q}/messages/receive`, { maxMessages: 10 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(idsOf(res.body.messages)).toEqual(['m-0']);
    expect(countsOf(res.body.messages)).toEqual([2]);
  });
});
