import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The positioned layout's rule tests again, on queues whose heads are taken by ticket
 * (`SLUICE_TEST_LAYOUT=tickets`, test/support/positioned-layout.ts; design.md, "A claim that
 * cannot lose"). Tests that pin the cursor claim's own calls are skipped there and have ticket
 * twins in the ticket-* files, which the main run covers.
 */
const report = process.env.SLUICE_TEST_REPORT;

// Not mergeConfig: it would add these files to the main run's `include`, not replace it.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/integration/positioned-queue.test.ts',
      'test/integration/positioned-subscription.test.ts',
      'test/integration/positioned-receive.test.ts',
      'test/integration/positioned-settle.test.ts',
      'test/integration/positioned-moves.test.ts',
      'test/integration/positioned-scheduled.test.ts',
      'test/integration/positioned-settled-leases.test.ts',
    ],
    env: { SLUICE_TEST_LAYOUT: 'tickets' },
    ...(report ? { outputFile: { json: report.replace(/\.json$/, '-tickets.json') } } : {}),
  },
});
