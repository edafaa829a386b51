import { defineConfig } from 'vitest/config';
import HeavyFirstSequencer from './test/support/sequencer.js';

const report = process.env.SLUICE_TEST_REPORT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers than that only queue on DynamoDB Local.
    maxWorkers: 2,
    sequence: { sequencer: HeavyFirstSequencer },
    // CI asks for a JSON report too, to print the plain "N passed, N failed" line.
    reporters: report ? ['default', 'json'] : ['default'],
    ...(report ? { outputFile: { json: report } } : {}),
  },
});
