/**
 * Atom request bodies (Service Bus's `QueueDescription`, `TopicDescription`,
 * `SubscriptionDescription`, `RuleDescription`) read into the bodies Sluice's broker takes.
 * Elements are read by local name in any order; elements Sluice has no property for
 * (EnableBatchedOperations, UserMetadata, EnableExpress, ...) are accepted and ignored, as the
 * SDKs send back everything they read. Every bad value is a 400 naming its element.
 */
import { badRequest } from '../../errors.js';
import { isRight, type Right } from '../../auth/index.js';
import { validateName } from '../../names.js';
import { parseDuration } from '../../durations.js';
import { PARAMETER_NAME, type ActionSpec, type FilterSpec, type ParameterValue } from '../../filters/index.js';
import { child, childText, parseXml, type XmlElement } from '../xml.js';
import { ENTITY_ELEMENTS, UNLIMITED_MS, type DescriptionKind } from './elements.js';

/** The description element of an Atom entry (or a bare description), and its kind. */
export function readDescription(text: string): { kind: DescriptionKind; description: XmlElement } {
  const root = parseXml(text);
  const description = root.name === 'entry' ? child(root, 'content')?.children[0] : root;
  const kind = description?.name.replace(/Description$/, '');
  if (!description || !kind || !['Queue', 'Topic', 'Subscription', 'Rule'].includes(kind) || !description.name.endsWith('Description')) {
    throw badRequest('body', 'must be an Atom entry whose content is a QueueDescription, TopicDescription, SubscriptionDescription or RuleDescription');
  }
  return { kind: kind as DescriptionKind, description };
}

const bool = (text: string, field: string) => {
  const t = text.trim().toLowerCase();
  if (t === 'true' || t === 'false') return t === 'true';
  throw badRequest(field, 'must be true or false');
};

const integer = (text: string, field: string) => {
  const t = text.trim();
  if (!/^-?\d{1,16}$/.test(t) || !Number.isSafeInteger(Number(t))) throw badRequest(field, 'must be a whole number');
  return Number(t);
};

/** An xs:duration as Sluice takes it (ISO 8601 text); Service Bus's TimeSpan.MaxValue, or more, is unlimited (null). */
function duration(text: string, field: string, unlimited: boolean): string | null {
  const t = text.trim();
  const ms = parseDuration(t, field);
  if (ms >= UNLIMITED_MS) {
    if (unlimited) return null;
    throw badRequest(field, 'must not be unlimited');
  }
  return t;
}

/** `sb://host/name`, `https://host/name` or `name`: the entity a forward names (Sluice's bare name: the queue, else the topic). */
export function forwardTarget(text: string, field: string): string | null {
  const t = text.trim();
  if (t === '') return null;
  let path = t;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/.exec(t);
  if (scheme) path = t.slice(scheme[0].length);
  path = path.replace(/^\/+|\/+$/g, '');
  if (path === '' || path.includes('/')) throw badRequest(field, `'${t.slice(0, 80)}' must name a queue or topic, e.g. sb://host/orders`);
  try {
    return decodeURIComponent(path);
  } catch {
    throw badRequest(field, 'is not valid percent-encoding');
  }
}

/** The Sluice properties of a queue, topic or subscription description: only those present. */
export function readEntityProperties(kind: Exclude<DescriptionKind, 'Rule'>, description: XmlElement): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(ENTITY_ELEMENTS)) {
    if (!spec.kinds.includes(kind)) continue;
    const el = child(description, name);
    if (el === undefined) continue;
    const text = el.text;
    switch (spec.type) {
      case 'bool':
        out[spec.key] = bool(text, name);
        break;
      case 'int':
        out[spec.key] = integer(text, name);
        break;
      case 'duration':
        out[spec.key] = duration(text, name, false);
        break;
      case 'unlimited':
        out[spec.key] = duration(text, name, true);
        break;
      case 'status':
        out[spec.key] = text.trim();
        break;
      case 'forward':
        out[spec.key] = forwardTarget(text, name);
        break;
    }
  }
  return out;
}

/** A `<KeyValueOfstringanyType>` list: SQL parameters or correlation properties, typed by `i:type`. */
function readKeyValues(list: XmlElement | undefined, field: string): Record<string, ParameterValue> | undefined {
  if (list === undefined || list.children.length === 0) return undefined;
  const out: Record<string, ParameterValue> = Object.create(null) as Record<string, ParameterValue>;
  for (const pair of list.children) {
    if (pair.name !== 'KeyValueOfstringanyType') throw badRequest(field, `holds <${pair.name}>, not <KeyValueOfstringanyType>`);
    const key = childText(pair, 'Key');
    const value = child(pair, 'Value');
    if (key === undefined || key === '' || value === undefined) throw badRequest(field, 'every entry needs a Key and a Value');
    const type = (value.attributes.type ?? 'string').replace(/^.*:/, '');
    const text = value.text;
    switch (type) {
      case 'string':
        out[key] = text;
        break;
      case 'boolean':
        out[key] = bool(text, `${field}.${key}`);
        break;
      case 'int':
      case 'long':
      case 'short':
      case 'byte':
      case 'unsignedInt':
      case 'unsignedShort':
      case 'unsignedByte':
        out[key] = integer(text, `${field}.${key}`);
        break;
      case 'double':
      case 'float':
      case 'decimal': {
        const n = Number(text.trim());
        if (text.trim() === '' || !Number.isFinite(n)) throw badRequest(`${field}.${key}`, 'must be a finite number');
        out[key] = n;
        break;
      }
      default:
        // dateTime, duration, guid...: Sluice's property values are strings, numbers and booleans only.
        throw badRequest(`${field}.${key}`, `values of type ${type} are not supported; use a string, number or boolean`);
    }
  }
  return out;
}

const CORRELATION_ELEMENTS: Record<string, string> = {
  CorrelationId: 'correlationId',
  MessageId: 'messageId',
  To: 'to',
  ReplyTo: 'replyTo',
  Label: 'subject',
  SessionId: 'sessionId',
  ReplyToSessionId: 'replyToSessionId',
  ContentType: 'contentType',
};

function sqlParameters(el: XmlElement, field: string): Record<string, ParameterValue> | undefined {
  const params = readKeyValues(child(el, 'Parameters'), `${field}.Parameters`);
  for (const name of Object.keys(params ?? {})) {
    if (!PARAMETER_NAME.test(name)) throw badRequest(`${field}.Parameters`, `'${name.slice(0, 60)}' is not a parameter name (@ and an identifier)`);
  }
  return params;
}

/** A `<Filter i:type=…>` as Sluice's filter spec. */
export function readFilter(el: XmlElement | undefined): FilterSpec {
  if (el === undefined) return { true: {} };
  const type = (el.attributes.type ?? '').replace(/^.*:/, '');
  switch (type) {
    case 'TrueFilter':
      return { true: {} };
    case 'FalseFilter':
      return { false: {} };
    case 'SqlFilter': {
      const sql = childText(el, 'SqlExpression') ?? '';
      const parameters = sqlParameters(el, 'Filter');
      return { sql, ...(parameters ? { parameters } : {}) };
    }
    case 'CorrelationFilter': {
      const correlation: Record<string, unknown> = {};
      for (const [name, key] of Object.entries(CORRELATION_ELEMENTS)) {
        const text = childText(el, name);
        if (text !== undefined && text !== '') correlation[key] = text;
      }
      const properties = readKeyValues(child(el, 'Properties'), 'Filter.Properties');
      if (properties) correlation.properties = properties;
      return { correlation } as FilterSpec;
    }
    default:
      throw badRequest('Filter', `type '${type.slice(0, 40)}' is not SqlFilter, CorrelationFilter, TrueFilter or FalseFilter`);
  }
}

/** An `<Action i:type=…>` as Sluice's action spec, or null for none. */
export function readAction(el: XmlElement | undefined): ActionSpec | null {
  if (el === undefined) return null;
  const type = (el.attributes.type ?? 'EmptyRuleAction').replace(/^.*:/, '');
  if (type === 'EmptyRuleAction') return null;
  if (type !== 'SqlRuleAction') throw badRequest('Action', `type '${type.slice(0, 40)}' is not SqlRuleAction or EmptyRuleAction`);
  const sql = childText(el, 'SqlExpression') ?? '';
  const parameters = sqlParameters(el, 'Action');
  return { sql, ...(parameters ? { parameters } : {}) };
}

/** A RuleDescription (or a subscription's DefaultRuleDescription) as Sluice's rule body, with its name. */
export function readRule(el: XmlElement): { name: string | undefined; body: { filter: FilterSpec; action: ActionSpec | null } } {
  return { name: childText(el, 'Name')?.trim() || undefined, body: { filter: readFilter(child(el, 'Filter')), action: readAction(child(el, 'Action')) } };
}

/**
 * A queue's or topic's `<AuthorizationRules>`: the whole set of its rules (name and rights),
 * or undefined when the element is absent (the rules then stay as they are). Keys given are
 * not taken: Sluice generates every key (A4), and the answer carries them.
 */
export function readAuthorizationRules(description: XmlElement): { keyName: string; rights: Right[] }[] | undefined {
  const el = child(description, 'AuthorizationRules');
  if (el === undefined) return undefined;
  return el.children.map((rule, i) => {
    const field = `AuthorizationRules[${i}]`;
    if (rule.name !== 'AuthorizationRule') throw badRequest(field, `<${rule.name}> is not an AuthorizationRule`);
    const keyName = childText(rule, 'KeyName')?.trim();
    if (!keyName) throw badRequest(`${field}.KeyName`, 'is required');
    validateName('authorizationRule', keyName, `${field}.KeyName`);
    const rights = (child(rule, 'Rights')?.children ?? []).map((r) => r.text.trim());
    const bad = rights.find((r) => !isRight(r));
    if (bad !== undefined || rights.length === 0) throw badRequest(`${field}.Rights`, 'must hold AccessRights of Manage, Send or Listen');
    return { keyName, rights: rights as Right[] };
  });
}
