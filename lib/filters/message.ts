/**
 * The view of a message that filters and actions see. The broker builds it from the stored
 * message; actions return a changed copy the broker writes back to the subscription's copy.
 */
export interface FilterMessage {
  system: SystemProperties;
  properties: Record<string, PropertyValue>;
}

export type PropertyValue = string | number | boolean | null;

export interface SystemProperties {
  messageId?: string;
  correlationId?: string;
  subject?: string;
  to?: string;
  replyTo?: string;
  replyToSessionId?: string;
  sessionId?: string;
  contentType?: string;
  partitionKey?: string;
  deliveryCount?: number;
  /** Decimal string: a 64-bit integer (S2). */
  sequenceNumber?: string;
  /** ISO 8601 instant. */
  enqueuedTimeUtc?: string;
  size?: number;
}

export type SystemField = keyof SystemProperties;
