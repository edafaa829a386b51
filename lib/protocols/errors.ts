/**
 * Errors as Service Bus answers them over HTTP: `<Error><Code>{status}</Code><Detail>…</Detail></Error>`
 * with `application/xml`. The SDKs read the status (JS `atomXmlHelper` maps it to a
 * `RestError.code`, .NET to an exception) and show `Detail`; a 409 whose Detail holds
 * `SubCode=40901` is a transient conflict to them, a 403 with `SubCode=40301` an invalid
 * operation, any other 403 a quota. So:
 *
 * - every refusal of a token or of rights is a 401 (Sluice's own API answers 403 for rights);
 * - Sluice's retryable `Conflict` carries `SubCode=40901`, a disabled entity `SubCode=40301`;
 * - a protocol may remap a status (the REST plane: a lost lock is 404, a missing entity 410).
 */
import { BrokerError, type ErrorCode } from '../errors.js';
import { httpStatusOf } from '../api/errors.js';
import { isStoreBusy } from '../store/outcomes.js';
import { escapeXml } from './xml.js';

export const XML_CONTENT_TYPE = 'application/xml; charset=utf-8';

export interface ProtocolAnswer {
  status: number;
  headers?: Record<string, string>;
  /** Text, or bytes (sent base64 through API Gateway). */
  body?: string | Buffer;
}

/** Per-protocol overrides of the status an error code gets. */
export type StatusMap = Partial<Record<ErrorCode, number>>;

const SERVICE_BUS_STATUS: StatusMap = { Forbidden: 401 };

const SUB_CODES: Partial<Record<ErrorCode, string>> = { Conflict: '40901', EntityDisabled: '40301', SessionCannotBeLocked: '40901' };

export function errorXml(status: number, detail: string, requestId: string): string {
  return `<Error><Code>${status}</Code><Detail>${escapeXml(`${detail} TrackingId:${requestId}`)}</Detail></Error>`;
}

export function errorAnswer(status: number, detail: string, requestId: string, headers: Record<string, string> = {}): ProtocolAnswer {
  return { status, headers: { 'content-type': XML_CONTENT_TYPE, ...headers }, body: errorXml(status, detail, requestId) };
}

/**
 * The answer to any failure: a BrokerError by its code (and `overrides`), the store's
 * throttling as a 503 with Retry-After (the SDKs retry it), anything else a 500 that reveals
 * nothing, after `log`.
 */
export function serviceBusErrorAnswer(
  error: unknown,
  requestId: string,
  log: (message: string, error: unknown) => void,
  overrides: StatusMap = {},
): ProtocolAnswer {
  if (error instanceof BrokerError) {
    const status = overrides[error.code] ?? SERVICE_BUS_STATUS[error.code] ?? httpStatusOf(error.code);
    const sub = SUB_CODES[error.code];
    const detail = sub ? `${error.message}. SubCode=${sub}.` : error.message;
    const headers: Record<string, string> = error.code === 'Throttled' ? { 'retry-after': String(error.options.retryAfterSeconds ?? 1) } : {};
    return errorAnswer(status, detail, requestId, headers);
  }
  if (isStoreBusy(error)) {
    return errorAnswer(503, 'The store is busy; try again shortly.', requestId, { 'retry-after': '1' });
  }
  log('unhandled error', error);
  return errorAnswer(500, 'The broker failed to handle the request; it may be retried.', requestId);
}
