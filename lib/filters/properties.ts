import type { Value } from './ast.js';
import { FilterEvaluationError } from './errors.js';
import type { FilterMessage, PropertyValue, SystemField } from './message.js';

/**
 * `sys.` names, lower-cased, to message fields. Service Bus matches property names without
 * regard to case ("Property names are case-insensitive", SQLFilter syntax, Considerations).
 * `label` is the old name of `subject`.
 */
const SYSTEM_NAMES: ReadonlyMap<string, SystemField> = new Map<string, SystemField>([
  ['messageid', 'messageId'],
  ['correlationid', 'correlationId'],
  ['subject', 'subject'],
  ['label', 'subject'],
  ['to', 'to'],
  ['replyto', 'replyTo'],
  ['replytosessionid', 'replyToSessionId'],
  ['sessionid', 'sessionId'],
  ['contenttype', 'contentType'],
  ['partitionkey', 'partitionKey'],
  ['deliverycount', 'deliveryCount'],
  ['sequencenumber', 'sequenceNumber'],
  ['enqueuedtimeutc', 'enqueuedTimeUtc'],
  ['size', 'size'],
]);

/**
 * What a rule action may change. Identity, session, partition and broker-assigned fields
 * stay as the broker set them: changing them on one subscription's copy would break
 * duplicate detection, session and partition routing, or the broker's own bookkeeping.
 */
const SETTABLE = ['subject', 'to', 'replyTo', 'replyToSessionId', 'correlationId', 'contentType'] as const;

export type SettableField = (typeof SETTABLE)[number];

export function systemField(name: string): SystemField | undefined {
  return SYSTEM_NAMES.get(name.toLowerCase());
}

export function isSettable(field: SystemField): field is SettableField {
  return (SETTABLE as readonly string[]).includes(field);
}

/**
 * The key an application property name refers to: the exact spelling if present, else the
 * first key equal ignoring case (names are case-insensitive in Service Bus filters).
 */
export function resolveKey(props: Record<string, PropertyValue>, name: string): string | undefined {
  if (Object.hasOwn(props, name)) return name;
  const lower = name.toLowerCase();
  return Object.keys(props).find((key) => key.toLowerCase() === lower);
}

export function readUser(msg: FilterMessage, name: string): Value {
  const key = resolveKey(msg.properties, name);
  return key === undefined ? null : fromProperty(msg.properties[key], name);
}

export function readSystem(msg: FilterMessage, field: SystemField): Value {
  const raw: unknown = msg.system[field];
  if (raw === undefined || raw === null) return null;
  if (field === 'sequenceNumber' && typeof raw === 'string') {
    if (!/^-?\d{1,19}$/.test(raw)) {
      throw new FilterEvaluationError(`sys.SequenceNumber '${raw}' is not a 64-bit integer`);
    }
    return BigInt(raw);
  }
  return fromProperty(raw, `sys.${field}`);
}

/**
 * JSON has one number type; Service Bus has Int64 and Double. A number that is a safe
 * integer counts as Int64 (so 5 / 2 = 2 as in Service Bus), any other as Double.
 */
function fromProperty(raw: unknown, name: string): Value {
  switch (typeof raw) {
    case 'string':
    case 'boolean':
      return raw;
    case 'number':
      return Number.isSafeInteger(raw) ? BigInt(raw) : raw;
    default:
      if (raw === null) return null;
      throw new FilterEvaluationError(`Property '${name}' has an unsupported type (${typeof raw})`);
  }
}

/** The stored form of a value an action assigns to an application property. */
export function toProperty(value: Value, name: string): PropertyValue {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new FilterEvaluationError(`Cannot store ${value} in property '${name}'`);
  }
  return value;
}
