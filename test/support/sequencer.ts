/**
 * Test order for a run without vitest's timing cache (a fresh clone, as CI has): the files
 * that load DynamoDB Local hardest go first, while their worker's emulator is still small.
 * Run last, after every other file's tables have piled up in it, the 8-receiver drain took
 * over two minutes instead of 15-30 seconds. With a cache, vitest's own order (slowest
 * first) already does this; the rest keeps vitest's order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const heavyFirst = [
  'test/integration/sessions-concurrency.test.ts',
  'test/integration/queue-concurrency.test.ts',
  'test/local/notifications.test.ts',
  'test/client/subscribe.test.ts',
];

const rank = (spec: TestSpecification) => {
  const i = heavyFirst.findIndex((file) => spec.moduleId.endsWith(file));
  return i === -1 ? heavyFirst.length : i;
};

export default class HeavyFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
