/**
 * Messages as the SDK has them, and their JSON form on Sluice's HTTP API.
 *
 * The broker stores a JSON body and string/number/boolean/null application properties. To
 * give bodies and properties back with the type they were sent with, the client writes one
 * reserved application property, `$sluice-types` (JSON text, present only when needed):
 * `{"body":"bytes"}` when the body is a Uint8Array/Buffer (sent as base64 text),
 * `{"body":"date"}` for a Date body, `{"body":"text"}` for text sent over Service Bus's REST
 * protocol that is not JSON as Sluice writes it (read as the SDK reads a data body), and `{"dates":["name",...]}` for Date property values
 * (sent as ISO 8601 text, so a correlation filter or SQL `=` can compare them as text). The
 * receiving client removes the property and restores the types; other readers (the CLI,
 * the explorer, plain HTTP) see base64 and ISO text.
 */
import Long from 'long';
import { TYPES_PROPERTY } from '../messages/types-property.js';

export { TYPES_PROPERTY };
/** Service Bus's AMQP annotation names; `_rawAmqpMessage.messageAnnotations` has them as exact `Long`s. */
export const SEQUENCE_ANNOTATION = 'x-opt-sequence-number';
export const ENQUEUED_SEQUENCE_ANNOTATION = 'x-opt-enqueue-sequence-number';

export type PropertyValue = number | boolean | string | Date | null;

/* eslint-disable @typescript-eslint/no-explicit-any */
/** @azure/core-amqp's AmqpMessageHeader. */
export interface AmqpMessageHeader {
  firstAcquirer?: boolean;
  deliveryCount?: number;
  timeToLive?: number;
  durable?: boolean;
  priority?: number;
}

/** @azure/core-amqp's AmqpMessageProperties. */
export interface AmqpMessageProperties {
  messageId?: string | number | BufferLike;
  to?: string;
  subject?: string;
  replyTo?: string;
  correlationId?: string | number | BufferLike;
  contentType?: string;
  contentEncoding?: string;
  absoluteExpiryTime?: number;
  creationTime?: number;
  groupId?: string;
  groupSequence?: number;
  replyToGroupId?: string;
}

/** The SDK's AmqpAnnotatedMessage, reduced to what an HTTP broker can carry. */
export interface AmqpAnnotatedMessage {
  header?: AmqpMessageHeader;
  footer?: { [key: string]: any };
  messageAnnotations?: { [key: string]: any };
  deliveryAnnotations?: { [key: string]: any };
  applicationProperties?: { [key: string]: any };
  properties?: AmqpMessageProperties;
  body: any;
  bodyType?: 'data' | 'sequence' | 'value';
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** Node's Buffer type where @types/node is present (as the SDK's types have it), else Uint8Array. */
export type BufferLike = typeof globalThis extends { Buffer: { prototype: infer B } } ? B : Uint8Array;

export interface ServiceBusMessage {
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  messageId?: string | number | BufferLike;
  contentType?: string;
  correlationId?: string | number | BufferLike;
  partitionKey?: string;
  sessionId?: string;
  replyToSessionId?: string;
  timeToLive?: number;
  subject?: string;
  to?: string;
  replyTo?: string;
  scheduledEnqueueTimeUtc?: Date;
  applicationProperties?: { [key: string]: PropertyValue };
}

export interface ServiceBusReceivedMessage extends ServiceBusMessage {
  readonly deadLetterReason?: string;
  readonly deadLetterErrorDescription?: string;
  readonly lockToken?: string;
  readonly deliveryCount?: number;
  readonly enqueuedTimeUtc?: Date;
  readonly expiresAtUtc?: Date;
  lockedUntilUtc?: Date;
  readonly enqueuedSequenceNumber?: number;
  readonly sequenceNumber?: Long;
  readonly deadLetterSource?: string;
  readonly state: 'active' | 'deferred' | 'scheduled';
  readonly _rawAmqpMessage: AmqpAnnotatedMessage;
}

type Json = Record<string, unknown>;

export function toBase64(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

export function fromBase64(text: string): Uint8Array {
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** Bytes as a Buffer where there is one (Node: what SDK programs expect), else a Uint8Array. */
export function bytesOut(bytes: Uint8Array): Uint8Array {
  const B = (globalThis as { Buffer?: { from(b: Uint8Array): Uint8Array } }).Buffer;
  return B ? B.from(bytes) : bytes;
}

const idText = (v: string | number | BufferLike | Uint8Array | undefined): string | undefined =>
  v === undefined || v === null ? undefined : v instanceof Uint8Array ? toBase64(v) : String(v);

/** Milliseconds as an ISO 8601 duration (`PT1.5S`). */
export function msToDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError('timeToLive must be a positive number of milliseconds');
  const seconds = Math.round(ms) / 1000;
  return `PT${seconds}S`;
}

const DURATION = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

export function durationToMs(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const [, d, h, min, s] = m.map((x) => Number(x ?? 0));
  return Math.round(((d! * 24 + h!) * 60 + min!) * 60_000 + s! * 1000);
}

/** Application properties for the wire, with the names of the Date ones. */
export function encodeProperties(props: { [key: string]: PropertyValue } | undefined): { properties: Json; dates: string[] } {
  const properties: Json = {};
  const dates: string[] = [];
  for (const [k, v] of Object.entries(props ?? {})) {
    if (k === TYPES_PROPERTY) continue;
    if (v instanceof Date) {
      properties[k] = v.toISOString();
      dates.push(k);
    } else if (v === undefined) {
      continue;
    } else if (typeof v === 'object' && v !== null) {
      throw new TypeError(`applicationProperties.${k}: must be a number, boolean, string, Date or null`);
    } else {
      properties[k] = v;
    }
  }
  return { properties, dates };
}

/** The JSON the broker takes for one message. Received-only fields of a received message are ignored. */
export function toWire(message: ServiceBusMessage | AmqpAnnotatedMessage): Json {
  if (message === null || typeof message !== 'object' || !('body' in message)) {
    throw new TypeError('Provided value for "message" must be of type ServiceBusMessage, with a body');
  }
  const m = isAmqpAnnotated(message) ? fromAmqp(message) : (message as ServiceBusMessage);
  const types: { body?: string; dates?: string[] } = {};
  let body: unknown = m.body;
  if (body instanceof Uint8Array) {
    body = toBase64(body);
    types.body = 'bytes';
  } else if (body instanceof ArrayBuffer) {
    body = toBase64(new Uint8Array(body));
    types.body = 'bytes';
  } else if (body instanceof Date) {
    body = body.toISOString();
    types.body = 'date';
  } else if (body === undefined) {
    body = null;
  }
  const { properties, dates } = encodeProperties(m.applicationProperties);
  if (dates.length) types.dates = dates;
  if (types.body || types.dates) properties[TYPES_PROPERTY] = JSON.stringify(types);
  const wire: Json = { body };
  const text = (key: string, v: unknown) => {
    if (v !== undefined && v !== null && v !== '') wire[key] = v;
  };
  text('messageId', idText(m.messageId));
  text('contentType', m.contentType);
  text('correlationId', idText(m.correlationId));
  text('partitionKey', m.partitionKey);
  text('sessionId', m.sessionId);
  text('replyToSessionId', m.replyToSessionId);
  text('subject', m.subject);
  text('to', m.to);
  text('replyTo', m.replyTo);
  // A received message's timeToLive is the effective one; resending it keeps that lifetime.
  if (m.timeToLive !== undefined && m.timeToLive !== null && Number.isFinite(m.timeToLive) && m.timeToLive > 0) wire.timeToLive = msToDuration(m.timeToLive);
  if (m.scheduledEnqueueTimeUtc instanceof Date && !isReceived(m)) wire.scheduledEnqueueTime = m.scheduledEnqueueTimeUtc.toISOString();
  if (Object.keys(properties).length) wire.applicationProperties = properties;
  return wire;
}

const isReceived = (m: object): boolean => '_rawAmqpMessage' in m;

function isAmqpAnnotated(m: object): m is AmqpAnnotatedMessage {
  return !isReceived(m) && ('bodyType' in m || 'messageAnnotations' in m || 'properties' in m);
}

function fromAmqp(m: AmqpAnnotatedMessage): ServiceBusMessage {
  const p = (m.properties ?? {}) as Record<string, unknown>;
  const out: ServiceBusMessage = { body: m.body };
  if (p.messageId !== undefined) out.messageId = p.messageId as string;
  if (p.correlationId !== undefined) out.correlationId = p.correlationId as string;
  if (typeof p.contentType === 'string') out.contentType = p.contentType;
  if (typeof p.subject === 'string') out.subject = p.subject;
  if (typeof p.to === 'string') out.to = p.to;
  if (typeof p.replyTo === 'string') out.replyTo = p.replyTo;
  if (typeof p.groupId === 'string') out.sessionId = p.groupId;
  if (typeof p.replyToGroupId === 'string') out.replyToSessionId = p.replyToGroupId;
  if (typeof m.header?.timeToLive === 'number') out.timeToLive = m.header.timeToLive;
  if (m.applicationProperties) out.applicationProperties = m.applicationProperties;
  return out;
}

/** Bytes a message counts for against a batch's or a send's size limit (what the broker counts, S5). */
export function wireSize(wire: Json): number {
  const encoder = new TextEncoder();
  let size = encoder.encode(JSON.stringify(wire.body ?? null)).length;
  if (wire.applicationProperties) size += encoder.encode(JSON.stringify(wire.applicationProperties)).length;
  for (const key of ['messageId', 'contentType', 'correlationId', 'sessionId', 'replyTo', 'replyToSessionId', 'subject', 'to', 'partitionKey']) {
    const v = wire[key];
    if (typeof v === 'string') size += encoder.encode(v).length;
  }
  return size;
}

/**
 * A body sent over Service Bus's REST protocol as text that is not JSON as Sluice writes it
 * (`{"body":"text"}`): the SDK's default data transformer gives the JSON value when the text
 * parses, else the bytes.
 */
function textBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return bytesOut(new TextEncoder().encode(text));
  }
}

/** How a received message's body was stored (`$sluice-types`' `body`), for settlements that rewrite the marker. */
const bodyKinds = new WeakMap<object, string>();
export const storedBodyKind = (message: object): string | undefined => bodyKinds.get(message);

const dateOf = (v: unknown) => (typeof v === 'string' ? new Date(v) : undefined);

/** A message as the broker answered it, as the SDK's ServiceBusReceivedMessage. */
export function fromWire(wire: Json): ServiceBusReceivedMessage {
  const props = { ...((wire.applicationProperties ?? {}) as Record<string, PropertyValue>) };
  let types: { body?: string; dates?: string[] } = {};
  const marker = props[TYPES_PROPERTY];
  if (typeof marker === 'string') {
    try {
      types = JSON.parse(marker) as typeof types;
    } catch {
      types = {};
    }
    delete props[TYPES_PROPERTY];
  }
  for (const name of types.dates ?? []) {
    const v = props[name];
    if (typeof v === 'string') props[name] = new Date(v);
  }
  let body: unknown = wire.body;
  if (types.body === 'bytes' && typeof body === 'string') body = bytesOut(fromBase64(body));
  else if (types.body === 'date' && typeof body === 'string') body = new Date(body);
  else if (types.body === 'text' && typeof body === 'string') body = textBody(body);

  const out: Record<string, unknown> = { body };
  for (const key of ['messageId', 'contentType', 'correlationId', 'partitionKey', 'sessionId', 'replyToSessionId', 'subject', 'to', 'replyTo']) {
    const v = wire[key];
    if (typeof v === 'string') out[key] = v;
  }
  const ttl = typeof wire.timeToLive === 'string' ? durationToMs(wire.timeToLive) : undefined;
  if (ttl !== undefined) out.timeToLive = ttl;
  if (typeof wire.scheduledEnqueueTime === 'string') out.scheduledEnqueueTimeUtc = new Date(wire.scheduledEnqueueTime);
  out.applicationProperties = props;
  if (typeof wire.lockToken === 'string') out.lockToken = wire.lockToken;
  if (typeof wire.deliveryCount === 'number') out.deliveryCount = wire.deliveryCount;
  if (wire.enqueuedTime) out.enqueuedTimeUtc = dateOf(wire.enqueuedTime);
  if (wire.expiresAt) out.expiresAtUtc = dateOf(wire.expiresAt);
  if (wire.lockedUntil) out.lockedUntilUtc = dateOf(wire.lockedUntil);
  if (typeof wire.sequenceNumber === 'string') out.sequenceNumber = Long.fromString(wire.sequenceNumber);
  // The SDK types enqueuedSequenceNumber as a number, and Sluice's numbers exceed 2^53: the
  // number is the nearest double (what `sequenceNumber.toNumber()` gives for the original, so
  // the two compare equal); the exact value is a Long under the AMQP annotation's name below.
  const enqueuedSequence =
    typeof wire.enqueuedSequenceNumber === 'string' && /^\d+$/.test(wire.enqueuedSequenceNumber) ? Long.fromString(wire.enqueuedSequenceNumber) : undefined;
  if (enqueuedSequence) out.enqueuedSequenceNumber = Number(wire.enqueuedSequenceNumber);
  for (const key of ['deadLetterReason', 'deadLetterErrorDescription', 'deadLetterSource']) {
    const v = wire[key];
    if (typeof v === 'string') out[key] = v;
  }
  out.state = typeof wire.state === 'string' ? (wire.state.toLowerCase() as ServiceBusReceivedMessage['state']) : 'active';
  out._rawAmqpMessage = {
    body,
    bodyType: types.body === 'bytes' || types.body === 'text' ? 'data' : 'value',
    messageAnnotations: Object.fromEntries(
      Object.entries({ [SEQUENCE_ANNOTATION]: out.sequenceNumber, [ENQUEUED_SEQUENCE_ANNOTATION]: enqueuedSequence }).filter(([, v]) => v !== undefined),
    ),
    applicationProperties: props,
    properties: Object.fromEntries(
      Object.entries({
        messageId: out.messageId,
        correlationId: out.correlationId,
        contentType: out.contentType,
        subject: out.subject,
        to: out.to,
        replyTo: out.replyTo,
        groupId: out.sessionId,
      }).filter(([, v]) => v !== undefined),
    ) as AmqpMessageProperties,
  } satisfies AmqpAnnotatedMessage;
  const received = out as unknown as ServiceBusReceivedMessage;
  if (types.body) bodyKinds.set(received, types.body);
  return received;
}

/** A sequence number as the broker takes it (decimal text) from a Long, number or bigint. */
export function sequenceText(n: Long | number | bigint | string): string {
  if (Long.isLong(n)) return n.toString();
  if (typeof n === 'number' && !Number.isSafeInteger(n)) throw new TypeError('sequence number must be a whole number');
  return String(n);
}

export { Long };
