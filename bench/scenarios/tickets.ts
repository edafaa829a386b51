/**
 * Tickets against the cursor claim (lib/store/tickets.ts, leases.ts `claim`; store level, not
 * behind the API): 16 concurrent receivers of one message each drain one positioned partition
 * prefilled with the 1 KB JSON event (bench/payloads.ts, stored as positions.ts's scenario stores
 * it) in send requests of 10, so requests span tickets. Each receiver takes, reads and completes
 * until the partition is empty:
 *
 * - tickets: `takeTicket` of one (carrying the removal of its previous ticket's entry, settled),
 *   `readTicket`, `completeTicketed`;
 * - claim: `claim` of one, `completeAtPosition`.
 *
 * Reported for each: messages a second, failed conditional writes per message (a ticket's fail
 * only on the empty head: one a receiver at the end; a claim's are cursor writes lost to another
 * receiver), DynamoDB calls and billed units per message, and DynamoDB Local's mean call latency
 * during the run (the rates scale with it; the machine is shared, so they are rough).
 */
import type { BenchEnv } from '../harness.js';
import { createEnv } from '../harness.js';
import { positionedPk } from '../../lib/store/keys.js';
import { drawPositions, putAtPositions } from '../../lib/store/positions.js';
import { claim, completeAtPosition } from '../../lib/store/leases.js';
import { completeTicketed, markTicketed, readTicket, takeTicket } from '../../lib/store/tickets.js';
import { storedEvents } from './positions.js';

const RECEIVERS = 16;
const MESSAGES = 800;
const LOCK_MS = 60_000;

export interface DrainRate {
  receivers: number;
  messages: number;
  seconds: number;
  messagesPerSecond: number;
  failedConditionalWritesPerMessage: number;
  callsPerMessage: number;
  writeUnitsPerMessage: number;
  readUnitsPerMessage: number;
  /** Mean latency of one DynamoDB Local call during the run, ms. */
  meanCallMs: number;
  /** Calls per message by operation. */
  callKinds: Record<string, number>;
}

export interface TicketsResult {
  tickets: DrainRate;
  claim: DrainRate;
}

async function prefill(env: BenchEnv, pk: string, payload: Record<string, unknown>) {
  env.meter.paused = true;
  for (let i = 0; i < MESSAGES; i += 10) {
    const draw = await drawPositions(env.deps, pk, 10);
    if (
      (await putAtPositions(
        env.deps,
        pk,
        draw,
        Array.from({ length: 10 }, () => payload),
      )) !== 'written'
    )
      throw new Error('tickets: a put failed');
  }
  env.meter.paused = false;
}

async function drain(env: BenchEnv, receiver: () => Promise<number>): Promise<DrainRate> {
  let messages = 0;
  const started = performance.now();
  const window = await env.meter.measure(() =>
    Promise.all(
      Array.from({ length: RECEIVERS }, async () => {
        const took = await receiver();
        messages += took;
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const t = window.tally;
  const callKinds: Record<string, number> = {};
  for (const c of t.calls) callKinds[c.type] = (callKinds[c.type] ?? 0) + 1 / messages;
  return {
    receivers: RECEIVERS,
    messages,
    seconds,
    messagesPerSecond: messages / seconds,
    failedConditionalWritesPerMessage: t.calls.filter((c) => !c.ok && c.kind === 'write').length / messages,
    callsPerMessage: t.requests / messages,
    writeUnitsPerMessage: t.writeUnits / messages,
    readUnitsPerMessage: t.readUnits / messages,
    meanCallMs: t.calls.reduce((a, c) => a + c.ms, 0) / t.calls.length,
    callKinds,
  };
}

export async function runTickets(endpoint: string, rootKey: string, log: (line: string) => void): Promise<TicketsResult> {
  const env = await createEnv({ name: 'tickets', endpoint, tableName: 'bench_tickets', rootKey });
  try {
    const { payloads } = await storedEvents(env, 10);
    const payload = payloads[0]!;

    const ticketed = positionedPk('bench', 'active', 0);
    await markTicketed(env.deps, ticketed);
    await prefill(env, ticketed, payload);
    log(`tickets: ${RECEIVERS} receivers of one message by ticket`);
    const tickets = await drain(env, async () => {
      let taken = 0;
      let settled: number[] = [];
      for (;;) {
        const take = await takeTicket(env.deps, ticketed, 1, { lockMs: LOCK_MS, prune: settled });
        if (!take.ticket) return taken;
        const read = await readTicket(env.deps, ticketed, take.ticket);
        const done = await Promise.all(read.messages.map((m) => completeTicketed(env.deps, ticketed, m.token)));
        if (done.some((d) => d !== 'completed') || read.messages.length !== 1) throw new Error('tickets: a ticket did not hand out its message');
        taken += read.messages.length;
        settled = [take.ticket.id];
      }
    });

    const claimed = positionedPk('bench', 'active', 1);
    await prefill(env, claimed, payload);
    log(`tickets: ${RECEIVERS} receivers of one message by cursor claim`);
    const cursor = await drain(env, async () => {
      let taken = 0;
      for (;;) {
        const got = await claim(env.deps, claimed, 1, { lockMs: LOCK_MS, attempts: 1_000 });
        if (got.messages.length === 0) return taken;
        await Promise.all(got.messages.map((m) => completeAtPosition(env.deps, claimed, m.token)));
        taken += got.messages.length;
      }
    });
    return { tickets, claim: cursor };
  } finally {
    env.destroy();
  }
}
