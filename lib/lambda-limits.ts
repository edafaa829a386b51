/**
 * Lambda's limits on a synchronous invocation, which every API request and answer passes
 * through on AWS. The event (the request as API Gateway's JSON: headers, request context, the
 * body escaped as a JSON string, or base64-encoded when it is not text) and the answer (the
 * handler's result as JSON) may each be 6 MiB; past that Lambda refuses and API Gateway
 * answers with an error of its own. One definition for the broker, the local runtime and the
 * tests' in-process API client, so what passes locally passes on AWS.
 */
export const LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024;

/**
 * The largest request body the API takes, counted as the event carries it (base64 bodies
 * encoded, so a third less of their bytes): about 5 MB leaves Lambda's event room for the
 * headers, the request context and escaping, so the broker answers `MessageSizeExceeded`
 * itself where Lambda would otherwise refuse the request with an answer of AWS's.
 */
export const MAX_REQUEST_BYTES = 5 * 1024 * 1024;

/** How much a payload (an event or a handler's answer) weighs to Lambda: its JSON text in bytes. */
export const payloadBytes = (payload: unknown): number => Buffer.byteLength(JSON.stringify(payload ?? null), 'utf8');

/**
 * API Gateway's HTTP API waits at most 30 s for its Lambda integration; past that it answers
 * 503 `{"message":"Service Unavailable"}` in its own words, whatever the function goes on to
 * do (it may still store a message). The api function's own timeout (29 s) and the longest wait
 * of a receive (20 s plus its work budget) stay below it.
 */
export const INTEGRATION_TIMEOUT_MS = 30_000;
