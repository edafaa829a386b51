/**
 * Service Bus connection strings, read as @azure/service-bus reads them, plus the one thing
 * Sluice adds: where to send HTTP requests. `Endpoint=sb://host/` means https on the default
 * port (what a deployed Sluice answers on); an `http://` or `https://` endpoint, such as the
 * local runtime's `http://127.0.0.1:4280/`, is taken as given. `UseDevelopmentEmulator=true`
 * means plain HTTP to the endpoint's host and port, as the Azure SDKs' emulator mode does, so
 * `Endpoint=sb://127.0.0.1:4280/;…;UseDevelopmentEmulator=true` serves this client and the
 * official admin clients alike.
 */

/** Same shape as @azure/service-bus's `ServiceBusConnectionStringProperties`. */
export interface ServiceBusConnectionStringProperties {
  endpoint: string;
  fullyQualifiedNamespace: string;
  sharedAccessKey?: string;
  sharedAccessKeyName?: string;
  entityPath?: string;
  sharedAccessSignature?: string;
  /**
   * `UseDevelopmentEmulator=true`: talk plain HTTP to the endpoint's host and port. (The
   * 7.10 SDK takes any value as true, `false` included; here only `true` is.)
   */
  useDevelopmentEmulator?: boolean;
}

/** `Key=value;...` into a map; keys case-insensitive, values may contain `=` (base64 keys). */
function parsePairs(connectionString: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const part of connectionString.split(';')) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) throw new TypeError('The connection string must be "Key=value" pairs separated by ";"');
    pairs.set(trimmed.slice(0, eq).trim().toLowerCase(), trimmed.slice(eq + 1).trim());
  }
  return pairs;
}

export function parseServiceBusConnectionString(connectionString: string): ServiceBusConnectionStringProperties {
  if (typeof connectionString !== 'string' || !connectionString.trim()) {
    throw new TypeError('connectionString must be a non-empty string');
  }
  const pairs = parsePairs(connectionString);
  const endpoint = pairs.get('endpoint');
  if (!endpoint) throw new TypeError('Connection string should have an Endpoint key.');
  const sharedAccessKeyName = pairs.get('sharedaccesskeyname');
  const sharedAccessKey = pairs.get('sharedaccesskey');
  const sharedAccessSignature = pairs.get('sharedaccesssignature');
  if (sharedAccessSignature && (sharedAccessKey || sharedAccessKeyName)) {
    throw new TypeError('Connection string cannot have both SharedAccessSignature and SharedAccessKey keys.');
  }
  if (!sharedAccessSignature && (!sharedAccessKey || !sharedAccessKeyName)) {
    throw new TypeError('Connection string with SharedAccessKeyName must have SharedAccessKey, and the other way round.');
  }
  const out: ServiceBusConnectionStringProperties = {
    endpoint,
    fullyQualifiedNamespace: hostOf(endpoint),
  };
  if (sharedAccessKeyName) out.sharedAccessKeyName = sharedAccessKeyName;
  if (sharedAccessKey) out.sharedAccessKey = sharedAccessKey;
  if (sharedAccessSignature) out.sharedAccessSignature = sharedAccessSignature;
  const entityPath = pairs.get('entitypath');
  if (entityPath) out.entityPath = entityPath;
  if (pairs.get('usedevelopmentemulator')?.toLowerCase() === 'true') out.useDevelopmentEmulator = true;
  return out;
}

/** The endpoint requests go to: the connection string's, over plain HTTP in emulator mode. */
export function requestEndpoint(cs: Pick<ServiceBusConnectionStringProperties, 'endpoint' | 'useDevelopmentEmulator'>): string {
  return cs.useDevelopmentEmulator ? `http://${hostOf(cs.endpoint)}/` : cs.endpoint;
}

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/** `sb://host:1/x` → `host:1`; a bare host name stays as it is. */
function hostOf(endpointOrHost: string): string {
  const rest = endpointOrHost.replace(SCHEME, '');
  const slash = rest.indexOf('/');
  return slash < 0 ? rest : rest.slice(0, slash);
}

/**
 * The HTTP base URL (no trailing slash) for an endpoint or a fully qualified namespace:
 * `sb://ns.example.com/` and `ns.example.com` → `https://ns.example.com`;
 * `http://127.0.0.1:4280/` → `http://127.0.0.1:4280`.
 */
export function baseUrlOf(endpointOrNamespace: string): string {
  const scheme = SCHEME.exec(endpointOrNamespace)?.[1]?.toLowerCase();
  const host = hostOf(endpointOrNamespace);
  if (!host) throw new TypeError(`'${endpointOrNamespace}' names no host`);
  if (scheme === 'http' || scheme === 'https') {
    const url = new URL(endpointOrNamespace);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  }
  return `https://${host}`;
}

/**
 * The name an SDK program passes to `createSender` / `createReceiver` for a connection
 * string's `EntityPath`. Azure's strings carry the SDK's name (`orders`, `t/Subscriptions/s`)
 * and are returned as they are; Sluice's own spelling (`queues/orders`, `topics/t`,
 * `topics/t/subscriptions/s`, the HTTP path, which the explorer uses) reads as the SDK's name.
 */
export function sdkEntityName(entityPath: string): string {
  const segments = entityPath.replace(/^\/+|\/+$/g, '').split('/');
  const [kind, name, sub, subName] = segments;
  if (segments.length === 2 && /^(queues|topics)$/i.test(kind!)) return name!;
  if (segments.length === 4 && /^topics$/i.test(kind!) && /^subscriptions$/i.test(sub!)) return `${name}/Subscriptions/${subName}`;
  return entityPath;
}

/** `t/Subscriptions/s`, the SDK's address of a subscription, as its topic and subscription. */
export function subscriptionOf(name: string): { topic: string; subscription: string } | undefined {
  const m = /^([^/]+)\/subscriptions\/([^/]+)$/i.exec(name);
  return m ? { topic: m[1]!, subscription: m[2]! } : undefined;
}
