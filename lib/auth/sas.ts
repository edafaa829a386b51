/**
 * Service Bus shared access signatures (A1-A4, B3): signing, parsing, verification,
 * resource scoping and rights. Pure: no I/O, no clock (callers pass `now`), no logging.
 *
 * Token format (what every official Service Bus client sends):
 *
 *   SharedAccessSignature sr=<enc(uri)>&sig=<enc(base64(hmac))>&se=<expiry>&skn=<enc(keyName)>
 *   hmac = HMAC-SHA256(key = UTF-8 bytes of the key text, data = "<enc(uri)>\n<expiry>")
 *
 * Encoding decisions, checked against the official SDK sources:
 * - The key is used as text (its UTF-8 bytes), NOT base64-decoded: @azure/core-amqp
 *   `signString` (`createHmac("sha256", key)`), Azure.Messaging.ServiceBus
 *   `SharedAccessSignature.BuildSignature` (`new HMACSHA256(Encoding.UTF8.GetBytes(key))`),
 *   azure-amqp-common-go `sas.Signer` (`hmac.New(sha256.New, []byte(key))`),
 *   azure-servicebus (Python) `_generate_sas_token` (`key.encode("utf-8")`).
 * - The signed string uses the URL-ENCODED resource URI, and `sr=` carries that same
 *   encoded text. The SDKs disagree on the encoder (JS `encodeURIComponent`, .NET
 *   `WebUtility.UrlEncode`, Python `quote_plus`, Go `url.QueryEscape` then lower-cased, so
 *   `http%3a%2f%2f...`). They agree on the common URI characters, but not on space, `~`,
 *   `'`, `!*()` or the case of hex digits. So the verifier never re-encodes: it signs the
 *   `sr` text exactly as it arrived. That accepts a token from any of them.
 * - The SDKs lower-case the audience before encoding (JS core-amqp `createToken`:
 *   `encodeURIComponent(audience.toLowerCase())`; .NET `BuildAudienceResource`:
 *   `AbsoluteUri.ToLowerInvariant()`; Go: `strings.ToLower(url.QueryEscape(uri))`).
 *   `signToken` does the same, using `encodeURIComponent` like the JS SDK.
 * - The signature is standard, padded base64, then URL-encoded (`+`, `/` and `=` as `%2B`,
 *   `%2F`, `%3D`). The key name is URL-encoded as well (JS: `encodeURIComponent(keyName)`,
 *   .NET: `WebUtility.UrlEncode`). `se` is a decimal count of seconds since the epoch.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const RIGHTS = ['Manage', 'Send', 'Listen'] as const;
export type Right = (typeof RIGHTS)[number];

export function isRight(value: unknown): value is Right {
  return typeof value === 'string' && (RIGHTS as readonly string[]).includes(value);
}

/** Manage includes Send and Listen (A2). Unknown strings in `granted` grant nothing. */
export function hasRight(granted: readonly Right[], needed: Right): boolean {
  for (const right of granted) {
    if (right === needed || right === 'Manage') return true;
  }
  return false;
}

/**
 * Any malformed token. The message is deliberately generic and never holds any part of the
 * header, so it can be logged and cannot leak which check failed (A3, A4).
 */
export class TokenError extends Error {
  constructor(message = 'Malformed shared access signature') {
    super(message);
    this.name = 'TokenError';
  }
}

export interface ParsedToken {
  /** `sr` after URL-decoding: a URI (`https://host/queues/a`, `sb://host/`) or a path. */
  readonly resource: string;
  /** `sr` exactly as sent; this is the text the client signed. */
  readonly signedResource: string;
  /** The signature as canonical, padded base64 of 32 bytes (already URL-decoded). */
  readonly signature: string;
  /** `se`: expiry in seconds since the epoch. */
  readonly expiry: number;
  /** `se` exactly as sent; this is the text the client signed. */
  readonly signedExpiry: string;
  /** `skn` after URL-decoding. Not covered by the signature: only a lookup hint. */
  readonly keyName: string;
}

const SCHEME = /^SharedAccessSignature +/i;
const MAX_HEADER_LENGTH = 4096;
/** Azure's limit on key names (Azure.Messaging.ServiceBus MaximumKeyNameLength). */
const MAX_KEY_NAME_LENGTH = 256;
const FIELDS = ['sr', 'sig', 'se', 'skn'] as const;
type Field = (typeof FIELDS)[number];
/** Printable ASCII without space: every SDK's encoders only ever emit these. */
const FIELD_TEXT = /^[\x21-\x7e]+$/;
const EXPIRY = /^[0-9]{1,15}$/;
const SIGNATURE_BASE64 = /^[A-Za-z0-9+/]{43}=$/;

/** application/x-www-form-urlencoded value decoding: `+` is a space (.NET, Python encode a space so). */
function formDecode(text: string): string {
  return decodeURIComponent(text.replace(/\+/g, ' '));
}

/**
 * Parses an `Authorization` header value. Total: for any input it returns a ParsedToken or
 * throws a TokenError, never anything else. Strict: exactly the four fields sr, sig, se, skn
 * (lower-case, any order, each once, non-empty), `se` all digits, `sig` 32 bytes of base64.
 * The scheme name is case-insensitive (RFC 9110 auth schemes); surrounding blanks are ignored.
 */
export function parseAuthorizationHeader(header: string | undefined): ParsedToken {
  try {
    return parseStrict(header);
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw new TokenError();
  }
}

function parseStrict(header: unknown): ParsedToken {
  if (typeof header !== 'string') throw new TokenError('Missing shared access signature');
  if (header.length > MAX_HEADER_LENGTH) throw new TokenError();
  const trimmed = header.replace(/^[ \t]+|[ \t]+$/g, '');
  const scheme = SCHEME.exec(trimmed);
  if (!scheme) throw new TokenError();
  const rest = trimmed.slice(scheme[0].length);

  const raw = new Map<Field, string>();
  for (const pair of rest.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new TokenError();
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (!(FIELDS as readonly string[]).includes(name)) throw new TokenError();
    const field = name as Field;
    if (raw.has(field)) throw new TokenError();
    if (!FIELD_TEXT.test(value)) throw new TokenError();
    raw.set(field, value);
  }
  const sr = raw.get('sr');
  const sig = raw.get('sig');
  const se = raw.get('se');
  const skn = raw.get('skn');
  if (sr === undefined || sig === undefined || se === undefined || skn === undefined) {
    throw new TokenError();
  }

  const resource = formDecode(sr);
  if (resource.length === 0) throw new TokenError();

  if (!EXPIRY.test(se)) throw new TokenError();
  const expiry = Number(se);
  if (!Number.isSafeInteger(expiry)) throw new TokenError();

  // `+` stays `+` here: base64 has no spaces, and a client that did not encode the
  // signature sends its `+` as is.
  const signature = decodeURIComponent(sig);
  if (!SIGNATURE_BASE64.test(signature)) throw new TokenError();
  if (Buffer.from(signature, 'base64').toString('base64') !== signature) throw new TokenError();

  const keyName = formDecode(skn);
  if (keyName.length === 0 || keyName.length > MAX_KEY_NAME_LENGTH) throw new TokenError();

  return { resource, signedResource: sr, signature, expiry, signedExpiry: se, keyName };
}

/** base64(HMAC-SHA256(key as UTF-8 text, stringToSign)), not URL-encoded. */
export function computeSignature(key: string, stringToSign: string): string {
  return createHmac('sha256', Buffer.from(key, 'utf8')).update(stringToSign, 'utf8').digest('base64');
}

export interface SignTokenInput {
  /** A URI (`https://host/queues/a`, `sb://host/`) or a path (`/queues/a`). */
  resourceUri: string;
  keyName: string;
  key: string;
  /** Seconds since the epoch. */
  expiresAt: number;
}

/** Makes a token exactly as the @azure/core-amqp SAS token provider does (see file header). */
export function signToken({ resourceUri, keyName, key, expiresAt }: SignTokenInput): string {
  if (resourceUri.length === 0) throw new TypeError('resourceUri must not be empty');
  if (keyName.length === 0 || keyName.length > MAX_KEY_NAME_LENGTH) {
    throw new TypeError(`keyName must have 1 to ${MAX_KEY_NAME_LENGTH} characters`);
  }
  if (key.length === 0) throw new TypeError('key must not be empty');
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) {
    throw new RangeError('expiresAt must be a whole, non-negative number of seconds');
  }
  const sr = encodeURIComponent(resourceUri.toLowerCase());
  const se = String(expiresAt);
  const sig = encodeURIComponent(computeSignature(key, `${sr}\n${se}`));
  return `SharedAccessSignature sr=${sr}&sig=${sig}&se=${se}&skn=${encodeURIComponent(keyName)}`;
}

/**
 * True when `token` was signed with `key` and has not expired. A token is expired from the
 * second `se` on (`now >= se`); a non-finite `nowSeconds` counts as expired. The comparison
 * of signatures is constant-time.
 */
export function verifySignature(token: ParsedToken, key: string, nowSeconds: number): boolean {
  if (!(nowSeconds < token.expiry)) return false;
  if (key.length === 0) return false;
  const expected = createHmac('sha256', Buffer.from(key, 'utf8')).update(`${token.signedResource}\n${token.signedExpiry}`, 'utf8').digest();
  const given = Buffer.from(token.signature, 'base64');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}

/** A new key: 256 random bits, base64, like the keys Service Bus generates (A4). */
export function generateKey(): string {
  return randomBytes(32).toString('base64');
}

const URI_WITH_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

/**
 * The path segments of a resource: a URI with an authority (`https://host/queues/a`,
 * `sb://host`), an absolute path (`/queues/a`) or a relative one (`queues/a`).
 *
 * The host is deliberately ignored: the broker can sit behind any host name (API Gateway's
 * own, a custom domain, localhost), so it cannot know which host a client signed for. What
 * limits a token is its path; a token for one Sluice deployment would also pass on another
 * deployment only if that one holds the same key, which a random key (A4) rules out.
 *
 * Each segment is percent-decoded (so `%24` is `$`) and lower-cased (Service Bus entity
 * names are case-insensitive; the SDKs lower-case `sr`). A single trailing `/` is ignored.
 * Fails closed (undefined) on anything a router might read differently: a query or fragment,
 * an empty interior segment (`//`), `.` or `..`, an encoded `/` or `\`, a control character
 * or a bad escape (a session id, which is no name, may hold the last three). Undefined covers
 * nothing and is covered by nothing.
 */
export function resourceSegments(resource: string): string[] | undefined {
  const read = readResource(resource);
  return 'segments' in read ? read.segments : undefined;
}

/**
 * `resourceSegments` with the reason it failed: `badName` is the 1-based index of the first
 * segment that cannot be a name at all (an escape that does not decode, or one that decodes
 * to `/`, `\` or a control character), which is bad input, not a question of scope (B2);
 * `unreadable` is anything else a router might read differently (a query or fragment, `//`,
 * `.` or `..`).
 */
export function readResource(resource: string): { segments: string[] } | { badName: number } | { unreadable: true } {
  let path = resource;
  const authority = URI_WITH_AUTHORITY.exec(path);
  if (authority) path = path.slice(authority[0].length);
  if (path.includes('?') || path.includes('#')) return { unreadable: true };
  if (path.startsWith('/')) path = path.slice(1);
  if (path.endsWith('/')) path = path.slice(0, -1);
  if (path.length === 0) return { segments: [] };
  const segments: string[] = [];
  let structural = false;
  const raw = path.split('/');
  for (let i = 0; i < raw.length; i++) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw[i]!);
    } catch {
      return { badName: i + 1 };
    }
    // A session id (N1: the segment after `sessions`, past the entity) is not a name: Service
    // Bus allows any characters in it, `/` included. Segments are compared whole and never
    // split again, so a `/` inside one cannot reach past it.
    const sessionId = i >= 3 && segments[i - 1] === 'sessions';
    // eslint-disable-next-line no-control-regex -- a segment holding a control character is a bad name
    if (!sessionId && /[/\\\x00-\x1f\x7f]/.test(segment)) return { badName: i + 1 };
    if (segment.length === 0 || segment === '.' || segment === '..') structural = true;
    segments.push(segment.toLowerCase());
  }
  return structural ? { unreadable: true } : { segments };
}

/** True when `scope` is a whole-segment prefix of `target` (equal counts). */
export function segmentsCover(scope: readonly string[], target: readonly string[]): boolean {
  if (scope.length > target.length) return false;
  return scope.every((segment, i) => segment === target[i]);
}

/**
 * True when a token whose `sr` is `tokenResource` reaches `requestPath` (A2, B3): the token's
 * path is a prefix of the request's on whole, case-insensitive, decoded segments. So
 * `/queues/a` covers `/queues/a`, `/queues/a/messages`, `/queues/a/$deadletterqueue/...`
 * but not `/queues/ab`; a namespace-wide `sr` (the endpoint root) covers every path. The
 * host part of `sr` is ignored (see `resourceSegments`).
 */
export function resourceCovers(tokenResource: string, requestPath: string): boolean {
  const scope = resourceSegments(tokenResource);
  const target = resourceSegments(requestPath);
  if (scope === undefined || target === undefined) return false;
  return segmentsCover(scope, target);
}

/**
 * Joins decoded segments back into a path that `resourceSegments` reads as the same segments:
 * only `%`, `?` and `#` are escaped, so `$deadletterqueue` stays readable.
 */
export function joinSegments(segments: readonly string[]): string {
  return `/${segments.map((s) => s.replace(/[%?#]/g, (c) => encodeURIComponent(c))).join('/')}`;
}

/**
 * The canonical spelling of a resource path: decoded, lower-case segments joined by `/`,
 * `/` for the namespace (`https://Host/Queues/A/` and `/queues/a` both give `/queues/a`).
 * Rules should be stored under this spelling of their scope: it is what `authorize` passes
 * to `findRule`. Undefined when the path is unusable.
 */
export function canonicalPath(resource: string): string | undefined {
  const segments = resourceSegments(resource);
  return segments === undefined ? undefined : joinSegments(segments);
}
