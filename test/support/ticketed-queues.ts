/**
 * What the API-level tests of ticketed queues share (design.md, "A claim that cannot lose"): a
 * ticketed queue of its own name, and a ledger of every hand-out and settlement that checks R1
 * as it goes. Nothing here is module state: workers keep modules between files.
 */
import { expect } from 'vitest';
import { positionedPk } from '../../lib/store/keys.js';
import { HOLE_AFTER_MS } from '../../lib/store/positions.js';
import { apiClient, type Json } from './api.js';
import { queueEntity } from './positioned-queue.js';
import type { ManualClock, testDeps } from './table.js';

/** A new queue `name` made ticketed by `deps` (whose switch says `tickets`), lock PT30S, and its partition 0. */
export async function newTicketedQueue(deps: Awaited<ReturnType<typeof testDeps>>, name: string, maxDeliveryCount = 100) {
  expect((await apiClient(deps)('PUT', `/queues/${name}`, { lockDuration: 'PT30S', maxDeliveryCount })).status).toBe(201);
  const entity = await queueEntity(deps, name);
  expect(entity.ticketed).toBe(true);
  return { name, entity, pk: positionedPk(entity.eid, 'active', 0) };
}

/** Every hand-out and settlement of a test. R1: never handed out while an earlier hand-out of it still holds its lock; each body completed once. */
export class TicketLedger {
  readonly lockedUntil = new Map<string, number>();
  readonly completed = new Map<string, number>();
  readonly order: string[] = [];
  constructor(
    readonly name: string,
    readonly api: ReturnType<typeof apiClient>,
    readonly clock: ManualClock,
    readonly lockMs: number,
  ) {}
  async receive(body: Record<string, unknown>, via = this.api): Promise<{ status: number; messages: Json[] }> {
    const res = await via('POST', `/queues/${this.name}/messages/receive`, { maxWaitTime: 'PT0S', ...body });
    const messages = (res.status === 200 ? res.body.messages : []) as Json[];
    const now = this.clock.now();
    for (const m of messages) {
      const held = this.lockedUntil.get(m.sequenceNumber) ?? -Infinity;
      expect(held <= now, `message ${m.sequenceNumber} handed out under two valid locks`).toBe(true);
      this.order.push(m.body.n);
      if (m.lockedUntil) this.lockedUntil.set(m.sequenceNumber, Date.parse(m.lockedUntil));
      else this.done(m);
    }
    return { status: res.status, messages };
  }
  /** `m` completed (or received and deleted): counted once more, its lock gone. */
  done(m: Json) {
    this.completed.set(m.body.n, (this.completed.get(m.body.n) ?? 0) + 1);
    this.lockedUntil.delete(m.sequenceNumber);
  }
  async settle(m: Json, how: 'complete' | 'abandon' | 'defer' | 'deadletter' | 'renew-lock', via = this.api) {
    const res = await via('POST', `/queues/${this.name}/messages/${m.sequenceNumber}/${how}`, { lockToken: m.lockToken });
    if (res.status === 204 || res.status === 200) {
      if (how === 'complete') this.done(m);
      else if (how !== 'renew-lock') this.lockedUntil.delete(m.sequenceNumber);
    }
    return res.status;
  }
  complete(m: Json, via = this.api) {
    return this.settle(m, 'complete', via);
  }
  /** Receives and completes until nothing is left, letting locks and holes lapse when a receive finds nothing. */
  async drain(rounds = 20) {
    let empty = 0;
    for (let round = 0; round < rounds; round++) {
      const { messages } = await this.receive({ maxMessages: 10 });
      for (const m of messages) expect(await this.complete(m)).toBe(204);
      if (messages.length > 0) empty = 0;
      else if (++empty > 2) return;
      else this.clock.advance(this.lockMs + HOLE_AFTER_MS);
    }
  }
}
