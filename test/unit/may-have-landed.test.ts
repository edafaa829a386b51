/**
 * Which failed writes may still have been applied (lib/store/outcomes.ts `mayHaveLanded`): the
 * writer reads its key back after those (S1, S4) and after no other.
 */
import { describe, expect, it } from 'vitest';
import { mayHaveLanded } from '../../lib/store/outcomes.js';

const sdkError = (name: string, httpStatusCode: number | undefined, attempts: number) =>
  Object.assign(new Error(name), { name, $metadata: { ...(httpStatusCode === undefined ? {} : { httpStatusCode }), attempts } });

describe('mayHaveLanded', () => {
  it('S1, S4: a 500 or a dropped connection may have landed, at any attempt', () => {
    expect(mayHaveLanded(sdkError('InternalServerError', 500, 1))).toBe(true);
    expect(mayHaveLanded(sdkError('InternalServerError', 500, 3))).toBe(true);
    expect(mayHaveLanded(sdkError('TimeoutError', undefined, 3))).toBe(true);
  });

  it("S1, S4: DynamoDB's own refusal at the first attempt did not; at a later attempt an earlier one may have", () => {
    expect(mayHaveLanded(sdkError('ProvisionedThroughputExceededException', 400, 1))).toBe(false);
    expect(mayHaveLanded(sdkError('ConditionalCheckFailedException', 400, 1))).toBe(false);
    expect(mayHaveLanded(sdkError('ProvisionedThroughputExceededException', 400, 3))).toBe(true);
  });

  it("D3: a failure that did not come from the SDK is the process's own: no read follows it", () => {
    expect(mayHaveLanded(new Error('the process died'))).toBe(false);
    expect(mayHaveLanded(undefined)).toBe(false);
  });
});
