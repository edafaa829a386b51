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
 * What a payload weighs to Lambda (`payloadBytes`) when that is more than `limit`; undefined
 * when it is within. Every request and answer is checked, and nearly all are far below the
 * limit: a bound that costs no JSON text (each character of a string as its longest escape,
 * six bytes) answers for them; only a payload the bound cannot clear is written out and
 * measured, once.
 */
export function payloadBytesOver(payload: unknown, limit = LAMBDA_PAYLOAD_BYTES): number | undefined {
  if (jsonBytesBound(payload ?? null, limit) <= limit) return undefined;
  const bytes = payloadBytes(payload);
  return bytes > limit ? bytes : undefined;
}

/** At least the bytes of `value`'s JSON text, or Infinity once past `budget` or where unsure (a `toJSON`, a bigint). */
function jsonBytesBound(value: unknown, budget: number): number {
  switch (typeof value) {
    case 'string':
      return value.length * 6 + 2;
    case 'number':
      return 25;
    case 'boolean':
      return 5;
    case 'undefined':
    case 'function':
    case 'symbol':
      return 4;
    case 'object': {
      if (value === null) return 4;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return Infinity;
      let total = 2;
      if (Array.isArray(value)) {
        for (const item of value) {
          total += jsonBytesBound(item, budget - total) + 1;
          if (total > budget) return Infinity;
        }
        return total;
      }
      for (const key of Object.keys(value)) {
        total += key.length * 6 + 4 + jsonBytesBound((value as Record<string, unknown>)[key], budget - total);
        if (total > budget) return Infinity;
      }
      return total;
    }
    default:
      return Infinity;
  }
}

/**
 * API Gateway's HTTP API waits at most 30 s for its Lambda integration; past that it answers
 * 503 `{"message":"Service Unavailable"}` in its own words, whatever the function goes on to
 * do (it may still store a message). The api function's own timeout (29 s) and the longest wait
 * of a receive (20 s plus its work budget) stay below it.
 */
export const INTEGRATION_TIMEOUT_MS = 30_000;
