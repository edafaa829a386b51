/**
 * The stream consumer's share of a message's cost (counts, E6): 100 messages go through
 * send, peek-lock and complete in batches of 10 on the runtime's table, then the runtime's
 * stream poller hands their records (insert, lock, removal) to the stream handler, which
 * runs on the metered client. Lambda would call it once per batch of up to 1,000 records.
 */
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { perMessage, summarizeCalls } from '../capacity.js';
import type { BenchEnv } from '../harness.js';
import { completeBatch, receiveExactly, sendBatch } from './operations.js';

export interface StreamResult {
  messages: number;
  records: number;
  /** Invocations with at least one message record (AWS's event filter drops the rest). */
  batches: number;
  /** Invocations the local poller made (it has no event filter). */
  localBatches: number;
  /** Stream handler invocations per message. */
  invocationsPerMessage: number;
  readUnits: number;
  writeUnits: number;
  requests: number;
  /** Handler time per invocation (batch), ms. */
  handlerMs: number;
  calls: string[];
  /**
   * Sparse traffic: the stream drained after every API call (send, lock, complete of one
   * message), as Lambda does with its default batching window of 0 when messages are rare.
   */
  sparse: { invocationsPerMessage: number; readUnits: number; writeUnits: number; calls: string[] };
}

/** Time spent inside the stream handler, kept by the wrapper main.ts gives the runtime. */
export interface HandlerTimer {
  ms: number;
  calls: number;
  /** Invocations whose batch held at least one message record. */
  messageCalls: number;
}

export async function runStream(runtime: LocalRuntime, env: BenchEnv, timer: HandlerTimer, messages = 100): Promise<StreamResult> {
  await runtime.runJob('streams');
  await env.api('PUT', '/queues/streamq', { lockDuration: 'PT5M' }, 201);
  await runtime.runJob('streams');
  // Sparse: each record on its own.
  const sparseMessages = 5;
  const sparseStart = timer.messageCalls;
  const sparse = await env.meter.measure(async () => {
    for (let n = 0; n < sparseMessages; n++) {
      const pause = async (step: () => Promise<unknown>) => {
        await suspended(env, step);
        await runtime.runJob('streams');
      };
      let got: { sequenceNumber: string; lockToken: string }[] = [];
      await pause(() => sendBatch(env, 'streamq', 1));
      await pause(async () => (got = await receiveExactly(env, 'streamq', 1)));
      await pause(() => completeBatch(env, 'streamq', got));
    }
    return timer.messageCalls - sparseStart;
  });
  const sparseTally = perMessage(sparse.tally, sparseMessages);

  // Busy: 100 messages' records read in one drain, batches of up to 1,000 records.
  for (let n = 0; n < messages; n += 10) {
    await sendBatch(env, 'streamq', 10);
    const got = await receiveExactly(env, 'streamq', 10);
    await completeBatch(env, 'streamq', got);
  }

  const before = { ...timer };
  const { result, tally } = await env.meter.measure(() => runtime.runJob('streams'));
  const handlerCalls = timer.messageCalls - before.messageCalls;
  // On AWS, event filtering invokes the consumer only for batches holding message records.
  const batches = handlerCalls;
  const records = Number(result.records ?? 0);
  const per = perMessage(tally, messages);
  return {
    messages,
    records,
    batches,
    invocationsPerMessage: batches / messages,
    readUnits: per.readUnits,
    writeUnits: per.writeUnits,
    requests: per.requests,
    handlerMs: handlerCalls > 0 ? (timer.ms - before.ms) / handlerCalls : 0,
    localBatches: Number(result.batches ?? 0),
    calls: summarizeCalls(tally.calls),
    sparse: {
      invocationsPerMessage: sparse.result / sparseMessages,
      readUnits: sparseTally.readUnits,
      writeUnits: sparseTally.writeUnits,
      calls: summarizeCalls(sparse.tally.calls),
    },
  };
}

/** Runs an API step outside the stream figures: its own DynamoDB calls are not the stream consumer's. */
async function suspended(env: BenchEnv, step: () => Promise<unknown>) {
  env.meter.paused = true;
  try {
    await step();
  } finally {
    env.meter.paused = false;
  }
}
