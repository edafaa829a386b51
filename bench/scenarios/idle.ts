/**
 * Part of scenario 5: what the every-minute jobs cost when there is nothing to do. Each runs
 * on an empty table (from lib/store/table.ts) with the metered client, once to warm up and
 * then a few times measured: DynamoDB calls and units per run, and handler time per run.
 */
import { createEnv, offThePositionedPass, type OpResult } from '../harness.js';
import { measureOp } from './measure.js';
import { createSweeperHandler } from '../../functions/sweeper/handler.js';

export interface IdleResult {
  sweeper: OpResult;
  reaper: OpResult;
}

export async function runIdle(endpoint: string, rootKey: string): Promise<IdleResult> {
  // The default layout (the deployment as shipped): the table is empty, so no layout's items are
  // read, but the jobs run as a default deploy configures them (its positioned pass included).
  const env = await createEnv({ name: 'idle', endpoint, tableName: 'bench_idle', rootKey });
  // As deployed: with the WebSocket API, each run also checks watched entities for lapsed locks.
  const sweeperJob = createSweeperHandler(env.deps, { poster: { post: async () => true } });
  try {
    // Warm: a new table is slow in DynamoDB Local for a while, and the job code needs JIT.
    for (let i = 0; i < 10; i++) {
      await sweeperJob();
      await env.reaper();
    }
    const sweeper = await measureOp(
      env,
      { reps: 10, note: 'one run on an empty table', prepare: async () => offThePositionedPass(env.clock) },
      async () => void (await sweeperJob()),
    );
    const reaper = await measureOp(env, { reps: 10, note: 'one run on an empty table' }, async () => void (await env.reaper()));
    return { sweeper, reaper };
  } finally {
    env.destroy();
  }
}
