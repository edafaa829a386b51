import type { EntityRef } from '../entities/paths.js';
import type { BrokerContext } from './context.js';
import { findEntity, type EntityItem } from './entities.js';

/** `queues/orders` or `topics/t/subscriptions/s` (as stored on messages) back to a reference. */
export function refFromPathKey(path: string): EntityRef | undefined {
  const parts = path.split('/');
  if (parts.length === 2 && parts[0] === 'queues') return { kind: 'queue', name: parts[1]! };
  if (parts.length === 2 && parts[0] === 'topics') return { kind: 'topic', name: parts[1]! };
  if (parts.length === 4 && parts[0] === 'topics' && parts[2] === 'subscriptions') return { kind: 'subscription', topic: parts[1]!, name: parts[3]! };
  return undefined;
}

/**
 * The live entity a message belongs to, or undefined when the message is an orphan of a
 * deleted incarnation (E4). Cached for one job run.
 */
export function entityResolver(ctx: BrokerContext) {
  const cache = new Map<string, Promise<EntityItem | undefined>>();
  return (path: string, eid: string): Promise<EntityItem | undefined> => {
    let found = cache.get(path);
    if (!found) {
      const ref = refFromPathKey(path);
      found = ref ? findEntity(ctx, ref, true) : Promise.resolve(undefined);
      cache.set(path, found);
    }
    return found.then((e) => (e && e.eid === eid ? e : undefined));
  };
}
