/**
 * What of an error may go to a log (A4): its name, message, stack and cause chain, and the
 * SDK's request metadata. Not the other attributes an SDK error carries: a
 * ConditionalCheckFailedException's `Item` or a cancellation reason's `Item` is a whole
 * stored item, and in the key partition that item holds the keys.
 */
export function loggableError(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(`non-error thrown: ${typeof error}`);
  const safe = new Error(error.message, error.cause === undefined ? {} : { cause: loggableError(error.cause) });
  safe.name = error.name;
  if (error.stack !== undefined) safe.stack = error.stack;
  const metadata = (error as { $metadata?: { httpStatusCode?: number; requestId?: string } }).$metadata;
  if (metadata) Object.assign(safe, { $metadata: { httpStatusCode: metadata.httpStatusCode, requestId: metadata.requestId } });
  return safe;
}
