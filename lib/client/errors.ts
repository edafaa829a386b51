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
  /**
   * Address to which the network connection failed.
   * Only present if the `MessagingError` was instantiated with a Node.js `SystemError`.
   */
  address?: string;
  /**
   * A string label that identifies the error.
   */
  code?: string;
  /**
   * System-provided error number.
   * Only present if the `MessagingError` was instantiated with a Node.js `SystemError`.
   */
  errno?: number | string;
  /**
   * The error name. Default value: "MessagingError".
   */
  override name = 'MessagingError';
  /**
   * The unavailable network connection port.
   * Only present if the `MessagingError` was instantiated with a Node.js `SystemError`.
   */
  port?: number;
  /**
   * Name of the system call that triggered the error.
   * Only present if the `MessagingError` was instantiated with a Node.js `SystemError`.
   */
  syscall?: string;
  /**
   *
   * Describes whether the error is retryable. Default: true.
   */
  retryable = true;
  /**
   * Extra details about the error.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  info?: any;

  /**
   * Creates a MessagingError.
   *
   * @param message - What went wrong.
   * @param originalError - An error whose Node.js `SystemError` properties (`address`, `code`, `errno`,
   * `port`, `syscall`) are copied onto this one.
   */
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

/**
 * Errors that occur within Service Bus.
 */
export class ServiceBusError extends MessagingError {
  /**
   * The reason for the failure.
   *
   * - **GeneralError**: The exception was the result of a general error within the client library.
   * - **MessagingEntityNotFound**: A Service Bus resource cannot be found by the Service Bus service.
   * - **MessageLockLost**: The lock on the message is lost. Callers should attempt to receive and process the message again.
   * - **MessageNotFound**: The requested message was not found.
   * - **MessageSizeExceeded**: A message is larger than the maximum size allowed for its transport.
   * - **MessagingEntityAlreadyExists**: An entity with the same name exists under the same namespace.
   * - **MessagingEntityDisabled**: The Messaging Entity is disabled. Enable the entity again using Portal.
   * - **QuotaExceeded**: The quota applied to an Service Bus resource has been exceeded while interacting with the Azure Service Bus service.
   * - **ServiceBusy**: The Azure Service Bus service reports that it is busy in response to a client request to perform an operation.
   * - **ServiceTimeout**: An operation or other request timed out while interacting with the Azure Service Bus service.
   * - **ServiceCommunicationProblem**: There was a general communications error encountered when interacting with the Azure Service Bus service.
   * - **SessionCannotBeLocked**: The requested session cannot be locked.
   * - **SessionLockLost**: The lock on the session has expired. Callers should request the session again.
   * - **UnauthorizedAccess"**: The user doesn't have access to the entity.
   */
  declare code: ServiceBusErrorCode;

  /**
   * Creates a ServiceBusError; `retryable` follows from the code (`ServiceBusy`, `ServiceTimeout` and
   * `ServiceCommunicationProblem` are).
   *
   * @param message - What went wrong.
   * @param code - The reason for the failure.
   */
  constructor(message: string, code: ServiceBusErrorCode);
  /**
   * Creates a ServiceBusError from a MessagingError, keeping its message, code, `retryable` and `info`.
   *
   * @param messagingError - The error to convert.
   */
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

/**
 * Determines if an error is of type `ServiceBusError`
 *
 * @param err - An error to check to see if it's of type ServiceBusError
 * @returns True for a ServiceBusError, also one from another copy of the library (by its `name`).
 */
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
