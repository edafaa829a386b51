/**
 * Shared access signatures as Service Bus's own HTTP clients sign them (SPEC A1-A3, B3), for
 * the Atom and REST protocols only. The token format, key handling and constant-time checks
 * are Sluice's own (lib/auth/sas.ts); what differs is how `sr` is read:
 *
 * - `sr` may carry the request's query: the JS admin client and `azure-sb` sign the whole
 *   URL (`https://host/$resources/queues?api-version=2021-05&$skip=2`). The HMAC is over `sr`
 *   as sent, as always; the scope is read from the URL's path only.
 * - `sr` may be the bare host (`127.0.0.1:8443`, `ns.servicebus.windows.net`): the
 *   namespace. Only when it equals the request's host, so a relative path stays a path.
 * - `sb://`, `https://` and `http://` are alike; the host is ignored as in Sluice's API.
 * - Paths are in Azure's layout: `/orders` is a queue or a topic, `/t/subscriptions/s` a
 *   subscription. A rule is looked up on every Sluice scope (`/queues/orders`,
 *   `/topics/orders`, `/topics/t/subscriptions/s`, `/`) a reading of `sr` falls under; the
 *   token then reaches only the readings its rule covers (a queue's rule never opens the
 *   topic of the same name).
 *
 * A request passes two checks. Here: the token's `sr` covers the request's path, both in
 * Azure's layout, and its rule has the right the operation needs. Then, in the protocol's
 * handler, once it knows which entity the path names: `grantAllows(grant, sluicePath, right)`
 * (`requireGrant`). Every failure is a 401, which is what these clients expect for missing
 * rights as for bad tokens; a path segment that cannot be a name is a 400.
 */
import {
  grantAllows,
  hasRight,
  joinSegments,
  readResource,
  resourceSegments,
  segmentsCover,
  type AuthorizationRule,
  type Grant,
  type Right,
} from '../auth/index.js';
import { readToken, ruleScopes, signedBy, type FindRule, type IsCurrent } from '../api/authorize.js';
import { BrokerError } from '../errors.js';

/** `Any`: any right at all (the namespace's description, which .NET documents as open to any claim). */
export type NeededRight = Right | 'Any';

const URI_WITH_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** The `sr` of a Service Bus token as Azure-layout path segments, or undefined when unreadable. */
export function serviceBusResourceSegments(resource: string, host: string | undefined): string[] | undefined {
  let text = resource.split(/[?#]/, 1)[0]!;
  if (!URI_WITH_AUTHORITY.test(text) && host !== undefined) {
    const first = text.split('/', 1)[0]!.toLowerCase();
    const h = host.toLowerCase();
    if (first.length > 0 && (first === h || first === h.replace(/:\d+$/, ''))) text = `sb://${text}`;
  }
  return resourceSegments(text);
}

/**
 * The Sluice paths an Azure-layout path can stand for: `[x, ...rest]` is the queue or the
 * topic `x`; `[t, subscriptions, s, ...rest]` the subscription; `$`-paths (`$namespaceinfo`,
 * `$resources/queues`) stand for no entity and are kept as they are, so they cover none.
 */
export function sluiceReadings(azure: readonly string[]): string[][] {
  const [first, second, third] = azure;
  if (first === undefined) return [[]];
  if (first.startsWith('$')) return [[...azure]];
  if (second === 'subscriptions' && third !== undefined) return [['topics', ...azure]];
  return [
    ['queues', ...azure],
    ['topics', ...azure],
  ];
}

export interface VerifiedToken {
  keyName: string;
  /** The token's `sr` in Azure's layout. */
  azureScope: string[];
  /** What it reaches in Sluice's layout, with its rule's rights. */
  grant: Grant;
}

/** Verifies a Service Bus token (see the file header); undefined for any bad token. */
export async function verifyServiceBusToken(
  header: string | undefined,
  host: string | undefined,
  nowSeconds: number,
  findRule: FindRule,
  isCurrent?: IsCurrent,
): Promise<VerifiedToken | undefined> {
  const token = readToken(header);
  if (token === undefined) return undefined;
  const azureScope = serviceBusResourceSegments(token.resource, host);
  if (azureScope === undefined) return undefined;
  const readings = sluiceReadings(azureScope);
  const scopes = new Map<string, string[]>();
  for (const reading of readings) for (const scope of ruleScopes(reading)) scopes.set(joinSegments(scope), scope);
  // Most specific first, as Sluice's own authorizer searches.
  const ordered = [...scopes.entries()].sort((a, b) => b[1].length - a[1].length);
  const rules = await Promise.all(ordered.map(async ([path]) => findRule(token.keyName, path)));
  for (const candidate of rules) {
    if (candidate === undefined) continue;
    const ruleSegments = resourceSegments(candidate.scopePath);
    if (ruleSegments === undefined) continue;
    const reached = readings.filter((reading) => segmentsCover(ruleSegments, reading));
    if (reached.length === 0) continue;
    if (!(await signedBy(token, candidate, nowSeconds, isCurrent))) continue;
    return { keyName: candidate.keyName, azureScope, grant: grantOf(reached, candidate) };
  }
  return undefined;
}

function grantOf(scopes: readonly string[][], rule: AuthorizationRule): Grant {
  const [first, ...others] = scopes;
  return { scope: first!, rights: rule.rights, ...(others.length > 0 ? { alternatives: others.map((scope) => ({ scope, rights: rule.rights })) } : {}) };
}

export interface ServiceBusAuthRequest {
  /** Raw path, still percent-encoded. */
  path: string;
  /** The Host the client used (its port included), to recognise a host-only `sr`. */
  host: string | undefined;
  /** Lower-cased names. */
  headers: Readonly<Record<string, string | undefined>>;
}

export type ServiceBusDecision = { ok: true; keyName: string; grant: Grant } | { ok: false; status: 401 } | { ok: false; status: 400; badName: number };

/**
 * Tokens the admin clients add when an entity forwards (`ForwardTo`,
 * `ForwardDeadLetteredMessagesTo`): they prove Send on the target and join the grant.
 */
const SUPPLEMENTARY_HEADERS = ['servicebussupplementaryauthorization', 'servicebusdlqsupplementaryauthorization'];

/** The first check of a Service Bus request (see the file header). */
export async function authorizeServiceBus(
  request: ServiceBusAuthRequest,
  needed: NeededRight,
  nowSeconds: number,
  findRule: FindRule,
  isCurrent?: IsCurrent,
): Promise<ServiceBusDecision> {
  const header = request.headers.authorization ?? request.headers.servicebusauthorization;
  const verified = await verifyServiceBusToken(header, request.host, nowSeconds, findRule, isCurrent);
  if (!verified) return { ok: false, status: 401 };
  const read = readResource(request.path);
  if ('badName' in read) return { ok: false, status: 400, badName: read.badName };
  if (!('segments' in read) || !segmentsCover(verified.azureScope, read.segments)) return { ok: false, status: 401 };
  const rights = verified.grant.rights;
  if (needed === 'Any' ? rights.length === 0 : !hasRight(rights, needed)) return { ok: false, status: 401 };
  const extra: Grant[] = [];
  for (const name of SUPPLEMENTARY_HEADERS) {
    const value = request.headers[name];
    if (value === undefined) continue;
    const more = await verifyServiceBusToken(value, request.host, nowSeconds, findRule, isCurrent);
    if (more) extra.push(more.grant);
  }
  const grant = extra.length > 0 ? { ...verified.grant, alternatives: [...(verified.grant.alternatives ?? []), ...extra] } : verified.grant;
  return { ok: true, keyName: verified.keyName, grant };
}

/**
 * The second check: the entity the handler resolved the path to (a Sluice path such as
 * `queues/orders`) must be within the grant with `right`. A 401 otherwise, like every
 * refusal in these protocols.
 */
export function requireGrant(grant: Grant, sluicePath: string, right: Right): void {
  if (!grantAllows(grant, sluicePath, right)) throw unauthorized(`Unauthorized access. '${right}' claim(s) are required to perform this operation.`);
}

export const unauthorized = (detail = 'InvalidSignature: The token is missing, malformed, expired or does not grant this operation.') =>
  new BrokerError('Unauthorized', detail);
