/**
 * How fast a sweeper run clears an expiry backlog. 10,000 messages that expire into
 * the dead-letter subqueue, all due at once; the sweeper runs as Lambda would run it, with
 * a 50-second invocation's remaining time, until a run reports that nothing is left. The
 * figure is expirations per second of sweeper time (against DynamoDB Local on this machine:
 * a floor, not AWS's speed).
 */
import { createEnv } from '../harness.js';
import { sendBatch } from './operations.js';

export interface SweeperResult {
  backlog: number;
  expired: number;
  runs: number;
  seconds: number;
  expirationsPerSecond: number;
  setupS: number;
}

const lambdaTimeoutMs = 50_000;

export async function runSweeper(endpoint: string, rootKey: string, backlog = 10_000, log: (line: string) => void = () => {}): Promise<SweeperResult> {
  // Today's layout, named: the figure is the rate of the sweeper's pass over today's due
  // expiries (`msg/` items), run to a report of nothing left; a ticketed queue's expired heads
  // are met by receives and by the sweeper's quarter-hourly positioned pass (T7), not measured here.
  const env = await createEnv({ name: 'sweeper', endpoint, tableName: 'bench_sweeper', rootKey, newEntityLayout: 'index' });
  try {
    const setupStarted = performance.now();
    const q = 'expiring';
    await env.api('PUT', `/queues/${q}`, { deadLetteringOnMessageExpiration: true, defaultMessageTimeToLive: 'PT1M' }, 201);
    for (let n = 0; n < backlog; n += 100) await sendBatch(env, q, Math.min(100, backlog - n));
    env.clock.advance(2 * 60_000);
    const setupS = (performance.now() - setupStarted) / 1000;
    log(`sweeper: ${backlog} messages expired in ${setupS.toFixed(0)}s of setup; sweeping`);

    let expired = 0;
    let runs = 0;
    let ms = 0;
    for (;;) {
      const started = performance.now();
      const context = { getRemainingTimeInMillis: () => lambdaTimeoutMs - (performance.now() - started) };
      const report = await env.sweeper({}, context);
      ms += performance.now() - started;
      runs++;
      expired += Number(report.expired ?? 0);
      log(`sweeper run ${runs}: ${String(report.expired)} expired, complete: ${String(report.complete)}`);
      if (report.complete === true) break;
      if (runs > 50) throw new Error('sweeper: still not done after 50 runs');
    }
    if (expired !== backlog) throw new Error(`sweeper: expired ${expired} of ${backlog}`);
    const seconds = ms / 1000;
    return { backlog, expired, runs, seconds, expirationsPerSecond: expired / seconds, setupS };
  } finally {
    env.destroy();
  }
}

// `npx tsx bench/scenarios/sweeper.ts [count]`: this scenario alone, on a DynamoDB Local of its own.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { startDynamoDbLocal } = await import('../../infra/local/dynamodb-local.js');
  const { randomBytes } = await import('node:crypto');
  const dynamo = await startDynamoDbLocal();
  try {
    const result = await runSweeper(dynamo.endpoint, randomBytes(32).toString('base64'), Number(process.argv[2] ?? 10_000), (l) => console.error(l));
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await dynamo.stop();
  }
}
