/**
 * H1 for a positioned queue: a waiting consumer is woken by the put of a positioned message
 * as by a `ready` entry's. The notify function's event filter lets the put's insert through
 * (and not a tombstone's, nor a later change), and `availableIn` names the queue for it. The
 * records are made from the items a real send stored on DynamoDB Local.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { passesFilters } from '../../infra/local/event-filter.js';
import { availableIn } from '../../lib/notifications/hints.js';
import { positionedPk } from '../../lib/store/keys.js';
import { putTombstone } from '../../lib/store/positions.js';
import { hintFilterPatterns, streamFilterPatterns } from '../../lib/store/stream-filter.js';
import type { StoredMessageItem } from '../../lib/store/message-layout.js';
import { insertRecord, modifyRecord, userRemoveRecord } from '../support/stream.js';
import { eidOf, positionedIn, positionedWorld, type Api, type PositionedDeps } from '../support/positioned-queues.js';

const world = positionedWorld('poshints');
let deps: PositionedDeps;
let api: Api;

beforeAll(async () => {
  ({ deps, api } = await world.open());
});

describe('H1: hints for a positioned queue', () => {
  it("H1: a positioned message's put wakes its queue's watchers; a tombstone, a change or a removal does not; the stream consumer sees none", async () => {
    const q = await world.newQueue();
    const eid = await eidOf(deps, q);
    expect((await api('POST', `/queues/${q}/messages`, { body: 1, messageId: 'm' })).status).toBe(201);
    await putTombstone(deps, positionedPk(eid, 'active', 0), 2);
    const [message, tombstone] = (await positionedIn(deps, eid)) as unknown as StoredMessageItem[];
    const at = world.clock.now();
    const put = insertRecord(message!, { at });
    expect(passesFilters(hintFilterPatterns, put)).toBe(true);
    expect(availableIn([put], at)).toEqual(new Map([[`queues/${q}`, eid]]));
    const buried = insertRecord(tombstone!, { at });
    expect(passesFilters(hintFilterPatterns, buried)).toBe(false);
    expect(availableIn([buried], at).size).toBe(0);
    const changed = modifyRecord(message!, { ...message!, g: 1 } as never, { at });
    expect(passesFilters(hintFilterPatterns, changed)).toBe(false);
    expect(passesFilters(hintFilterPatterns, userRemoveRecord(message!, { at }))).toBe(false);
    expect(passesFilters(streamFilterPatterns, put)).toBe(false);
  });
});
