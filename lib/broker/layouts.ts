/**
 * Which message layout an entity uses (`EntityItem.layout`). The positioned layout
 * (store/positions.ts, store/leases.ts) is being built a step at a time behind the
 * deployment's switch (`Deps.newEntityLayout`); until sessions are positioned partitions
 * (design.md, "The order of the work", step 5) only queues and topics' subscriptions without
 * sessions take it. A subscription's copies are drawn onto its positions by a topic send's
 * fan-out (deliver.ts, positioned-send.ts `writeWithPositions`); a topic itself stores no
 * messages, so its layout stays today's.
 */
import type { EntityItem } from '../store/entities.js';
import type { Removal } from '../store/positions.js';

/** Whether a new entity may take the positioned layout. */
export const positionsCanCarry = (entity: Pick<EntityItem, 'kind' | 'requiresSession'>) =>
  (entity.kind === 'queue' || entity.kind === 'subscription') && !entity.requiresSession;

/** Whether an entity's messages sit at counter positions, taken by cursor and leases. */
export const isPositioned = (entity: Pick<EntityItem, 'layout'>) => entity.layout === 'positions';

/** Whether a positioned entity's heads are taken by ticket (store/tickets.ts) rather than by cursor claim. */
export const isTicketed = (entity: Pick<EntityItem, 'layout' | 'ticketed'>) => entity.layout === 'positions' && entity.ticketed === true;

/**
 * How a message leaves its position in `entity`: a ticketed entity's leaves its `done` marker
 * (store/tickets.ts header: an empty position there must mean "never put"), whoever took it.
 */
export const removalFor = (entity: Pick<EntityItem, 'layout' | 'ticketed'>): Removal => (isTicketed(entity) ? 'marker' : 'delete');
