/**
 * Items by key: BatchGetItem, 100 keys a call, asking again for the keys DynamoDB leaves
 * unprocessed (throttling), each time after the shared backoff on the broker clock. A caller
 * that can act on part of the answer bounds the calls (`attempts`) and is told which keys
 * stayed unread: their state is unknown, not absent.
 */
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../deps.js';
import { backoff, UNPROCESSED_BACKOFF } from '../backoff.js';
import { keyId, type Key } from './keys.js';

/** The most keys one BatchGetItem may ask for. */
const KEYS_PER_CALL = 100;

export interface BatchGetOptions {
  /** Strongly consistent reads (a whole read unit a key instead of half). */
  consistent?: boolean;
  /** Calls per 100 keys before the keys still unprocessed are given up as unread; unbounded when absent. */
  attempts?: number;
}

/** The items of `keys` (each key read once, however often named) that exist, in no particular order, and the keys left unread (at most `attempts` calls each hundred). Errors throw. */
export async function batchGetItems<T>(
  deps: Pick<Deps, 'db' | 'tableName' | 'clock'>,
  keys: readonly Key[],
  options: BatchGetOptions = {},
): Promise<{ items: T[]; unread: Key[] }> {
  const items: T[] = [];
  const unread: Key[] = [];
  const attempts = options.attempts ?? Infinity;
  // BatchGetItem refuses a request that names a key twice (ValidationException), whoever repeated it.
  const distinct = [...new Map(keys.map((k) => [keyId(k), { pk: k.pk, sk: k.sk }])).values()];
  for (let i = 0; i < distinct.length; i += KEYS_PER_CALL) {
    let pending: Key[] = distinct.slice(i, i + KEYS_PER_CALL);
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt >= attempts) {
        unread.push(...pending);
        break;
      }
      if (attempt > 0) await backoff(deps.clock, attempt - 1, UNPROCESSED_BACKOFF);
      const request = { Keys: pending, ...(options.consistent ? { ConsistentRead: true } : {}) };
      const out = await deps.db.send(new BatchGetCommand({ RequestItems: { [deps.tableName]: request } }));
      items.push(...((out.Responses?.[deps.tableName] ?? []) as T[]));
      pending = (out.UnprocessedKeys?.[deps.tableName]?.Keys ?? []) as Key[];
    }
  }
  return { items, unread };
}
