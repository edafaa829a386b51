/** Reading a request's JSON body so that nothing in it is silently changed or dangerous (B2). */
import { badRequest } from './errors.js';

/**
 * Deepest nesting a request body may have, counting every array and object from the top.
 * Application properties are flat and a send wraps the message body once or twice
 * (`{"messages": [{"body": ...}]}`), so this is nearly all the message body's own. 256 is four
 * times System.Text.Json's default (64, which .NET Service Bus clients serialize with) and
 * twice serde_json's (128), far past any real document, and far below where recursive code
 * (JSON.stringify when storing, the presenters, zod) runs out of stack, which is a few
 * thousand levels: past it a request failed as a retryable 500 and was retried for ever.
 */
export const MAX_JSON_DEPTH = 256;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Bytes as UTF-8 text; bytes that are not UTF-8 are refused rather than replaced with U+FFFD. */
export function decodeUtf8(bytes: Uint8Array, field = 'body'): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw badRequest(field, 'is not valid UTF-8');
  }
}

// A surrogate that is not half of a pair: JSON can spell it ("\ud800") but UTF-8 cannot
// carry it, so DynamoDB would store U+FFFD in its place.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// Strings (skipped) and number literals of JSON text that has already parsed.
const tokens = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** The values of integer literals that a double cannot hold exactly (9007199254740993 reads as ...992). */
function inexactIntegers(text: string): Set<number> {
  const found = new Set<number>();
  if (!/\d{16}/.test(text)) return found;
  for (const [token] of text.matchAll(tokens)) {
    if (token.length < 16 || token.startsWith('"') || /[.eE]/.test(token)) continue;
    const value = Number(token);
    if (Number.isFinite(value) && BigInt(token) !== BigInt(value)) found.add(value);
  }
  return found;
}

// Array members as in the batch's field names (`messages[1].body`), object members with a dot.
const childPath = (parent: string | null, key: string | number) =>
  typeof key === 'number' ? `${parent ?? ''}[${key}]` : parent === null ? key : `${parent}.${key}`;

/**
 * JSON text to a value, refusing what JSON.parse accepts but the broker cannot keep as sent:
 * nesting deeper than MAX_JSON_DEPTH, numbers beyond double range (`1e400` parses as
 * Infinity, which JSON.stringify writes as null), integers a double rounds and lone
 * surrogates in strings. The field
 * named is the path to the offending value (`applicationProperties.n`, `messages.1.body`), or
 * `field` itself for the whole text. JSON.parse keeps a `__proto__` key as an own property.
 */
export function parseJsonText(text: string, field = 'body'): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw badRequest(field, 'is not valid JSON');
  }
  const inexact = inexactIntegers(text);
  // Iterative, so the check itself cannot run out of stack on the input it guards against.
  // `path` is null at the top, so the top's members are named by their own key.
  const stack: { value: unknown; path: string | null; depth: number }[] = [{ value, path: null, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop()!;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw badRequest(path ?? field, 'is a number beyond the range of a double');
      if (inexact.has(v)) throw badRequest(path ?? field, 'is an integer beyond 2^53 that a JSON number cannot carry exactly; send it as a string');
    } else if (typeof v === 'string') {
      if (loneSurrogate.test(v)) throw badRequest(path ?? field, 'contains a lone surrogate (not valid Unicode)');
    } else if (typeof v === 'object' && v !== null) {
      if (depth >= MAX_JSON_DEPTH) throw badRequest(field, `is nested deeper than ${MAX_JSON_DEPTH} levels`);
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: childPath(path, i), depth: depth + 1 });
      } else {
        const keys = Object.keys(v);
        for (let i = keys.length - 1; i >= 0; i--) {
          const key = keys[i]!;
          if (loneSurrogate.test(key)) throw badRequest(childPath(path, key), 'the name contains a lone surrogate (not valid Unicode)');
          stack.push({ value: (v as Record<string, unknown>)[key], path: childPath(path, key), depth: depth + 1 });
        }
      }
    }
  }
  return value;
}
