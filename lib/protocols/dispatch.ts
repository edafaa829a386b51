/**
 * Which protocol a request speaks: Sluice's own JSON API, or one of Service Bus's own HTTP
 * protocols, the Atom/XML management plane ("atom") and the REST data plane ("rest"). Both
 * Service Bus protocols put entity names at the host root (`/orders`, `/t/Subscriptions/s`),
 * where Sluice's own API keeps its collections (`/queues`, `/topics`, ...). Pure.
 *
 * The rule, decided on the request alone (no lookup):
 * 1. A request that carries a Service Bus marker speaks Service Bus: an `api-version` query
 *    parameter (every SDK, `azure-sb` and the REST docs' examples send one), a
 *    `BrokerProperties` or `ServiceBusAuthorization` header, or an Atom
 *    (`application/atom+xml`) or batch (`application/vnd.microsoft.servicebus.json`) body.
 *    Sluice's own API never takes any of these.
 * 2. Otherwise a path whose first segment is not one of Sluice's own (`SLUICE_ROOTS`) speaks
 *    Service Bus: `/orders/messages`, `/$namespaceinfo`. Sluice's paths are unchanged.
 * 3. Everything else is Sluice's own API, exactly as before.
 *
 * So the entity names `queues`, `topics`, `authorization-rules` and `explorer` are reserved
 * in one sense only: a Service Bus request for them must carry a marker (the SDKs always do;
 * a hand-written REST caller adds `?api-version=2017-04`). Names starting with `_` or `$`
 * cannot be entity names at all (E1).
 *
 * Among Service Bus requests, the REST data plane is the one whose path goes on, past the
 * entity (`{q}`, `{t}/Subscriptions/{s}`, either `/$DeadLetterQueue`), with `messages`;
 * everything else is the management plane.
 */
import { routeTable } from '../api/routes.js';
import { explorerPrefix } from '../explorer/serve.js';

export type Protocol = 'sluice' | 'atom' | 'rest';

/** The first path segments Sluice's own API (and its local runtime and Explorer) owns. */
export const SLUICE_ROOTS: ReadonlySet<string> = new Set([...routeTable.map((r) => r.path.split('/')[1]!), explorerPrefix.slice(1), '_websocket']);

/** Entity names a Service Bus request reaches only with a marker (see the file header). */
export const RESERVED_ENTITY_NAMES: readonly string[] = [...SLUICE_ROOTS].filter((name) => /^[a-z0-9]/.test(name)).sort();

export interface DispatchRequest {
  /** The raw path, still percent-encoded. */
  path: string;
  query: Readonly<Record<string, string | undefined>>;
  /** Header names lower-cased (API Gateway payload 2.0 and the local runtime both do). */
  headers: Readonly<Record<string, string | undefined>>;
}

const MARKER_HEADERS = ['brokerproperties', 'servicebusauthorization'];
const MARKER_CONTENT_TYPES = /^\s*application\/(atom\+xml|vnd\.microsoft\.servicebus\.json)\b/i;

/** Path segments, percent-decoded where they decode (`%24` is `$`), empty ones dropped. */
export function pathSegments(path: string): string[] {
  return path
    .split('/')
    .filter((s) => s.length > 0)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
}

/** True when the request carries one of Service Bus's markers (rule 1). */
export function hasServiceBusMarker(request: DispatchRequest): boolean {
  if (Object.keys(request.query).some((k) => k.toLowerCase() === 'api-version')) return true;
  if (MARKER_HEADERS.some((h) => request.headers[h] !== undefined)) return true;
  const contentType = request.headers['content-type'];
  return contentType !== undefined && MARKER_CONTENT_TYPES.test(contentType);
}

export function protocolOf(request: DispatchRequest): Protocol {
  const segments = pathSegments(request.path);
  const first = segments[0]?.toLowerCase();
  const serviceBus = hasServiceBusMarker(request) || (first !== undefined && !SLUICE_ROOTS.has(first));
  if (!serviceBus) return 'sluice';
  return restEntityLength(segments) === undefined ? 'atom' : 'rest';
}

/**
 * When `segments` are a REST data-plane path, the number of segments that name the entity
 * and its subqueue (the `messages` segment follows them); otherwise undefined.
 */
export function restEntityLength(segments: readonly string[]): number | undefined {
  const lower = segments.map((s) => s.toLowerCase());
  let n = lower.length >= 4 && lower[1] === 'subscriptions' ? 3 : 1;
  if (lower[0]?.startsWith('$')) return undefined;
  if (lower[n] === '$deadletterqueue') n++;
  return lower[n] === 'messages' ? n : undefined;
}

/** `protocolOf` for an API Gateway payload 2.0 event (the api function's and the local runtime's). */
export function protocolOfEvent(event: {
  rawPath: string;
  queryStringParameters?: Readonly<Record<string, string | undefined>>;
  headers?: Readonly<Record<string, string | undefined>>;
}): Protocol {
  return protocolOf({ path: event.rawPath, query: event.queryStringParameters ?? {}, headers: event.headers ?? {} });
}
