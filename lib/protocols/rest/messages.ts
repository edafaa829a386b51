/**
 * Service Bus's REST data plane in Sluice's terms: a REST send (body bytes, `Content-Type`,
 * the `BrokerProperties` JSON header, one header per application property) becomes the
 * message JSON Sluice's `send` takes, a batch (`application/vnd.microsoft.servicebus.json`)
 * a list of them, and a received message becomes the REST answer's body and headers. Pure:
 * no I/O, no broker.
 *
 * Bodies. REST bodies are bytes with a content type; Sluice stores a JSON value. A body that
 * is JSON text written exactly as Sluice writes JSON is stored as that value, so Sluice's API
 * and `sluice/client` see the object (as an Azure SDK receiver sees a REST-sent JSON body)
 * and a REST receiver gets the same bytes back. Any other UTF-8 text is stored as a string
 * marked `{"body":"text"}` in `$sluice-types`, and anything else as base64 marked
 * `{"body":"bytes"}`; a REST receiver gets exactly the bytes that were sent.
 *
 * Property names. API Gateway hands Lambda lower-cased header names (the local runtime does
 * the same), so a property sent as the header `Priority` arrives as `priority`. Names keep
 * their case where the request spells them in JSON (a batch's `UserProperties`), or when
 * the request lists their spelling in `Sluice-Property-Names: Priority, Customer` (quoted
 * or not, so that the same request can go to Service Bus, which keeps it as a string
 * property). Filters match names without regard to case (as in Service Bus) either way.
 */
import { BrokerError, badRequest } from '../../errors.js';
import { decodeUtf8, parseJsonText } from '../../json.js';
import { checkSize, parseMessage, type PropertyValue } from '../../messages/schema.js';
import type { ReceivedMessage } from '../../messages/item.js';
import { TYPES_PROPERTY } from '../../messages/types-property.js';
import { parseDuration } from '../../durations.js';
import { parseInstant, UNLIMITED_ABOVE_MS } from '../../validation.js';
import { formatPropertyValue, formatRfc1123, isHeaderText, isToken, parsePropertyValue, parseRfc1123 } from './properties.js';

export const BATCH_CONTENT_TYPE = 'application/vnd.microsoft.servicebus.json';
export const PROPERTY_NAMES_HEADER = 'sluice-property-names';

/** A message as Sluice's `send` takes it (docs/http-api.md, "Messages"). */
export type WireMessage = Record<string, unknown> & { body: unknown; applicationProperties?: Record<string, PropertyValue> };

/**
 * Request headers that are HTTP's, Service Bus's or a gateway's own, never a property.
 * Lower-case, as API Gateway gives them.
 */
const NOT_PROPERTIES = new Set([
  'accept',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'authorization',
  'brokerproperties',
  'cache-control',
  'connection',
  'content-encoding',
  'content-language',
  'content-length',
  'content-md5',
  'content-type',
  'cookie',
  'date',
  'expect',
  'forwarded',
  'from',
  'host',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'keep-alive',
  'max-forwards',
  'origin',
  'pragma',
  'proxy-authorization',
  'proxy-connection',
  'range',
  'referer',
  'te',
  'traceparent',
  'tracestate',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'via',
  'warning',
  PROPERTY_NAMES_HEADER,
]);
const NOT_PROPERTY_PREFIXES = ['x-ms-', 'x-amz-', 'x-amzn-', 'x-forwarded-', 'sec-', 'cf-'];

const isPropertyHeader = (name: string) => !NOT_PROPERTIES.has(name) && !NOT_PROPERTY_PREFIXES.some((p) => name.startsWith(p)) && name !== 'x-real-ip';

/** BrokerProperties a sender may set, and the message field each becomes; others are ignored, as Service Bus ignores them. */
const TEXT_FIELDS: Record<string, string> = {
  MessageId: 'messageId',
  CorrelationId: 'correlationId',
  SessionId: 'sessionId',
  Label: 'subject',
  ReplyTo: 'replyTo',
  To: 'to',
  ReplyToSessionId: 'replyToSessionId',
  PartitionKey: 'partitionKey',
};

/** The field of a Sluice message as the REST request names it, for 400s. */
function restFieldOf(field: string, prefix: string): string {
  const text = Object.entries(TEXT_FIELDS).find(([, f]) => f === field)?.[0];
  if (text) return `${prefix}BrokerProperties.${text}`;
  if (field === 'timeToLive') return `${prefix}BrokerProperties.TimeToLive`;
  if (field === 'scheduledEnqueueTime') return `${prefix}BrokerProperties.ScheduledEnqueueTimeUtc`;
  if (field === 'contentType') return 'Content-Type';
  if (field.startsWith('applicationProperties.')) return `${prefix}${prefix ? 'UserProperties.' : ''}${field.slice('applicationProperties.'.length)}`;
  return prefix ? `${prefix}Body` : 'body';
}

/** Checks a message as Sluice's send will, naming the REST field on a 400 or 413. */
function checked(wire: WireMessage, prefix: string): WireMessage {
  try {
    checkSize(parseMessage(wire));
  } catch (e) {
    if (!(e instanceof BrokerError) || e.options.field === undefined) throw e;
    const field = restFieldOf(e.options.field, prefix);
    const detail = e.message.startsWith(`${e.options.field}: `) ? e.message.slice(e.options.field.length + 2) : e.message;
    throw new BrokerError(e.code, `${field}: ${detail}`, { field });
  }
  return wire;
}

/** Seconds (BrokerProperties.TimeToLive, a double) as Sluice's duration; unlimited (TimeSpan.MaxValue) as none. */
function timeToLiveOf(seconds: unknown, field: string): string | undefined {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) throw badRequest(field, 'must be a number of seconds above zero');
  const ms = Math.round(seconds * 1000);
  if (ms > UNLIMITED_ABOVE_MS) return undefined;
  if (ms < 1) throw badRequest(field, 'must be at least 0.001 seconds');
  return `PT${ms / 1000}S`;
}

/** .NET TimeSpan text (`[-][d.]hh:mm:ss[.fffffff]`), as batch examples write TimeToLiveTimeSpan. */
function timeSpanSeconds(text: unknown, field: string): number {
  const m = typeof text === 'string' ? /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?$/.exec(text) : null;
  if (!m) throw badRequest(field, 'must be a TimeSpan such as "0.00:00:40" ([d.]hh:mm:ss[.fffffff])');
  const [, d, h, min, s, frac] = m;
  if (Number(h) > 23 || Number(min) > 59 || Number(s) > 59) throw badRequest(field, 'must be a TimeSpan such as "0.00:00:40" ([d.]hh:mm:ss[.fffffff])');
  return ((Number(d ?? 0) * 24 + Number(h)) * 60 + Number(min)) * 60 + Number(s) + Number(`0.${frac ?? '0'}`);
}

/** The message fields a BrokerProperties object sets (`field` names it in 400s). */
export function fromBrokerProperties(value: unknown, field: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(field, 'must be a JSON object');
  const props = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, target] of Object.entries(TEXT_FIELDS)) {
    const v = props[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') throw badRequest(`${field}.${name}`, 'must be a string');
    out[target] = v;
  }
  if (out.sessionId !== undefined && out.partitionKey !== undefined && out.sessionId !== out.partitionKey) {
    throw badRequest(`${field}.PartitionKey`, 'must equal SessionId when both are set');
  }
  if (props.TimeToLive !== undefined && props.TimeToLive !== null) {
    const ttl = timeToLiveOf(props.TimeToLive, `${field}.TimeToLive`);
    if (ttl) out.timeToLive = ttl;
  } else if (props.TimeToLiveTimeSpan !== undefined && props.TimeToLiveTimeSpan !== null) {
    const ttl = timeToLiveOf(timeSpanSeconds(props.TimeToLiveTimeSpan, `${field}.TimeToLiveTimeSpan`), `${field}.TimeToLiveTimeSpan`);
    if (ttl) out.timeToLive = ttl;
  }
  const at = props.ScheduledEnqueueTimeUtc;
  if (at !== undefined && at !== null) {
    const ms = typeof at === 'string' ? (parseRfc1123(at) ?? parseInstant(at)) : undefined;
    if (ms === undefined) throw badRequest(`${field}.ScheduledEnqueueTimeUtc`, 'must be an RFC 1123 date such as "Sun, 06 Nov 1994 08:49:37 GMT"');
    out.scheduledEnqueueTime = new Date(ms).toISOString();
  }
  return out;
}

/** How a REST body is kept: its JSON value when it is JSON as Sluice writes it, else marked text or bytes. */
export function bodyFromBytes(bytes: Uint8Array): { body: unknown; kind?: 'text' | 'bytes' } {
  let text: string;
  try {
    text = decodeUtf8(bytes);
  } catch {
    return { body: Buffer.from(bytes).toString('base64'), kind: 'bytes' };
  }
  return bodyFromText(text);
}

export function bodyFromText(text: string): { body: unknown; kind?: 'text' } {
  if (text.length > 0 && /^[[{"tfn\-0-9]/.test(text)) {
    try {
      const value = parseJsonText(text);
      if (JSON.stringify(value) === text) return { body: value };
    } catch {
      // Not JSON: kept as text.
    }
  }
  return { body: text, kind: 'text' };
}

function withTypes(props: Record<string, PropertyValue>, kind: string | undefined, dates: readonly string[]): Record<string, PropertyValue> {
  if (props[TYPES_PROPERTY] !== undefined) throw badRequest(TYPES_PROPERTY, 'is reserved for Sluice');
  if (kind || dates.length) props[TYPES_PROPERTY] = JSON.stringify({ ...(kind ? { body: kind } : {}), ...(dates.length ? { dates } : {}) });
  return props;
}

/** The spellings `Sluice-Property-Names` gives, by lower-case name. */
function spellings(header: string | undefined, present: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  if (header === undefined) return out;
  let list = header.trim();
  if (list.length >= 2 && list.startsWith('"') && list.endsWith('"')) list = list.slice(1, -1);
  for (const raw of list.split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (!isToken(name)) throw badRequest('Sluice-Property-Names', `'${name.slice(0, 60)}' is not a header name`);
    if (!present.has(name.toLowerCase())) throw badRequest('Sluice-Property-Names', `names '${name}', which no property header carries`);
    out.set(name.toLowerCase(), name);
  }
  return out;
}

export interface RestSendRequest {
  /** Header names lower-case, as API Gateway gives them. */
  headers: Readonly<Record<string, string | undefined>>;
  body: Uint8Array;
}

/** The message of a single REST send, checked as Sluice's send will check it. */
export function messageFromRequest(req: RestSendRequest): WireMessage {
  const broker = req.headers.brokerproperties;
  const fields = broker === undefined || broker.trim() === '' ? {} : fromBrokerProperties(parseJsonText(broker, 'BrokerProperties'), 'BrokerProperties');
  const headerNames = Object.keys(req.headers).filter((h) => isPropertyHeader(h) && req.headers[h] !== undefined);
  const spelled = spellings(req.headers[PROPERTY_NAMES_HEADER], new Set(headerNames));
  const props: Record<string, PropertyValue> = Object.create(null) as Record<string, PropertyValue>;
  const dates: string[] = [];
  for (const header of headerNames) {
    const name = spelled.get(header) ?? header;
    const { value, dated } = parsePropertyValue(req.headers[header]!, name);
    props[name] = value;
    if (dated) dates.push(name);
  }
  const { body, kind } = bodyFromBytes(req.body);
  const wire: WireMessage = { body, ...fields };
  const contentType = req.headers['content-type'];
  if (contentType) wire.contentType = contentType;
  const applicationProperties = withTypes(props, kind, dates);
  if (Object.keys(applicationProperties).length > 0) wire.applicationProperties = { ...applicationProperties };
  return checked(wire, '');
}

/** A batch's entries in the order sent, each checked before any is stored (S4). */
export function messagesFromBatch(text: string): WireMessage[] {
  const value = parseJsonText(text, 'body');
  if (!Array.isArray(value) || value.length === 0)
    throw badRequest('body', 'must be a JSON array of one or more messages ({"Body": ..., "BrokerProperties": {...}, "UserProperties": {...}})');
  return value.map((entry: unknown, i) => {
    const at = `[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw badRequest(at, 'must be a JSON object with a "Body"');
    const e = entry as Record<string, unknown>;
    if (typeof e.Body !== 'string') throw badRequest(`${at}.Body`, e.Body === undefined ? 'is required' : 'must be a string');
    const fields = fromBrokerProperties(e.BrokerProperties, `${at}.BrokerProperties`);
    const user = e.UserProperties;
    const props: Record<string, PropertyValue> = Object.create(null) as Record<string, PropertyValue>;
    if (user !== undefined && user !== null) {
      if (typeof user !== 'object' || Array.isArray(user)) throw badRequest(`${at}.UserProperties`, 'must be a JSON object');
      for (const [name, v] of Object.entries(user)) {
        if (v !== null && typeof v === 'object') throw badRequest(`${at}.UserProperties.${name}`, 'must be a string, number, boolean or null');
        props[name] = v as PropertyValue;
      }
    }
    const { body, kind } = bodyFromText(e.Body);
    const wire: WireMessage = { body, ...fields };
    const applicationProperties = withTypes(props, kind, []);
    if (Object.keys(applicationProperties).length > 0) wire.applicationProperties = { ...applicationProperties };
    return checked(wire, `${at}.`);
  });
}

/** Is this request's body a batch? */
export const isBatch = (contentType: string | undefined) => contentType?.split(';', 1)[0]!.trim().toLowerCase() === BATCH_CONTENT_TYPE;

// ------------------------------------------------------------------------------------------
// Out: a received message as the REST answer.

/** TimeSpan.MaxValue in seconds: what Service Bus writes for a message that never expires. */
const UNLIMITED_SECONDS = '922337203685.47754';

/** Response headers a property may not take: HTTP's, the REST answer's own, and what API Gateway adds. */
const RESERVED_OUT = new Set([
  'brokerproperties',
  'content-type',
  'content-length',
  'content-encoding',
  'location',
  'date',
  'server',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'set-cookie',
  'www-authenticate',
  'apigw-requestid',
  'vary',
  'etag',
  'cache-control',
]);

export interface RestMessage {
  /** Header names as Service Bus writes them; the property headers as the properties are named. */
  headers: Record<string, string>;
  /** The body: text, or bytes (base64 on API Gateway's wire). */
  body: string | Buffer;
  /** Properties no header can carry (a name that is not a header name, a null, text outside ISO-8859-1). */
  skipped: string[];
}

/** JSON with every character outside ASCII escaped, so that a header can carry it as it is. */
const asciiJson = (value: unknown) => JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** `BrokerProperties` of a received message; sequence numbers as bare JSON numbers, exact (Service Bus writes them so). */
export function brokerPropertiesOf(m: ReceivedMessage): string {
  const props: Record<string, unknown> = {};
  const numbers = new Map<string, string>();
  const bare = (name: string, digits: string) => {
    const mark = `\u0000${name}\u0000`;
    numbers.set(JSON.stringify(mark), digits);
    props[name] = mark;
  };
  const ms = (iso: string) => Date.parse(iso);
  if (m.correlationId !== undefined) props.CorrelationId = m.correlationId;
  if (m.sessionId !== undefined) props.SessionId = m.sessionId;
  props.DeliveryCount = m.deliveryCount;
  if (m.enqueuedSequenceNumber) bare('EnqueuedSequenceNumber', m.enqueuedSequenceNumber);
  props.EnqueuedTimeUtc = formatRfc1123(ms(m.enqueuedTime));
  if (m.subject !== undefined) props.Label = m.subject;
  if (m.lockToken !== undefined) props.LockToken = m.lockToken;
  if (m.lockedUntil !== undefined) props.LockedUntilUtc = formatRfc1123(ms(m.lockedUntil));
  props.MessageId = m.messageId;
  if (m.partitionKey !== undefined) props.PartitionKey = m.partitionKey;
  if (m.replyTo !== undefined) props.ReplyTo = m.replyTo;
  if (m.replyToSessionId !== undefined) props.ReplyToSessionId = m.replyToSessionId;
  if (m.scheduledEnqueueTime !== undefined) props.ScheduledEnqueueTimeUtc = formatRfc1123(ms(m.scheduledEnqueueTime));
  bare('SequenceNumber', m.sequenceNumber);
  props.State = m.state;
  if (m.timeToLive === null || m.timeToLive === undefined) bare('TimeToLive', UNLIMITED_SECONDS);
  else props.TimeToLive = parseDuration(m.timeToLive, 'timeToLive') / 1000;
  if (m.to !== undefined) props.To = m.to;
  if (m.deadLetterSource) props.DeadLetterSource = m.deadLetterSource;
  let json = asciiJson(props);
  for (const [quoted, digits] of numbers) json = json.replace(quoted, digits);
  return json;
}

/** The types `$sluice-types` records for a stored message. */
function typesOf(props: Record<string, PropertyValue>): { body?: string; dates: Set<string> } {
  const marker = props[TYPES_PROPERTY];
  if (typeof marker !== 'string') return { dates: new Set() };
  try {
    const t = JSON.parse(marker) as { body?: unknown; dates?: unknown };
    return {
      ...(typeof t.body === 'string' ? { body: t.body } : {}),
      dates: new Set(Array.isArray(t.dates) ? t.dates.filter((d): d is string => typeof d === 'string') : []),
    };
  } catch {
    return { dates: new Set() };
  }
}

/** A received message as a REST answer's headers and body; `location` is its lock URL under peek-lock. */
export function restMessageOf(m: ReceivedMessage, location?: string): RestMessage {
  const props = (m.applicationProperties ?? {}) as Record<string, PropertyValue>;
  const types = typesOf(props);
  const headers: Record<string, string> = {};
  let body: string | Buffer;
  if (types.body === 'bytes' && typeof m.body === 'string') body = Buffer.from(m.body, 'base64');
  else if (types.body === 'text' && typeof m.body === 'string') body = m.body;
  else body = JSON.stringify(m.body ?? null);
  headers['Content-Type'] = m.contentType ?? (types.body === 'bytes' ? 'application/octet-stream' : types.body === 'text' ? 'text/plain' : 'application/json');
  headers.BrokerProperties = brokerPropertiesOf(m);
  if (location) headers.Location = location;
  const taken = new Set(Object.keys(headers).map((h) => h.toLowerCase()));
  const skipped: string[] = [];
  const emit = (name: string, value: PropertyValue, dated: boolean) => {
    const text = formatPropertyValue(value, dated);
    const lower = name.toLowerCase();
    if (text === undefined || !isToken(name) || taken.has(lower) || RESERVED_OUT.has(lower) || !isHeaderText(text)) {
      skipped.push(name);
      return;
    }
    taken.add(lower);
    headers[name] = text;
  };
  for (const [name, value] of Object.entries(props)) {
    if (name !== TYPES_PROPERTY) emit(name, value, types.dates.has(name));
  }
  // Service Bus keeps a dead-letter reason and description as application properties.
  if (m.deadLetterReason) emit('DeadLetterReason', m.deadLetterReason, false);
  if (m.deadLetterErrorDescription) emit('DeadLetterErrorDescription', m.deadLetterErrorDescription, false);
  return { headers, body, skipped };
}
