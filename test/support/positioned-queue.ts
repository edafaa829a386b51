/**
 * Messages put into a positioned queue as its send puts them (lib/broker/positioned-send.ts),
 * seeded through the store so the receive tests do not depend on the send: today's message item
 * (`buildMessageItem`), stored as `storedMessage` stores it, without the `ready` index's
 * attributes (`rpk`, `rsk`), at positions drawn for the request (`drawPositions`,
 * `putAtPositions`), its partition marked first where the entity keeps ready marks.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { brokerContext } from '../../lib/broker/context.js';
import { buildMessageItem } from '../../lib/broker/message-items.js';
import { markReady, noteEntity } from '../../lib/broker/ready-marks.js';
import type { Deps } from '../../lib/deps.js';
import { entityKey, padPosition, positionedPk } from '../../lib/store/keys.js';
import { getEntity, type EntityItem } from '../../lib/store/entities.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import { drawPositions, putAtPositions, type Draw, type PositionedItem, type PutOutcome } from '../../lib/store/positions.js';
import { positionedSeq } from '../../lib/store/sequence.js';
import type { MessageInput } from '../../lib/messages/schema.js';
import { inputOf } from './faults.js';

/** The queue's entity item, read consistently. */
export async function queueEntity(deps: Deps, name: string): Promise<EntityItem> {
  const entity = await getEntity(deps, entityKey('queue', name), true);
  if (!entity) throw new Error(`no queue ${name}`);
  return entity;
}

/**
 * Sends one request of `messages` into partition `partition` of the queue's active subqueue,
 * as a positioned send would: its sequence numbers are its positions'.
 */
export async function sendPositioned(
  deps: Deps,
  entity: EntityItem,
  messages: MessageInput[],
  partition = 0,
): Promise<{ draw: Draw; outcome: PutOutcome; sequenceNumbers: string[] }> {
  const ctx = brokerContext(deps);
  const pk = positionedPk(entity.eid, 'active', partition);
  noteEntity(entity);
  await markReady(ctx, [{ eid: entity.eid, subqueue: 'active', partition }]);
  const draw = await drawPositions(ctx, pk, messages.length);
  const sequenceNumbers: string[] = [];
  const payloads = messages.map((m, i) => {
    const built = buildMessageItem(ctx, entity, m);
    const seq = positionedSeq(draw.first + i, partition).toString();
    sequenceNumbers.push(seq);
    const item = { ...built, pk, sk: padPosition(draw.first + i), seq, partition };
    const { rpk: _rpk, rsk: _rsk, ...rest } = storedMessage(item);
    return rest;
  });
  return { draw, outcome: await putAtPositions(ctx, pk, draw, payloads), sequenceNumbers };
}

/** `n` JSON messages with bodies `{ n: <prefix><i> }`. */
export const jsonMessages = (prefix: string, n: number): MessageInput[] =>
  Array.from({ length: n }, (_, i) => ({ body: { n: `${prefix}${i}` } }) as MessageInput);

/** A positioned partition's message items (not tombstones or `done` markers), read consistently. */
export async function messagesLeft(deps: Deps, pk: string): Promise<PositionedItem[]> {
  const out = await deps.db.send(
    new QueryCommand({ TableName: deps.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ConsistentRead: true }),
  );
  // Tombstones and a ticketed partition's `done` markers (kept a day, store/tickets.ts) are no messages.
  return ((out.Items ?? []) as PositionedItem[]).filter((i) => !i.tomb && !(i as { done?: number }).done);
}

/** `deps` with every DynamoDB call recorded as its command and its key's first segment (`pos`, `lease`, `cursor`...). */
export function recordingCalls<D extends Deps>(deps: D): { calls: string[]; store: D } {
  const calls: string[] = [];
  const db = new Proxy(deps.db, {
    get(target, prop) {
      if (prop === 'send')
        return (command: unknown) => {
          const input = inputOf(command);
          calls.push(
            `${(command as object).constructor.name} ${String(input.Key?.pk ?? input.Item?.pk ?? input.ExpressionAttributeValues?.[':pk'] ?? '').split('/')[0]}`,
          );
          return target.send(command as never);
        };
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { calls, store: { ...deps, db } };
}
