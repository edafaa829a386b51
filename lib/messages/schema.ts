import * as z from 'zod/mini';
import { BrokerError } from '../errors.js';
import { docSchema, durationField, instantField, ownRecord, parseOrThrow } from '../validation.js';

export type PropertyValue = string | number | boolean | null;
export type ApplicationProperties = Record<string, PropertyValue>;

/** A message as the sender gave it, validated; times in epoch ms. */
export interface MessageInput extends OptionalSystemProperties {
  body: unknown;
  messageId?: string;
  timeToLive?: number;
  scheduledEnqueueTime?: number;
  applicationProperties?: ApplicationProperties;
}

/** S5 limits. */
export const MAX_MESSAGE_BYTES = 256 * 1024;
export const MAX_PROPERTIES_BYTES = 64 * 1024;

export const propertyValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
export const applicationPropertiesSchema = ownRecord(z.record(z.string().check(z.minLength(1), z.maxLength(256)), propertyValue));

const text = (max: number) => z.nullish(z.string().check(z.maxLength(max)));

/**
 * A session id (N1): 1-128 characters, as in Service Bus, and not `.` or `..`, which no URL
 * path can carry (clients and gateways resolve them as dot segments), so a message in such a
 * session could never be received by name.
 */
export const sessionIdText = z.string().check(
  z.minLength(1, 'must be 1-128 characters'),
  z.maxLength(128, 'must be 1-128 characters'),
  z.refine((id) => id !== '.' && id !== '..', "must not be '.' or '..' (a URL path cannot name them)"),
);

/** A session id named in a path (`{sessionId}`), or a 400 naming `sessionId`. */
export const parseSessionId = (text: string) => parseOrThrow(sessionIdText, text, 'sessionId');
const messageBody = z.unknown();
const messageTo = z.string().check(z.maxLength(260));
// A clone of its own (`check()` copies), so that what the document says of it is not said of every instant.
const scheduledEnqueueTime = instantField.check();

/** A message as sent (`parseMessage` reads it). */
export const messageSchema = z.strictObject({
  body: messageBody,
  contentType: text(256),
  messageId: z.nullish(z.string().check(z.minLength(1), z.maxLength(128))),
  correlationId: text(128),
  sessionId: z.nullish(sessionIdText),
  replyTo: text(260),
  replyToSessionId: text(128),
  subject: text(256),
  to: z.nullish(messageTo),
  partitionKey: text(128),
  timeToLive: z.nullish(
    z.pipe(
      durationField({ min: 1, minText: 'more than zero', allowUnlimited: true }),
      z.transform((ms: number) => (ms === Number.POSITIVE_INFINITY ? undefined : ms)),
    ),
  ),
  scheduledEnqueueTime: z.nullish(scheduledEnqueueTime),
  applicationProperties: z.nullish(applicationPropertiesSchema),
});

/**
 * What docs/openapi.json says of a message beyond its shape, registered where z.toJSONSchema
 * reads it only when the document is made (lib/requests/schemas.ts `describeRequests`), so the
 * words ride in no Lambda bundle.
 */
export const describeMessage = /* @__PURE__ */ docSchema((): true => {
  z.globalRegistry.add(applicationPropertiesSchema, {
    description: 'Application properties: names of 1-256 characters, values string, number, boolean or null.',
  });
  z.globalRegistry.add(messageBody, { description: 'The payload: any JSON value.' });
  z.globalRegistry.add(messageTo, { description: 'Application routing hint; not used by the broker.' });
  z.globalRegistry.add(scheduledEnqueueTime, { format: 'date-time', description: 'ISO 8601 instant; the message becomes visible then (S6).' });
  z.globalRegistry.add(messageSchema, {
    description: `A message as sent. Only \`body\` (any JSON value) is required; null means absent. The whole message is at most ${MAX_MESSAGE_BYTES} bytes, its properties at most ${MAX_PROPERTIES_BYTES} (S5, else 413). With a \`sessionId\`, the session decides the partition.`,
  });
  return true;
});

export function parseMessage(input: unknown, field = 'body'): MessageInput {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new BrokerError('BadRequest', `${field}: must be a JSON object with a "body"`, { field });
  }
  if (!('body' in input)) {
    const f = field === 'body' ? 'body' : `${field}.body`;
    throw new BrokerError('BadRequest', `${f}: is required`, { field: f });
  }
  const parsed = parseOrThrow(messageSchema, input, field === 'body' ? '' : field);
  const out: MessageInput = { body: parsed.body };
  for (const [k, v] of Object.entries(parsed)) {
    if (k !== 'body' && v !== null && v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** The optional system properties a message carries beside its body and messageId. */
export const optionalSystemProperties = ['contentType', 'correlationId', 'sessionId', 'replyTo', 'replyToSessionId', 'subject', 'to', 'partitionKey'] as const;

/** The optional text properties as a message carries them, sent (`MessageInput`) or stored (`MessageItem`). */
export type OptionalSystemProperties = { [K in (typeof optionalSystemProperties)[number]]?: string };

const systemTextProps = ['messageId', ...optionalSystemProperties] as const;

/** Bytes of the properties (system and application), the part S5 caps at 64 KB. */
export function propertiesSize(m: Omit<MessageInput, 'body'>): number {
  let size = m.applicationProperties ? Buffer.byteLength(JSON.stringify(m.applicationProperties)) : 0;
  for (const key of systemTextProps) {
    const v = m[key];
    if (v) size += Buffer.byteLength(v);
  }
  return size;
}

export const bodyText = (body: unknown) => JSON.stringify(body ?? null);

/** S5: a direct send over a limit is refused with 413. */
export function checkSize(m: MessageInput, field = 'body'): { size: number; body: string } {
  const body = bodyText(m.body);
  const props = propertiesSize(m);
  if (props > MAX_PROPERTIES_BYTES) {
    throw new BrokerError('MessageSizeExceeded', `${field}: properties are ${props} bytes; the limit is ${MAX_PROPERTIES_BYTES}`, { field });
  }
  const size = Buffer.byteLength(body) + props;
  if (size > MAX_MESSAGE_BYTES) {
    throw new BrokerError('MessageSizeExceeded', `${field}: the message is ${size} bytes; the limit is ${MAX_MESSAGE_BYTES}`, { field });
  }
  return { size, body };
}
