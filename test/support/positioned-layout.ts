/**
 * The switch value the positioned test files create their queues with: `positions` (cursor
 * claims), or `tickets` when `SLUICE_TEST_LAYOUT=tickets` asks, so the same files prove the
 * rules for both ways of taking a positioned partition's head (design.md, "A claim that cannot
 * lose").
 */
import type { EntityLayout } from '../../lib/deps.js';

export const positionedLayout: EntityLayout = process.env.SLUICE_TEST_LAYOUT === 'tickets' ? 'tickets' : 'positions';
