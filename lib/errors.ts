/**
 * Every failure the broker reports on purpose. The API turns it into the B1 error shape;
 * anything else that escapes a handler is an InternalError (500) and a bug.
 */
export const ERROR_CODES = [
  'BadRequest',
  'Unauthorized',
  'Forbidden',
  'EntityNotFound',
  'MessageNotFound',
  'EntityAlreadyExists',
  'MessageLockLost',
  'SessionLockLost',
  'SessionCannotBeLocked',
  'ServiceTimeout',
  'MessageSizeExceeded',
  'EntityDisabled',
  'QuotaExceeded',
  'Conflict',
  'Throttled',
  'InternalError',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const statusOf: Record<ErrorCode, number> = {
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

export class BrokerError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { field?: string; retryable?: boolean; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'BrokerError';
    this.status = statusOf[code];
  }

  get retryable(): boolean {
    return this.options.retryable ?? (this.code === 'Throttled' || this.code === 'InternalError');
  }
}

export const badRequest = (field: string, message: string) => new BrokerError('BadRequest', `${field}: ${message}`, { field });

export const entityNotFound = (path: string) => new BrokerError('EntityNotFound', `entity '${path}' does not exist`);

export const lockLost = (what = 'the lock token is unknown, already used, or its lock has expired') => new BrokerError('MessageLockLost', what);

export const sessionLockLost = (what = 'the session lock token is unknown, was released, or its lock has expired') => new BrokerError('SessionLockLost', what);
