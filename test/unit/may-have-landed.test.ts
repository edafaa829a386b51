/**
 * Which failed writes may still have been applied (lib/store/outcomes.ts `mayHaveLanded`): the
 * writer reads its key back after those (S1, S4) and after no other. Nor is such a write "busy,
 * nothing written" (`isStoreBusy`) for what its last attempt met, and a condition refused after
 * throttling alone is another writer's doing, never the write's own (`refusedItsOwnDelete`).
 */
import { describe, expect, it } from 'vitest';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { HttpResponse } from '@smithy/core/transport';
import { documentClient, dynamoDbClient } from '../../lib/deps.js';
import { isStoreBusy, mayHaveLanded, refusedItsOwnDelete } from '../../lib/store/outcomes.js';

const sdkError = (name: string, httpStatusCode: number | undefined, attempts: number) =>
  Object.assign(new Error(name), { name, $metadata: { ...(httpStatusCode === undefined ? {} : { httpStatusCode }), attempts } });

/**
 * The error a real client's put throws when its attempts answer `answers` in turn (each a
 * DynamoDB error name: InternalServerError as a 500, the others as a 400), through the SDK's own
 * retry loop (no wait between attempts) and the middleware every handler's client has, with a
 * request handler that answers for the network.
 */
async function finalError(answers: string[]): Promise<unknown> {
  let attempt = 0;
  const client = dynamoDbClient({
    region: 'us-east-1',
    endpoint: 'http://localhost:1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    retryStrategy: new ConfiguredRetryStrategy(answers.length, 0),
    requestHandler: {
      handle: async () => {
        const name = answers[attempt++]!;
        const body = new TextEncoder().encode(JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${name}`, message: name }));
        return {
          response: new HttpResponse({
            statusCode: name === 'InternalServerError' ? 500 : 400,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body,
          }),
        };
      },
    },
  });
  return documentClient(client)
    .send(new PutCommand({ TableName: 't', Item: { pk: 'p', sk: 's' } }))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
}

describe('mayHaveLanded', () => {
  it('S1, S4: a 500 or a dropped connection may have landed, at any attempt', () => {
    expect(mayHaveLanded(sdkError('InternalServerError', 500, 1))).toBe(true);
    expect(mayHaveLanded(sdkError('InternalServerError', 500, 3))).toBe(true);
    expect(mayHaveLanded(sdkError('TimeoutError', undefined, 3))).toBe(true);
  });

  it("S1, S4: DynamoDB's own refusal at every attempt did not; after a 500 at an earlier attempt it may have", async () => {
    expect(mayHaveLanded(sdkError('ProvisionedThroughputExceededException', 400, 1))).toBe(false);
    expect(mayHaveLanded(sdkError('ConditionalCheckFailedException', 400, 1))).toBe(false);
    expect(
      mayHaveLanded(
        await finalError(['ProvisionedThroughputExceededException', 'ProvisionedThroughputExceededException', 'ProvisionedThroughputExceededException']),
      ),
    ).toBe(false);
    expect(mayHaveLanded(await finalError(['InternalServerError', 'ProvisionedThroughputExceededException', 'ProvisionedThroughputExceededException']))).toBe(
      true,
    );
  });

  it("D3: a failure that did not come from the SDK is the process's own: no read follows it", () => {
    expect(mayHaveLanded(new Error('the process died'))).toBe(false);
    expect(mayHaveLanded(undefined)).toBe(false);
  });
});

describe('a refusal at the last attempt', () => {
  const throttled = 'ProvisionedThroughputExceededException';

  it('R5: a condition refused after throttling alone is not the write finding itself landed', async () => {
    expect(refusedItsOwnDelete(await finalError([throttled, throttled, 'ConditionalCheckFailedException']))).toBe(false);
    expect(refusedItsOwnDelete(await finalError(['InternalServerError', 'ConditionalCheckFailedException']))).toBe(true);
  });

  it('R4, R10: a conflict or a throttle after a 500 is not "busy, nothing written"', async () => {
    expect(isStoreBusy(await finalError(['TransactionConflictException']))).toBe(true);
    expect(isStoreBusy(await finalError([throttled, throttled, throttled]))).toBe(true);
    expect(isStoreBusy(await finalError(['InternalServerError', 'TransactionConflictException']))).toBe(false);
    expect(isStoreBusy(await finalError(['InternalServerError', throttled, throttled]))).toBe(false);
  });
});
