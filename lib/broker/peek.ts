/** Peek (R8): messages from a sequence number on, read without locking them. */
import type { PeekQuery } from '../api/schemas.js';
import type { ReceiveTarget } from '../entities/paths.js';
import { presentMessage, type MessageItem, type ReceivedMessage } from '../messages/item.js';
import { messagePk, padSeq } from '../store/keys.js';
import { peekPage } from '../store/message-pages.js';
import { AnswerBudget } from './answer-budget.js';
import type { BrokerContext } from './context.js';
import { requireEntity, touchEntity } from './entities.js';
import { partitionCount } from './message-items.js';

/** R8: from a sequence number on, without locking; scheduled and deferred included with their state. */
export async function peek(ctx: BrokerContext, target: ReceiveTarget, q: PeekQuery): Promise<ReceivedMessage[]> {
  const entity = await requireEntity(ctx, target);
  await touchEntity(ctx, entity);
  const from = padSeq(q.fromSequenceNumber);
  const found: MessageItem[] = [];
  // A partition's page may end early (DynamoDB's 1 MB a Query): nothing past its last entry
  // is answered, or the next peek, from the last one answered on, would skip its rest.
  let readTo: string | undefined;
  for (let p = 0; p < partitionCount(entity, target); p++) {
    const { items, more } = await peekPage(ctx, messagePk(entity.eid, target.subqueue, p), from, q.maxMessages);
    found.push(...items);
    const last = items.at(-1)?.sk;
    if (more && last !== undefined && (readTo === undefined || last < readTo)) readTo = last;
  }
  found.sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
  const now = ctx.clock.now();
  // R10: no more than the answer can carry; the caller peeks on from the last one.
  const budget = new AnswerBudget();
  const answer: ReceivedMessage[] = [];
  for (const item of found.slice(0, q.maxMessages)) {
    if (readTo !== undefined && item.sk > readTo) break;
    const message = presentMessage(item, now);
    if (!budget.addIfFits(message)) break;
    answer.push(message);
  }
  return answer;
}

/** The operations the broker offers from here (index.ts binds them to its context). */
export const operations = { peek };
