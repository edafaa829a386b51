/**
 * Service Bus connection strings:
 * `Endpoint=sb://host/;SharedAccessKeyName=name;SharedAccessKey=key[;EntityPath=queue]`.
 *
 * Keys are matched case-insensitively and values trimmed, as the Azure SDKs do; a value may
 * itself contain `=` (base64 padding). `UseDevelopmentEmulator=true` asks for plain HTTP to
 * the endpoint's host and port, as in the Azure SDKs' emulator mode. Unknown keys
 * (`TransportType`, ...) are ignored. Errors name the missing or repeated field and
 * never quote any value, so a key cannot end up in a message (A4).
 */

export interface ConnectionString {
  /** As written, e.g. `sb://ns.servicebus.windows.net/` or `http://localhost:4280/`. */
  endpoint: string;
  sharedAccessKeyName: string;
  sharedAccessKey: string;
  /** Present when the string is scoped to one entity. */
  entityPath?: string;
  /** `UseDevelopmentEmulator=true`: plain HTTP to the endpoint's host and port. */
  useDevelopmentEmulator?: boolean;
}

export class ConnectionStringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionStringError';
  }
}

const KNOWN = {
  endpoint: 'Endpoint',
  sharedaccesskeyname: 'SharedAccessKeyName',
  sharedaccesskey: 'SharedAccessKey',
  entitypath: 'EntityPath',
  usedevelopmentemulator: 'UseDevelopmentEmulator',
} as const;
type Known = keyof typeof KNOWN;

export function parseConnectionString(text: string): ConnectionString {
  const values = new Map<Known, string>();
  for (const part of text.split(';')) {
    if (part.trim().length === 0) continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new ConnectionStringError('Connection string parts must look like Name=value');
    const name = part.slice(0, eq).trim().toLowerCase();
    const value = part.slice(eq + 1).trim();
    if (!Object.hasOwn(KNOWN, name)) continue;
    const known = name as Known;
    if (values.has(known)) {
      throw new ConnectionStringError(`Connection string has ${KNOWN[known]} more than once`);
    }
    values.set(known, value);
  }
  const endpoint = values.get('endpoint');
  const sharedAccessKeyName = values.get('sharedaccesskeyname');
  const sharedAccessKey = values.get('sharedaccesskey');
  const entityPath = values.get('entitypath');
  if (!endpoint) throw new ConnectionStringError('Connection string has no Endpoint');
  if (!sharedAccessKeyName) {
    throw new ConnectionStringError('Connection string has no SharedAccessKeyName');
  }
  if (!sharedAccessKey) throw new ConnectionStringError('Connection string has no SharedAccessKey');
  const emulator = values.get('usedevelopmentemulator')?.toLowerCase() === 'true';
  return { endpoint, sharedAccessKeyName, sharedAccessKey, ...(entityPath ? { entityPath } : {}), ...(emulator ? { useDevelopmentEmulator: true } : {}) };
}

/**
 * The resource a connection string's token should be for: the endpoint, plus the entity
 * path when there is one, appended as written (`sb://host/` + `queues/a` gives
 * `sb://host/queues/a`). Sluice paths name the entity kind, so an Azure-style
 * `EntityPath=a` must be written `EntityPath=queues/a` to reach queue `a`.
 */
export function connectionStringResource(cs: ConnectionString): string {
  if (!cs.entityPath) return cs.endpoint;
  const base = cs.endpoint.replace(/\/+$/, '');
  return `${base}/${cs.entityPath.replace(/^\/+/, '')}`;
}
