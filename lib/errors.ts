/**
 * Every failure the broker reports on purpose: a domain error (code, message, the field at
 * fault, whether to retry), with no HTTP status; the HTTP layer maps codes to statuses in one
 * place (lib/api/errors.ts) and answers in the B1 error shape. Anything else that escapes a
 * handler is an InternalError (500) and a bug.
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

export class BrokerError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: {
      field?: string;
      retryable?: boolean;
      retryAfterSeconds?: number;
      /** A failed send whose message may be stored all the same (`mayBeStored`). */
      mayBeStored?: boolean;
    } = {},
  ) {
    super(message);
    this.name = 'BrokerError';
  }

  get retryable(): boolean {
    return this.options.retryable ?? (this.code === 'Throttled' || this.code === 'InternalError');
  }
}

/**
 * A send that failed after some of its writes landed, or may have (S1, S4): its message may be
 * stored, in some or all of its copies. A retryable 500; in a batch it answers the whole batch
 * so (send.ts `answered`), since no answer of its own could say "not stored".
 */
export const mayBeStored = (why: string) =>
  new BrokerError('InternalError', `the message may be stored, but ${why}; it may be sent again`, { retryable: true, mayBeStored: true });

/** Whether a failure is `mayBeStored`'s. */
export const saysMayBeStored = (e: unknown): boolean => e instanceof BrokerError && e.options.mayBeStored === true;

export const badRequest = (field: string, message: string) => new BrokerError('BadRequest', `${field}: ${message}`, { field });

/** A method no route on the path takes, though others do: a 400 naming `method`. */
export const methodNotAllowed = (method: string) => new BrokerError('BadRequest', `method ${method} is not allowed on this path`, { field: 'method' });

export const entityNotFound = (path: string) => new BrokerError('EntityNotFound', `entity '${path}' does not exist`);

export const lockLost = (what = 'the lock token is unknown, already used, or its lock has expired') => new BrokerError('MessageLockLost', what);

export const sessionLockLost = (what = 'the session lock token is unknown, was released, or its lock has expired') => new BrokerError('SessionLockLost', what);
