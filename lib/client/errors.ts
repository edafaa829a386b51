/**
 * `ServiceBusError` as @azure/service-bus has it (a MessagingError with a Service Bus `code`
 * and `retryable`), and the mapping from the broker's B1 error bodies to it.
 */

export type ServiceBusErrorCode =
  | 'GeneralError'
  | 'MessagingEntityNotFound'
  | 'MessageLockLost'
  | 'MessageNotFound'
  | 'MessageSizeExceeded'
  | 'MessagingEntityAlreadyExists'
  | 'MessagingEntityDisabled'
  | 'QuotaExceeded'
  | 'ServiceBusy'
  | 'ServiceTimeout'
  | 'ServiceCommunicationProblem'
  | 'SessionCannotBeLocked'
  | 'SessionLockLost'
  | 'UnauthorizedAccess';

/** Same members as @azure/core-amqp's MessagingError. */
export class MessagingError extends Error {
  address?: string;
  code?: string;
  errno?: number | string;
  override name = 'MessagingError';
  port?: number;
  syscall?: string;
  retryable = true;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  info?: any;

  constructor(message: string, originalError?: Error) {
    super(message);
    if (originalError) {
      for (const key of ['address', 'code', 'errno', 'port', 'syscall'] as const) {
        const value = (originalError as unknown as Record<string, unknown>)[key];
        if (value !== undefined) (this as unknown as Record<string, unknown>)[key] = value;
      }
    }
  }
}

export class ServiceBusError extends MessagingError {
  declare code: ServiceBusErrorCode;

  constructor(message: string, code: ServiceBusErrorCode);
  constructor(messagingError: MessagingError);
  constructor(messageOrError: string | MessagingError, code?: ServiceBusErrorCode) {
    const message = typeof messageOrError === 'string' ? messageOrError : messageOrError.message;
    super(message);
    this.name = 'ServiceBusError';
    if (typeof messageOrError === 'string') {
      this.code = code ?? 'GeneralError';
      this.retryable = retryableCodes.has(this.code);
    } else {
      this.code = (messageOrError.code as ServiceBusErrorCode) ?? 'GeneralError';
      this.retryable = messageOrError.retryable;
      this.info = messageOrError.info;
    }
  }
}

const retryableCodes = new Set<ServiceBusErrorCode>(['ServiceBusy', 'ServiceTimeout', 'ServiceCommunicationProblem']);

export function isServiceBusError(err: unknown): err is ServiceBusError {
  return err instanceof ServiceBusError || (typeof err === 'object' && err !== null && (err as Error).name === 'ServiceBusError');
}

/** The broker's codes (lib/errors.ts, docs/http-api.md) in the SDK's words. */
const sdkCodeOf: Record<string, ServiceBusErrorCode> = {
  BadRequest: 'GeneralError',
  Unauthorized: 'UnauthorizedAccess',
  Forbidden: 'UnauthorizedAccess',
  EntityNotFound: 'MessagingEntityNotFound',
  MessageNotFound: 'MessageNotFound',
  EntityAlreadyExists: 'MessagingEntityAlreadyExists',
  MessageLockLost: 'MessageLockLost',
  SessionLockLost: 'SessionLockLost',
  SessionCannotBeLocked: 'SessionCannotBeLocked',
  ServiceTimeout: 'ServiceTimeout',
  MessageSizeExceeded: 'MessageSizeExceeded',
  EntityDisabled: 'MessagingEntityDisabled',
  QuotaExceeded: 'QuotaExceeded',
  Conflict: 'GeneralError',
  Throttled: 'ServiceBusy',
  InternalError: 'GeneralError',
};

/** What the broker said, kept on `error.info` for programs that want more than the code. */
export interface BrokerErrorInfo {
  status: number;
  brokerCode?: string;
  requestId?: string;
  retryAfterMs?: number;
}

/** A B1 body (or whatever API Gateway answered instead) as a ServiceBusError. */
export function errorFromResponse(status: number, body: unknown, retryAfterMs?: number): ServiceBusError {
  const b1 = (body as { error?: { code?: unknown; message?: unknown; retryable?: unknown; requestId?: unknown } } | undefined)?.error;
  const brokerCode = typeof b1?.code === 'string' ? b1.code : undefined;
  const gatewayMessage = (body as { message?: unknown } | undefined)?.message;
  const message = typeof b1?.message === 'string' ? b1.message : typeof gatewayMessage === 'string' ? gatewayMessage : `The service answered HTTP ${status}`;
  let code: ServiceBusErrorCode = brokerCode ? (sdkCodeOf[brokerCode] ?? 'GeneralError') : 'GeneralError';
  if (!brokerCode) {
    if (status === 401 || status === 403) code = 'UnauthorizedAccess';
    else if (status === 404) code = 'MessagingEntityNotFound';
    else if (status === 413) code = 'MessageSizeExceeded';
    else if (status === 429 || status === 503) code = 'ServiceBusy';
    else if (status === 504 || status === 408) code = 'ServiceTimeout';
  }
  const error = new ServiceBusError(message, code);
  error.retryable = typeof b1?.retryable === 'boolean' ? b1.retryable : status === 429 || status === 503 || status === 504 || status === 408;
  const info: BrokerErrorInfo = { status };
  if (brokerCode) info.brokerCode = brokerCode;
  if (typeof b1?.requestId === 'string') info.requestId = b1.requestId;
  if (retryAfterMs !== undefined) info.retryAfterMs = retryAfterMs;
  error.info = info;
  return error;
}

/** The error AbortSignal-aware SDK calls reject with (same name as @azure/abort-controller's). */
export class AbortError extends Error {
  constructor(message = 'The operation was aborted.') {
    super(message);
    this.name = 'AbortError';
  }
}
