/**
 * The HTTP status of each broker error code (B1). Broker errors are domain errors (a code,
 * a message, the field at fault, whether to retry); this is the one place a code becomes a
 * status, read by the API's error answers (functions/api/http.ts), the Service Bus
 * protocols (lib/protocols/errors.ts, which differ only where Service Bus does) and the
 * OpenAPI document's error responses.
 */
import type { ErrorCode } from '../errors.js';

const HTTP_STATUS: Record<ErrorCode, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  EntityNotFound: 404,
  MessageNotFound: 404,
  EntityAlreadyExists: 409,
  MessageLockLost: 410,
  SessionLockLost: 410,
  SessionCannotBeLocked: 409,
  ServiceTimeout: 408,
  MessageSizeExceeded: 413,
  EntityDisabled: 403,
  QuotaExceeded: 403,
  Conflict: 409,
  Throttled: 503,
  InternalError: 500,
};

export const httpStatusOf = (code: ErrorCode): number => HTTP_STATUS[code];
