/**
 * The system properties a correlation filter matches on (docs/http-api.md, "Management"): one list that the
 * management API's filter type and schema, the matcher and the client's filter type derive from.
 * No imports, so the client can take it without the broker.
 */
export const CORRELATION_SYSTEM_KEYS = ['correlationId', 'messageId', 'to', 'replyTo', 'subject', 'sessionId', 'replyToSessionId', 'contentType'] as const;

export type CorrelationSystemKey = (typeof CORRELATION_SYSTEM_KEYS)[number];
export type CorrelationSystemProperties = { [K in CorrelationSystemKey]?: string };
