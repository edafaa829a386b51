/**
 * What the position and lease tests (lib/store/positions.ts, lib/store/leases.ts) share: a table
 * and ManualClock of their own per file (workers keep modules between files, so nothing here is
 * module state), a fresh positioned partition per test, and a send as the store makes one: draw
 * the positions, then put the messages at them.
 */
import { positionedPk } from '../../lib/store/keys.js';
import { drawPositions, putAtPositions, type PositionStore } from '../../lib/store/positions.js';
import { ManualClock, testDeps } from './table.js';

export type Deps = Awaited<ReturnType<typeof testDeps>>;

/** A file's partitions; `open` (in its beforeAll) makes the table the rest use. */
export function positionedPartitions() {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));
  let partitions = 0;

  const open = (prefix: string): Promise<Deps> => testDeps(clock, prefix);
  /** A partition no other test of the file has written to. */
  const newPartition = () => positionedPk(`e${++partitions}`, 'active', 0);

  return { clock, open, newPartition };
}

/** Sends one request of `bodies` (each a string) through `ctx`: the positions drawn, and what the puts at them came to. */
export async function sendAtPositions(ctx: PositionStore, pk: string, bodies: string[]) {
  const draw = await drawPositions(ctx, pk, bodies.length);
  return {
    draw,
    outcome: await putAtPositions(
      ctx,
      pk,
      draw,
      bodies.map((b) => ({ b })),
    ),
  };
}
