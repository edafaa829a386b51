/** middy middlewares for the API: JSON bodies in, B1-shaped errors out. */
import type middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { BrokerError } from '../../lib/errors.js';
import { httpStatusOf } from '../../lib/api/errors.js';
import { type Grant } from '../../lib/auth/index.js';
import { authorize, type FindRule, type IsCurrent } from '../../lib/api/authorize.js';
import { decodeUtf8, parseJsonText } from '../../lib/json.js';
import { pathSegmentField } from '../../lib/entities/paths.js';
import { isStoreBusy } from '../../lib/store/outcomes.js';
import { MAX_REQUEST_BYTES } from '../../lib/lambda-limits.js';

/** `grant`: what the request's token may do, set by `sharedAccessSignature` for the router (B3). */
export type Event = APIGatewayProxyEventV2 & { parsedBody?: unknown; grant?: Grant };
type Request = middy.Request<Event, APIGatewayProxyStructuredResultV2, Error, Context>;

export const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' };

/** `{"error": {...}}`, every Sluice error answer (B1), the local runtime's own included. */
export function errorBody(code: string, message: string, retryable: boolean, requestId: string): string {
  return JSON.stringify({ error: { code, message, retryable, requestId } });
}

/** Parses the body as JSON; malformed, oversized or too deep bodies are refused before any work (B2). */
export function jsonBody(): middy.MiddlewareObj<Event, APIGatewayProxyStructuredResultV2> {
  return {
    before: (request: Request) => {
      const { event } = request;
      if (event.body === undefined || event.body === null || event.body === '') return;
      // Counted as the event carries it (base64 encoded), as Lambda counts it.
      if (Buffer.byteLength(event.body) > MAX_REQUEST_BYTES) {
        const as = event.isBase64Encoded ? ' (base64-encoded, as a body that is not text arrives)' : '';
        throw new BrokerError('MessageSizeExceeded', `body: the request is larger than ${MAX_REQUEST_BYTES} bytes${as}`, { field: 'body' });
      }
      // API Gateway base64-encodes a body it does not take for text; bytes that are not UTF-8
      // are refused, never replaced (the local runtime passes them the same way).
      const text = event.isBase64Encoded ? decodeUtf8(Buffer.from(event.body, 'base64')) : event.body;
      event.parsedBody = parseJsonText(text);
    },
  };
}

/**
 * Every failure becomes the B1 shape. A BrokerError says what was wrong; the store's
 * throttling becomes a retryable 503 with Retry-After; anything else is a bug, logged and
 * answered as a 500 that reveals nothing.
 */
export function errorShape(log: (message: string, error: unknown) => void): middy.MiddlewareObj<Event, APIGatewayProxyStructuredResultV2> {
  return {
    onError: (request: Request) => {
      const error = request.error;
      const requestId = request.event.requestContext?.requestId ?? 'unknown';
      if (error instanceof BrokerError) {
        request.response = {
          statusCode: httpStatusOf(error.code),
          headers: { ...jsonHeaders, ...(error.code === 'Throttled' ? { 'retry-after': String(error.options.retryAfterSeconds ?? 1) } : {}) },
          body: errorBody(error.code, error.message, error.retryable, requestId),
        };
        return;
      }
      if (isStoreBusy(error)) {
        request.response = {
          statusCode: 503,
          headers: { ...jsonHeaders, 'retry-after': '1' },
          body: errorBody('Throttled', 'the store is busy; try again shortly', true, requestId),
        };
        return;
      }
      log('unhandled error', error);
      request.response = {
        statusCode: 500,
        headers: jsonHeaders,
        body: errorBody('InternalError', 'the broker failed to handle the request; it may be retried', true, requestId),
      };
    },
  };
}

/**
 * A1-A3: every request carries a shared access signature. Token expiry is read from the
 * wall clock (`nowSeconds`, lib/deps.ts `wallSeconds`), not the broker's: clients mint tokens
 * against real time, and a test that moves the broker's clock forward must not expire them.
 * Failures never say which check failed.
 */
export function sharedAccessSignature(options: {
  findRule: FindRule;
  /** A2: rules of a deleted entity open nothing; asked after a key verified. */
  isCurrent: IsCurrent;
  ready: () => Promise<unknown>;
  nowSeconds: () => number;
}): middy.MiddlewareObj<Event, APIGatewayProxyStructuredResultV2> {
  return {
    before: async (request: Request) => {
      await options.ready();
      const { event } = request;
      const header = event.headers?.authorization ?? event.headers?.Authorization;
      const decision = await authorize(
        { method: event.requestContext.http.method, path: event.rawPath },
        header,
        options.nowSeconds(),
        options.findRule,
        options.isCurrent,
      );
      if (decision.ok) {
        event.grant = decision.grant;
        return;
      }
      if (decision.status === 400) {
        const field = pathSegmentField(event.rawPath, decision.badName);
        throw new BrokerError('BadRequest', `${field}: is not a name (it holds an encoded '/', '\\', a control character or bad percent-encoding)`, { field });
      }
      throw decision.status === 401
        ? new BrokerError('Unauthorized', 'a valid SharedAccessSignature is required')
        : new BrokerError('Forbidden', 'the token does not grant this operation on this resource');
    },
  };
}
