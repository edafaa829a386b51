/** Shared by the scenarios: run an operation a few times under the meter and fold the figures. */
import { perMessage, summarizeCalls, tallyOf, type CallRecord } from '../capacity.js';
import { median, type BenchEnv, type OpResult } from '../harness.js';

export interface MeasureSpec {
  /** Repetitions; the figures are averaged over all of them. */
  reps: number;
  /** Messages one repetition handles (figures are per message). */
  perMessages?: number;
  /** HTTP requests (API handler calls, or job runs) one repetition makes. */
  requestsPerRep?: number;
  /** Unmeasured preparation before each repetition. */
  prepare?: (rep: number) => Promise<void>;
  note?: string;
}

export async function measureOp(env: BenchEnv, spec: MeasureSpec, run: (rep: number) => Promise<void>): Promise<OpResult> {
  const perMessages = spec.perMessages ?? 1;
  const requestsPerRep = spec.requestsPerRep ?? 1;
  const all: CallRecord[] = [];
  const repTotals: OpResult['repTotals'] = [];
  const repMs: number[] = [];
  let first: CallRecord[] | undefined;
  for (let rep = 0; rep < spec.reps; rep++) {
    if (spec.prepare) await spec.prepare(rep);
    const { tally, ms } = await env.meter.measure(() => run(rep));
    all.push(...tally.calls);
    first ??= tally.calls;
    repTotals.push({ readUnits: tally.readUnits / perMessages, writeUnits: tally.writeUnits / perMessages });
    repMs.push(ms / requestsPerRep);
  }
  return {
    perMessages,
    reps: spec.reps,
    tally: perMessage(tallyOf(all), spec.reps * perMessages),
    repTotals,
    handlerMs: median(repMs),
    httpRequests: requestsPerRep / perMessages,
    calls: summarizeCalls(first ?? []),
    ...(spec.note ? { note: spec.note } : {}),
  };
}

export { itemBytes } from '../capacity.js';
