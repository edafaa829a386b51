/**
 * Exit codes scripts can test, and one-line errors that say what to do.
 * The table is documented in the README (CLI section); keep the two in step.
 */
export const exitCodes = {
  ok: 0,
  /** Anything unexpected: the broker failed (5xx), or a bug. */
  failed: 1,
  /** Bad input: an unknown option, a bad value, a body the broker refused (400). */
  usage: 2,
  /** The entity or message does not exist (404). */
  notFound: 3,
  /** No usable credentials: rejected token (401), missing right (403), no connection string. */
  unauthorized: 4,
  /** The entity already exists (409), or a lock was lost (410). */
  conflict: 5,
  /** The broker could not be reached, or it is busy (429, 503): trying again later may work. */
  unavailable: 6,
} as const;

export type ExitCode = (typeof exitCodes)[keyof typeof exitCodes];

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** What to do about it; appended to the one line. */
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }

  get line(): string {
    return this.hint ? `${this.message}; ${this.hint}` : this.message;
  }
}

export const usageError = (message: string, hint?: string) => new CliError(message, exitCodes.usage, hint);

/** Hints that several codes share (the SDK and the broker spell the same condition differently). */
const hint = {
  name: 'check the name (sluice queue list, sluice topic list)',
  key: 'check the connection string and its key',
  later: 'try again in a moment',
  enable: 'enable it: update --status Active',
  exists: 'use update to change it',
};

/** Service Bus error codes (the SDK's `ServiceBusError.code`) and Sluice's HTTP codes, one exit code each. */
const byCode: Record<string, { exit: ExitCode; hint?: string }> = {
  BadRequest: { exit: exitCodes.usage },
  EntityNotFound: { exit: exitCodes.notFound, hint: hint.name },
  MessagingEntityNotFound: { exit: exitCodes.notFound, hint: hint.name },
  MessageNotFound: { exit: exitCodes.notFound },
  Unauthorized: { exit: exitCodes.unauthorized, hint: hint.key },
  UnauthorizedAccess: { exit: exitCodes.unauthorized, hint: hint.key },
  Forbidden: { exit: exitCodes.unauthorized, hint: 'use a key with the right (Manage, Send or Listen) for this entity' },
  EntityAlreadyExists: { exit: exitCodes.conflict, hint: hint.exists },
  MessagingEntityAlreadyExists: { exit: exitCodes.conflict, hint: hint.exists },
  MessageLockLost: { exit: exitCodes.conflict, hint: 'the message is back in the queue; receive it again' },
  SessionLockLost: { exit: exitCodes.conflict },
  Throttled: { exit: exitCodes.unavailable, hint: hint.later },
  // The administration client's (RestError) codes.
  MessageEntityNotFoundError: { exit: exitCodes.notFound, hint: hint.name },
  MessageEntityAlreadyExistsError: { exit: exitCodes.conflict, hint: 'change it with update' },
  UnauthorizedRequestError: { exit: exitCodes.unauthorized, hint: hint.key },
  ServerBusyError: { exit: exitCodes.unavailable, hint: hint.later },
  ServiceBusy: { exit: exitCodes.unavailable, hint: hint.later },
  ServiceTimeout: { exit: exitCodes.unavailable, hint: 'try again' },
  ServiceCommunicationProblem: { exit: exitCodes.unavailable },
  MessageSizeExceeded: { exit: exitCodes.usage, hint: 'send a smaller body' },
  QuotaExceeded: { exit: exitCodes.conflict },
  EntityDisabled: { exit: exitCodes.conflict, hint: hint.enable },
  MessagingEntityDisabled: { exit: exitCodes.conflict, hint: hint.enable },
};

const byStatus = (status: number): ExitCode =>
  status === 400 || status === 413
    ? exitCodes.usage
    : status === 401 || status === 403
      ? exitCodes.unauthorized
      : status === 404
        ? exitCodes.notFound
        : status === 409 || status === 410
          ? exitCodes.conflict
          : status === 429 || status === 503
            ? exitCodes.unavailable
            : exitCodes.failed;

/** A broker answer (HTTP status and error code) as a CliError. */
export function brokerError(code: string | undefined, message: string, status?: number): CliError {
  const known = code !== undefined && Object.hasOwn(byCode, code) ? byCode[code] : undefined;
  const exit = known?.exit ?? (status !== undefined ? byStatus(status) : exitCodes.failed);
  const oneLine = message.replace(/\s+/g, ' ').trim().replace(/\.$/, '');
  return new CliError(code ? `${code}: ${oneLine}` : oneLine, exit, known?.hint);
}

/** Whatever was thrown, as one line and an exit code; never a stack trace, never a key. */
export function toCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const e = error as { code?: unknown; message?: unknown; name?: unknown; info?: { status?: number; brokerCode?: string } } | null;
  const message = typeof e?.message === 'string' ? e.message : String(error);
  if (e?.name === 'ServiceBusError' && e.code === 'ServiceCommunicationProblem') {
    return new CliError(message, exitCodes.unavailable, 'is the broker running (npm start)? check the Endpoint in the connection string');
  }
  // sluice/client's ServiceBusError keeps the broker's own code and status on `info`.
  if (e?.name === 'ServiceBusError' && typeof e.code === 'string') {
    return brokerError(e.info?.brokerCode ?? e.code, message, e.info?.status);
  }
  // The administration client throws the SDK's RestError: a status and an ATOM-style code.
  if (e?.name === 'RestError') {
    const r = error as { code?: string; statusCode?: number; details?: { brokerCode?: string } };
    return brokerError(r.details?.brokerCode ?? r.code, message, r.statusCode);
  }
  if (e?.name === 'AbortError') return new CliError('stopped', exitCodes.failed);
  return new CliError(message.split('\n')[0] ?? 'failed', exitCodes.failed);
}
