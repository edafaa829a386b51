/**
 * H1 for a positioned queue: a waiting consumer is woken by the put of a positioned message
 * as by a `ready` entry's, and by its abandon (R4). The notify function's event filter lets the
 * put's insert and the abandon's change through (not a tombstone's, nor a lapse's take-back, which
 * the sweeper's minute hints: positioned-lapse-hints.test.ts), and `availableIn` names the queue. The
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
  it("H1: a positioned message's put and its abandon (R4) wake its queue's watchers; a tombstone, a take-back or a removal does not; the stream consumer sees none", async () => {
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
    // A lapse's take-back marks the lock it ends (`gl`): its hint is the sweeper's, at the lapse.
    const takenBack = modifyRecord(message!, { ...message!, g: 1, gl: 7 } as never, { at });
    expect(passesFilters(hintFilterPatterns, takenBack)).toBe(false);
    // R4: an abandon raises `g` with no `gl` (lease-settlements.ts `abandonAtPositions`): receivable at once, so it hints.
    const abandoned = modifyRecord(message!, { ...message!, g: 1 } as never, { at });
    expect(passesFilters(hintFilterPatterns, abandoned)).toBe(true);
    expect(availableIn([abandoned], at)).toEqual(new Map([[`queues/${q}`, eid]]));
    // A change that leaves `g` (R3's `ug` mark) names nothing, even past the filter.
    const marked = modifyRecord({ ...message!, g: 1 } as never, { ...message!, g: 1, ug: 1 } as never, { at });
    expect(availableIn([marked], at).size).toBe(0);
    expect(passesFilters(hintFilterPatterns, userRemoveRecord(message!, { at }))).toBe(false);
    expect(passesFilters(streamFilterPatterns, put)).toBe(false);
  });
});
