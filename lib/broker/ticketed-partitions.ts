/**
 * Which partitions this process knows to be ticketed. Every claimer of a ticketed entity's
 * partition (the receive, the sweeper's pass, bulk delete) marks it before its first claim there
 * (design.md, "A claim that cannot lose": per entity, set at creation), so no cursor with a
 * position is ever made for it. The mark is idempotent; remembering it saves its write after the
 * first, and losing the memory (a new Lambda instance, the bound below) only costs that write.
 */
import { markTicketed } from '../store/tickets.js';
import type { BrokerContext } from './context.js';

/** Partitions remembered at most before the oldest go. */
const MEMORY_LIMIT = 10_000;

const marked = new Set<string>();

/**
 * Makes sure `pk`'s head is taken by ticket only (`markTicketed`, once per process and
 * partition). False when a cursor claim owns the head already (a positioned partition claimed
 * before its mark): the caller claims by cursor, as for an entity that is not ticketed.
 */
export async function ensureTicketed(ctx: Pick<BrokerContext, 'db' | 'tableName' | 'clock'>, pk: string): Promise<boolean> {
  const key = `${ctx.tableName}|${pk}`;
  if (marked.has(key)) return true;
  const ok = await markTicketed(ctx, pk);
  if (ok) {
    marked.add(key);
    if (marked.size > MEMORY_LIMIT) marked.delete(marked.values().next().value!);
  }
  return ok;
}

/** Whether this process marked `pk` ticketed already, so a take there writes no mark first (ticket-ahead.ts). */
export const knownTicketed = (ctx: Pick<BrokerContext, 'tableName'>, pk: string): boolean => marked.has(`${ctx.tableName}|${pk}`);
