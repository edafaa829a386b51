/**
 * The authorization decision for one request (A1-A3, B3). Pure apart from the rule
 * lookup it is given; no logging, and no failure says which check failed.
 */
import {
  hasRight,
  joinSegments,
  parseAuthorizationHeader,
  readResource,
  resourceSegments,
  segmentsCover,
  TokenError,
  verifySignature,
  type ParsedToken,
  type Right,
} from '../auth/sas.js';
import { routeFor } from './routes.js';
import type { AuthorizationRule, Grant } from '../auth/grants.js';

/**
 * Whether a rule still belongs to a live entity (A2): true for namespace rules; for an
 * entity's rule, true only while the entity it was made on exists. Asked only of a rule
 * whose key verified the token, so a flood of bad signatures costs nothing here.
 */
export type IsCurrent = (rule: AuthorizationRule) => boolean | Promise<boolean>;

/**
 * Looks a rule up by key name on one scope. `scopePath` is canonical (see `canonicalPath`):
 * decoded, lower-case segments, `/` for the namespace. Rules should be stored under that
 * spelling of their scope. May be sync or async; errors (store down) propagate.
 */
export type FindRule = (keyName: string, scopePath: string) => AuthorizationRule | undefined | Promise<AuthorizationRule | undefined>;

export interface AuthorizationRequest {
  method: string;
  /** The request's path, without query string, still percent-encoded or already decoded. */
  path: string;
}

export type AuthorizationResult =
  | { ok: true; keyName: string; grant: Grant }
  | { ok: false; status: 401 | 403 }
  /** A genuine token, but segment `badName` (1-based) of the path cannot be a name (B2). */
  | { ok: false; status: 400; badName: number };

const UNAUTHORIZED = { ok: false, status: 401 } as const;
const FORBIDDEN = { ok: false, status: 403 } as const;

/**
 * Decides a request:
 * - 401 when the header is missing or malformed, the token has expired, no rule with the
 *   token's key name lives on a scope covering the token's `sr`, or the signature matches
 *   neither that rule's primary nor its secondary key. All these look the same.
 * - 400 when the token is genuine but a path segment cannot be a name (see `readResource`):
 *   bad input, not a bad token. Decided from the path text alone, so it reveals nothing
 *   about what exists; and only after the token, so a caller without one learns nothing.
 * - 403 when the token is genuine but its `sr` does not reach the request path, or its rule
 *   lacks the right the route needs (`requiredRight`).
 * - otherwise ok, with the rule's key name and what the token may do (`Grant`).
 *
 * The rule is searched for on every scope a rule can have that covers `sr`: the namespace,
 * and the queue, topic or subscription `sr` names, most specific first. A rule on a topic
 * covers that topic's subscriptions.
 */
export async function authorize(
  request: AuthorizationRequest,
  header: string | undefined,
  nowSeconds: number,
  findRule: FindRule,
  isCurrent?: IsCurrent,
): Promise<AuthorizationResult> {
  const token = readToken(header);
  if (token === undefined) return UNAUTHORIZED;
  const tokenSegments = resourceSegments(token.resource);
  if (tokenSegments === undefined) return UNAUTHORIZED;

  const scopes = ruleScopes(tokenSegments);
  const rules = await Promise.all(scopes.map(async (scope) => findRule(token.keyName, joinSegments(scope))));
  let rule: AuthorizationRule | undefined;
  for (const candidate of rules) {
    if (candidate === undefined) continue;
    // Do not trust the lookup to have matched the scope: the rule must cover `sr` itself.
    const ruleSegments = resourceSegments(candidate.scopePath);
    if (ruleSegments === undefined || !segmentsCover(ruleSegments, tokenSegments)) continue;
    if (!(await signedBy(token, candidate, nowSeconds, isCurrent))) continue;
    rule = candidate;
    break;
  }
  if (rule === undefined) return UNAUTHORIZED;

  const read = readResource(request.path);
  if ('badName' in read) return { ok: false, status: 400, badName: read.badName };
  if (!('segments' in read) || !segmentsCover(tokenSegments, read.segments)) return FORBIDDEN;
  if (!hasRight(rule.rights, requiredRight(request.method, request.path))) return FORBIDDEN;
  return { ok: true, keyName: rule.keyName, grant: { scope: tokenSegments, rights: rule.rights } };
}

/** The token in an `Authorization` header, or undefined for any malformed one (A3). */
export function readToken(header: string | undefined): ParsedToken | undefined {
  if (header === undefined) return undefined;
  const known = parsedTokens.get(header);
  if (known) return known;
  let token: ParsedToken;
  try {
    token = Object.freeze(parseAuthorizationHeader(header));
  } catch (error) {
    if (error instanceof TokenError) return undefined;
    throw error;
  }
  if (parsedTokens.size >= MAX_PARSED) parsedTokens.clear();
  parsedTokens.set(header, token);
  return token;
}

/**
 * Headers this process parsed into a token: a client sends the same header with every request
 * until it renews its token, and parsing is a function of the header's text alone. Only the
 * parse is kept: whether the token is genuine and what it may do is decided per request.
 */
const parsedTokens = new Map<string, ParsedToken>();
const MAX_PARSED = 1_000;

/**
 * True when `rule`'s primary or secondary key signed `token`, it has not expired, and the
 * rule is current (a deleted entity's key is as if unknown). Both keys are always checked
 * (unless this very token verified under them before), so timing does not tell which one matched.
 */
export async function signedBy(token: ParsedToken, rule: AuthorizationRule, nowSeconds: number, isCurrent?: IsCurrent): Promise<boolean> {
  if (!(nowSeconds < token.expiry)) return false;
  const id = verifiedId(token, rule);
  if (!verified.has(id)) {
    const primary = verifySignature(token, rule.primaryKey, nowSeconds);
    const secondary = verifySignature(token, rule.secondaryKey, nowSeconds);
    if (!primary && !secondary) return false;
    if (verified.size >= MAX_VERIFIED) verified.clear();
    verified.add(id);
  }
  return !isCurrent || (await isCurrent(rule));
}

/**
 * Signatures this process found genuine: a client sends the same token with every request
 * until it renews it, and its two HMACs were most of the work of authorizing each. Kept by
 * everything the signature covers (the signed text and the signature) and both of the rule's
 * keys, so only the very same token under the very same keys is taken from here: a key
 * regenerated since misses, and a signature that did not verify is never kept. A pure
 * function's answers: expiry, the rule's scope, whether it is current (A2) and the route's
 * right are still decided for every request.
 */
const verified = new Set<string>();
const MAX_VERIFIED = 10_000;
// JSON, so no two different sets of fields read as the same text, whatever a key holds.
const verifiedId = (token: ParsedToken, rule: AuthorizationRule) =>
  JSON.stringify([rule.primaryKey, rule.secondaryKey, token.signedResource, token.signedExpiry, token.signature]);

/**
 * The scopes a rule covering `segments` can live on, most specific first: the subscription,
 * topic or queue named by the path (as far as it names one), then the namespace.
 */
export function ruleScopes(segments: readonly string[]): string[][] {
  const scopes: string[][] = [[]];
  const [kind, name, sub, subName] = segments;
  if (kind === 'queues' && name !== undefined) {
    scopes.push(['queues', name]);
  } else if (kind === 'topics' && name !== undefined) {
    scopes.push(['topics', name]);
    if (sub === 'subscriptions' && subName !== undefined) {
      scopes.push(['topics', name, 'subscriptions', subName]);
    }
  }
  return scopes.reverse();
}

/**
 * The right a route needs: the matched entry's in the route table (lib/api/routes.ts). Any
 * path that is not a known route needs Manage (the highest right is the safe default), as
 * does a path `resourceSegments` cannot read. `path` may carry `%24` for `$`, any case, or
 * a scheme and host.
 */
export function requiredRight(method: string, path: string): Right {
  const id = `${method} ${path}`;
  const known = rightsByRoute.get(id);
  if (known) return known;
  const segments = resourceSegments(path);
  const right = segments === undefined ? 'Manage' : (routeFor(method, segments)?.right ?? 'Manage');
  if (rightsByRoute.size >= MAX_ROUTES_KEPT) rightsByRoute.clear();
  rightsByRoute.set(id, right);
  return right;
}

/**
 * The rights paths asked for: a function of the method and the path's text alone (the route
 * table is fixed), and clients send to the same few paths again and again.
 */
const rightsByRoute = new Map<string, Right>();
const MAX_ROUTES_KEPT = 1_000;
