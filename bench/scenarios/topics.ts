/**
 * Topic fan-out (issue 4): what one send costs on a topic with 20 subscriptions, each with
 * its own SQL filter, and how long a send to a topic with 100 subscriptions takes against
 * API Gateway's 30-second limit.
 */
import type { NewEntityLayout } from '../../lib/deps.js';
import { createEnv, KB_BODY, median, type OpResult } from '../harness.js';
import { measureOp } from './measure.js';

export interface TopicsResult {
  ops: { topicSend20: OpResult; topicSend20Filtered: OpResult };
  copies20: number;
  send100: { subscriptions: number; copies: number; medianMs: number; maxMs: number };
}

async function topicWith(env: Awaited<ReturnType<typeof createEnv>>, name: string, subscriptions: number): Promise<void> {
  await env.api('PUT', `/topics/${name}`, {}, 201);
  for (let i = 0; i < subscriptions; i++) {
    await env.api('PUT', `/topics/${name}/subscriptions/s${i}`, {}, 201);
    await env.api('DELETE', `/topics/${name}/subscriptions/s${i}/rules/$Default`, undefined, 204);
    // A filter on each: region i, or anything urgent.
    await env.api('PUT', `/topics/${name}/subscriptions/s${i}/rules/r`, { filter: { sql: `region = 'r${i}' OR priority > 5` } }, 201);
  }
}

/**
 * Without `newEntityLayout`, the subscriptions get the default layout (ticketed positions), as on
 * a default deploy: each copy is drawn onto its subscription's positions. `newEntityLayout:
 * 'index'` or 'positions' (bench/focus.ts `topic-positioned`): the same sends onto subscriptions
 * of today's layout or of the cursor-claimed positioned one.
 */
export async function runTopics(endpoint: string, rootKey: string, options: { newEntityLayout?: NewEntityLayout } = {}): Promise<TopicsResult> {
  const layout = options.newEntityLayout;
  const env = await createEnv({
    name: layout ? `topics-${layout}` : 'topics',
    endpoint,
    tableName: layout === 'positions' ? 'bench_topics_positioned' : layout ? `bench_topics_${layout}` : 'bench_topics',
    rootKey,
    ...(options.newEntityLayout ? { newEntityLayout: options.newEntityLayout } : {}),
  });
  try {
    await topicWith(env, 't20', 20);
    let copies20 = 0;
    const topicSend20 = await measureOp(env, { reps: 5, note: '20 subscriptions, every filter matches: 20 copies in one transaction' }, async () => {
      const reply = await env.api('POST', '/topics/t20/messages', { body: KB_BODY, applicationProperties: { priority: 9 } }, 201);
      copies20 = (reply.body as { subscriptions: string[] }).subscriptions.length;
    });
    const topicSend20Filtered = await measureOp(env, { reps: 5, note: '20 subscriptions, one filter matches: 1 copy' }, async () => {
      await env.api('POST', '/topics/t20/messages', { body: KB_BODY, applicationProperties: { region: 'r3', priority: 1 } }, 201);
    });

    await topicWith(env, 't100', 100);
    const times: number[] = [];
    let copies = 0;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const reply = await env.api('POST', '/topics/t100/messages', { body: KB_BODY, applicationProperties: { priority: 9 } }, 201);
      times.push(performance.now() - started);
      copies = (reply.body as { subscriptions: string[] }).subscriptions.length;
    }
    return {
      ops: { topicSend20, topicSend20Filtered },
      copies20,
      send100: { subscriptions: 100, copies, medianMs: median(times), maxMs: Math.max(...times) },
    };
  } finally {
    // the env's table is dropped with the runtime's DynamoDB Local
  }
}
