import { refFromPathKey } from '../entities/paths.js';
import { sharedPromise } from '../single-flight.js';
import type { BrokerContext } from './context.js';
import { findEntity, type EntityItem } from './entities.js';

/**
 * The live entity a message belongs to, or undefined when the message is an orphan of a
 * deleted incarnation (E4). Cached for one job run.
 */
export function entityResolver(ctx: BrokerContext) {
  const cache = new Map<string, Promise<EntityItem | undefined>>();
  return (path: string, eid: string): Promise<EntityItem | undefined> => {
    const found = sharedPromise(
      cache,
      path,
      () => {
        const ref = refFromPathKey(path);
        return ref ? findEntity(ctx, ref, true) : Promise.resolve(undefined);
      },
      'always',
    );
    return found.then((e) => (e && e.eid === eid ? e : undefined));
  };
}
