/**
 * What the session tests share: a table and ManualClock of their own per file (workers keep
 * modules between files, so nothing here is module state), with the API client and the broker
 * (test/support/broker.ts) the file drives over them, and the receive target of a queue.
 */
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { apiClient } from './api.js';
import { createBroker, type Broker } from './broker.js';
import { ManualClock, testDeps, type TestTableOptions } from './table.js';

export type Deps = Awaited<ReturnType<typeof testDeps>>;
export type Api = ReturnType<typeof apiClient>;

/** A file's session world; `open` (in its beforeAll) makes the table, the client and the broker the rest use. */
export function sessionQueues() {
  const clock = new ManualClock(Date.UTC(2030, 0, 1, 12, 0, 0));

  async function open(prefix: string, table?: TestTableOptions): Promise<{ deps: Deps; api: Api; broker: Broker }> {
    const deps = await testDeps(clock, prefix, undefined, table);
    return { deps, api: apiClient(deps), broker: createBroker(deps) };
  }

  const queue = (name: string, subqueue: ReceiveTarget['subqueue'] = 'active'): ReceiveTarget => ({ kind: 'queue', name, subqueue });

  return { clock, open, queue };
}
