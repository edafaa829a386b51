import { defineConfig } from 'vitest/config';
import HeavyFirstSequencer from './test/support/sequencer.js';

const report = process.env.SLUICE_TEST_REPORT;
// The whole suite as a deployment whose new entities default to a positioned layout
// (test/support/default-layout.ts): the local runtime and the Lambda bundles read the
// deployment's own switch.
const defaultLayout = process.env.SLUICE_TEST_NEW_ENTITY_LAYOUT;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/fresh-emulator.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers than that only queue on DynamoDB Local.
    maxWorkers: 2,
    // Each file makes its own table (or runtime, or emulator) and names its own entities, and
    // the broker's in-process caches are keyed by table: a worker can keep the modules it has
    // loaded for the next file. Re-importing the AWS SDK and the broker for each of ~130 files
    // cost about 1.5 s of a worker's time per file.
    isolate: false,
    sequence: { sequencer: HeavyFirstSequencer },
    // CI asks for a JSON report too, to print the plain "N passed, N failed" line.
    reporters: report ? ['default', 'json'] : ['default'],
    ...(report ? { outputFile: { json: report } } : {}),
    ...(defaultLayout ? { env: { SLUICE_NEW_ENTITY_LAYOUT: defaultLayout } } : {}),
  },
});
