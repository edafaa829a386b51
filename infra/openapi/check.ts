/**
 * A small JSON Schema checker, enough for the schemas of docs/openapi.json: the tests use it
 * to hold examples, the presenters' output and real answers to the document. Not a general
 * validator (formats are not checked).
 */
import type { JsonSchema } from './schemas.js';

/** Follows a local `$ref` (`#/components/schemas/X`) in `root`. */
export function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

const typeOf = (value: unknown): string => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
};

const typeMatches = (type: string, value: unknown) => {
  const actual = typeOf(value);
  return type === actual || (type === 'number' && actual === 'integer');
};

export interface ValidateOptions {
  /**
   * Read an object schema that names its properties and says nothing of others as closed: a
   * field it does not name is a problem. The document leaves response objects open for
   * clients; the tests hold answers to showing only what is documented.
   */
  closed?: boolean;
}

/** The problems of `value` under `schema` (empty when it conforms). */
export function validate(schema: unknown, value: unknown, root: unknown, at = '$', options: ValidateOptions = {}): string[] {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [`${at}: no value is allowed`];
  const s = schema as JsonSchema;
  const errors: string[] = [];
  if (typeof s.$ref === 'string') {
    const target = resolveRef(root, s.$ref);
    if (target === undefined) return [`${at}: unresolvable $ref ${s.$ref}`];
    errors.push(...validate(target, value, root, at, options));
  }
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) errors.push(...validate(sub, value, root, at, options));
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => validate(sub, value, root, at, options).length === 0)) {
    errors.push(`${at}: matches none of anyOf (${s.anyOf.map((sub) => validate(sub, value, root, at, options)[0]).join(' | ')})`);
  }
  if (Array.isArray(s.oneOf) && s.oneOf.filter((sub) => validate(sub, value, root, at, options).length === 0).length !== 1) {
    errors.push(`${at}: does not match exactly one of oneOf`);
  }
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(value)) errors.push(`${at}: must be ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`);
  }
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    if (!types.some((t) => typeMatches(t, value))) return [...errors, `${at}: is ${typeOf(value)}, not ${types.join(' or ')}`];
  }
  const kind = typeOf(value);
  if (kind === 'object') {
    const obj = value as Record<string, unknown>;
    const props = (s.properties ?? {}) as Record<string, unknown>;
    for (const key of (s.required ?? []) as string[]) if (!Object.hasOwn(obj, key)) errors.push(`${at}: ${key} is required`);
    if (typeof s.minProperties === 'number' && Object.keys(obj).length < s.minProperties) errors.push(`${at}: too few properties`);
    for (const [key, v] of Object.entries(obj)) {
      if (Object.hasOwn(props, key)) errors.push(...validate(props[key], v, root, `${at}.${key}`, options));
      else if (s.additionalProperties === false || (options.closed && s.properties && s.additionalProperties === undefined))
        errors.push(`${at}: ${key} is not allowed`);
      else if (typeof s.additionalProperties === 'object') errors.push(...validate(s.additionalProperties, v, root, `${at}.${key}`, options));
      if (s.propertyNames) errors.push(...validate(s.propertyNames, key, root, `${at}[name ${key}]`, options));
    }
  }
  if (kind === 'array') {
    const arr = value as unknown[];
    if (typeof s.minItems === 'number' && arr.length < s.minItems) errors.push(`${at}: fewer than ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && arr.length > s.maxItems) errors.push(`${at}: more than ${s.maxItems} items`);
    if (s.uniqueItems === true && new Set(arr.map((x) => JSON.stringify(x))).size !== arr.length) errors.push(`${at}: items repeat`);
    if (s.items !== undefined) arr.forEach((item, i) => errors.push(...validate(s.items, item, root, `${at}[${i}]`, options)));
  }
  if (kind === 'string') {
    const str = value as string;
    if (typeof s.minLength === 'number' && [...str].length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
    if (typeof s.maxLength === 'number' && [...str].length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(str)) errors.push(`${at}: does not match ${s.pattern}`);
  }
  if (kind === 'integer' || kind === 'number') {
    const n = value as number;
    if (typeof s.minimum === 'number' && n < s.minimum) errors.push(`${at}: less than ${s.minimum}`);
    if (typeof s.maximum === 'number' && n > s.maximum) errors.push(`${at}: more than ${s.maximum}`);
  }
  return errors;
}
