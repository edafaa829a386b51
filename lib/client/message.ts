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
  /**
   * Describes the defined set of standard header properties of the message.
   */
  header?: AmqpMessageHeader;
  /**
   * Describes set of footer properties of the message.
   */
  footer?: { [key: string]: any };
  /**
   * A dictionary containing message attributes that will be held in the message header
   */
  messageAnnotations?: { [key: string]: any };
  /**
   * A dictionary used for delivery-specific
   * non-standard properties at the head of the message.
   */
  deliveryAnnotations?: { [key: string]: any };
  /**
   * A dictionary containing application specific message properties.
   */
  applicationProperties?: { [key: string]: any };
  /**
   *  Describes the defined set of standard properties of the message.
   */
  properties?: AmqpMessageProperties;
  /**
   * The message body.
   */
  body: any;
  /**
   * The AMQP body section the message was sent as (`data` bytes, a `sequence`, or a `value`); Sluice
   * keeps it so that a message round-trips unchanged.
   */
  bodyType?: 'data' | 'sequence' | 'value';
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** Node's Buffer type where @types/node is present (as the SDK's types have it), else Uint8Array. */
export type BufferLike = typeof globalThis extends { Buffer: { prototype: infer B } } ? B : Uint8Array;

/**
 * Describes the message to be sent to Service Bus.
 */
export interface ServiceBusMessage {
  /**
   * The message body that needs to be sent or is received.
   * If the application receiving the message is not using this SDK,
   * convert your body payload to a byte array or Buffer for better
   * cross-language compatibility.
   */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /**
   * The message identifier is an
   * application-defined value that uniquely identifies the message and its payload.
   *
   * Note: Numbers that are not whole integers are not allowed.
   */
  messageId?: string | number | BufferLike;
  /**
   * The content type of the message. Optionally describes
   * the payload of the message, with a descriptor following the format of RFC2045, Section 5, for
   * example "application/json".
   */
  contentType?: string;
  /**
   * The correlation identifier that allows an
   * application to specify a context for the message for the purposes of correlation, for example
   * reflecting the MessageId of a message that is being replied to.
   * See {@link https://docs.microsoft.com/azure/service-bus-messaging/service-bus-messages-payloads?#message-routing-and-correlation | Message Routing and Correlation}.
   */
  correlationId?: string | number | BufferLike;
  /**
   * The partition key for sending a message to a partitioned entity.
   * Maximum length is 128 characters. For {@link https://docs.microsoft.com/azure/service-bus-messaging/service-bus-partitioning | partitioned entities},
   * setting this value enables assigning related messages to the same internal partition,
   * so that submission sequence order is correctly recorded. The partition is chosen by a hash
   * function over this value and cannot be chosen directly.
   * - For session-aware entities, the `sessionId` property overrides this value.
   * - For non partitioned entities, partition key will be ignored
   *
   */
  partitionKey?: string;
  /**
   * The session identifier for a session-aware entity. Maximum
   * length is 128 characters. For session-aware entities, this application-defined value specifies
   * the session affiliation of the message. Messages with the same session identifier are subject
   * to summary locking and enable exact in-order processing and demultiplexing. For
   * session-unaware entities, this value is ignored.
   * {@link https://docs.microsoft.com/azure/service-bus-messaging/message-sessions | Message Sessions}.
   */
  sessionId?: string;
  /**
   * The session identifier augmenting the `replyTo` address.
   * Maximum length is 128 characters. This value augments the ReplyTo information and specifies
   * which SessionId should be set for the reply when sent to the reply entity.
   * See {@link https://docs.microsoft.com/azure/service-bus-messaging/service-bus-messages-payloads?#message-routing-and-correlation | Message Routing and Correlation}.
   */
  replyToSessionId?: string;
  /**
   * The message’s time to live value. This value is the relative
   * duration after which the message expires, starting from the instant the message has been
   * accepted and stored by the broker, as captured in `enqueuedTimeUtc`. When not set explicitly,
   * the assumed value is the DefaultTimeToLive for the respective queue or topic. A message-level
   * `timeToLive` value cannot be longer than the entity's DefaultTimeToLive setting and it is
   * silently adjusted if it does. See
   * {@link https://docs.microsoft.com/azure/service-bus-messaging/message-expiration | Expiration}.
   */
  timeToLive?: number;
  /**
   * The application specific label. This property enables the
   * application to indicate the purpose of the message to the receiver in a standardized. fashion,
   * similar to an email subject line. The mapped AMQP property is "subject".
   */
  subject?: string;
  /**
   * The "to" address. This property is reserved for future use in routing
   * scenarios and presently ignored by the broker itself. Applications can use this value in
   * rule-driven {@link https://docs.microsoft.com/azure/service-bus-messaging/service-bus-auto-forwarding | auto-forward chaining}
   * scenarios to indicate the intended logical destination of the message.
   */
  to?: string;
  /**
   * The address of an entity to send replies to. This optional and
   * application-defined value is a standard way to express a reply path to the receiver of the
   * message. When a sender expects a reply, it sets the value to the absolute or relative path of
   * the queue or topic it expects the reply to be sent to. See
   * {@link https://docs.microsoft.com/azure/service-bus-messaging/service-bus-messages-payloads?#message-routing-and-correlation | Message Routing and Correlation}.
   */
  replyTo?: string;
  /**
   * The date and time in UTC at which the message will
   * be enqueued. This property returns the time in UTC; when setting the property, the
   * supplied DateTime value must also be in UTC. This value is for delayed message sending.
   * It is utilized to delay messages sending to a specific time in the future. Message enqueuing
   * time does not mean that the message will be sent at the same time. It will get enqueued,
   * but the actual sending time depends on the queue's workload and its state.
   */
  scheduledEnqueueTimeUtc?: Date;
  /**
   * The application specific properties which can be
   * used for custom message metadata.
   */
  applicationProperties?: { [key: string]: PropertyValue };
}

/**
 * Describes the message received from Service Bus during peek operations and so cannot be settled.
 */
export interface ServiceBusReceivedMessage extends ServiceBusMessage {
  /**
   * The reason for deadlettering the message.
   * @readonly
   */
  readonly deadLetterReason?: string;
  /**
   * The error description for deadlettering the message.
   * @readonly
   */
  readonly deadLetterErrorDescription?: string;
  /**
   * The lock token is a reference to the lock that is being held by the broker in
   * `peekLock` receive mode. Locks are used internally settle messages as explained in the
   * {@link https://docs.microsoft.com/azure/service-bus-messaging/message-transfers-locks-settlement | product documentation in more detail}
   * - Not applicable when the message is received in `receiveAndDelete` receive mode.
   * mode.
   * @readonly
   */
  readonly lockToken?: string;
  /**
   * Number of deliveries that have been attempted for this message. The count is
   * incremented when a message lock expires, or the message is explicitly abandoned using the
   * `abandon()` method on the message.
   * @readonly
   */
  readonly deliveryCount?: number;
  /**
   * The UTC instant at which the message has been accepted and stored in Service Bus.
   * @readonly
   */
  readonly enqueuedTimeUtc?: Date;
  /**
   * The UTC instant at which the message is marked for removal and no longer available for
   * retrieval from the entity due to expiration. This property is computed from 2 other properties
   * on the message: `enqueuedTimeUtc` + `timeToLive`.
   */
  readonly expiresAtUtc?: Date;
  /**
   * The UTC instant until which the message is held locked in the queue/subscription.
   * When the lock expires, the `deliveryCount` is incremented and the message is again available
   * for retrieval.
   * - Not applicable when the message is received in `receiveAndDelete` receive mode.
   * mode.
   */
  lockedUntilUtc?: Date;
  /**
   * The original sequence number of the message. For
   * messages that have been auto-forwarded, this property reflects the sequence number that had
   * first been assigned to the message at its original point of submission.
   * @readonly
   */
  readonly enqueuedSequenceNumber?: number;
  /**
   * The unique number assigned to a message by Service Bus.
   * The sequence number is a unique 64-bit integer assigned to a message as it is accepted
   * and stored by the broker and functions as its true identifier. For partitioned entities,
   * the topmost 16 bits reflect the partition identifier. Sequence numbers monotonically increase.
   * They roll over to 0 when the 48-64 bit range is exhausted.
   *
   * **Max safe integer** that Javascript currently supports is `2^53 - 1`. The sequence number
   * is an AMQP `Long` type which can be upto 64 bits long. To represent that we are using a
   * library named {@link https://github.com/dcodeIO/long.js | long.js}. We expect customers
   * to use the **`Long`** type exported by this library.
   * @readonly
   */
  readonly sequenceNumber?: Long;
  /**
   * The name of the queue or subscription that this message
   * was enqueued on, before it was deadlettered. Only set in messages that have been dead-lettered
   * and subsequently auto-forwarded from the dead-letter sub-queue to another entity. Indicates the
   * entity in which the message was dead-lettered.
   * @readonly
   */
  readonly deadLetterSource?: string;
  /**
   * State of the message can be active, deferred or scheduled. Deferred messages have deferred state,
   * scheduled messages have scheduled state, all other messages have active state.
   */
  readonly state: 'active' | 'deferred' | 'scheduled';
  /**
   * The message as an AMQP annotated message (header, properties, annotations, body), as the SDK
   * exposes it; Sluice builds it from the stored message.
   * @readonly
   */
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

/** A Date from ISO text, or undefined when the text is no date. */
const validDate = (v: unknown): Date | undefined => {
  const d = typeof v === 'string' ? new Date(v) : undefined;
  return d && !Number.isNaN(d.getTime()) ? d : undefined;
};

/**
 * The body and properties with the types `$sluice-types` gives back, or undefined when the
 * marker does not fit the message. Anyone with Send can set that property over plain HTTP, and
 * the SDK never throws while decoding a received message: a marker that is not the client's
 * shape, or names a base64 body or a date that is not one, is treated as absent, and the
 * message keeps its raw values (the property included).
 */
function typed(
  marker: unknown,
  rawBody: unknown,
  raw: Record<string, PropertyValue>,
): { body: unknown; props: Record<string, PropertyValue>; kind: string | undefined } | undefined {
  let types: unknown;
  try {
    types = typeof marker === 'string' ? JSON.parse(marker) : undefined;
  } catch {
    return undefined;
  }
  if (types === null || typeof types !== 'object' || Array.isArray(types)) return undefined;
  const { body: bodyType, dates = [] } = types as { body?: unknown; dates?: unknown };
  if (!Array.isArray(dates) || (bodyType !== undefined && bodyType !== 'bytes' && bodyType !== 'date' && bodyType !== 'text')) return undefined;
  const props = { ...raw };
  delete props[TYPES_PROPERTY];
  for (const name of dates as unknown[]) {
    const date = typeof name === 'string' && Object.hasOwn(props, name) ? validDate(props[name]) : undefined;
    if (!date) return undefined;
    props[name as string] = date;
  }
  let body = rawBody;
  if (bodyType === 'date') {
    body = validDate(rawBody);
    if (!body) return undefined;
  } else if (bodyType === 'bytes') {
    if (typeof rawBody !== 'string') return undefined;
    try {
      body = bytesOut(fromBase64(rawBody));
    } catch {
      return undefined;
    }
  } else if (bodyType === 'text') {
    if (typeof rawBody !== 'string') return undefined;
    body = textBody(rawBody);
  }
  return { body, props, kind: bodyType as string | undefined };
}

/** A message as the broker answered it, as the SDK's ServiceBusReceivedMessage. Never throws on what a sender chose. */
export function fromWire(wire: Json): ServiceBusReceivedMessage {
  const raw = { ...((wire.applicationProperties ?? {}) as Record<string, PropertyValue>) };
  const decoded = Object.hasOwn(raw, TYPES_PROPERTY) ? typed(raw[TYPES_PROPERTY], wire.body, raw) : undefined;
  const props = decoded?.props ?? raw;
  const body = decoded ? decoded.body : wire.body;

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
    bodyType: decoded?.kind === 'bytes' || decoded?.kind === 'text' ? 'data' : 'value',
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
  if (decoded?.kind) bodyKinds.set(received, decoded.kind);
  return received;
}

/** A sequence number as the broker takes it (decimal text) from a Long, number or bigint. */
export function sequenceText(n: Long | number | bigint | string): string {
  if (Long.isLong(n)) return n.toString();
  if (typeof n === 'number' && !Number.isSafeInteger(n)) throw new TypeError('sequence number must be a whole number');
  return String(n);
}

export { Long };
