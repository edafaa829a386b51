/**
 * The one reader of Service Bus connection strings:
 * `Endpoint=sb://host/;SharedAccessKeyName=name;SharedAccessKey=key[;EntityPath=queue]`.
 *
 * Keys are matched case-insensitively and values trimmed, as the Azure SDKs do; a value may
 * itself contain `=` (base64 padding). `UseDevelopmentEmulator=true` (any case) asks for plain
 * HTTP to the endpoint's host and port, as in the Azure SDKs' emulator mode; any other value is
 * false (the 7.10 SDK takes `false` as true too). Unknown keys (`TransportType`, ...) are ignored.
 *
 * It says which fields are there and leaves the rest to its two callers, which differ in what
 * they require and throw: `lib/auth` (the CLI, the local runtime) needs a key and rejects a
 * repeated field, with errors that never quote a value (A4); `sluice/client` reads what
 * @azure/service-bus reads (a key or a signature, the last of a repeated field) and throws its
 * TypeErrors. No imports: the client's browser bundle takes it as it is.
 */

const KNOWN = {
  endpoint: 'Endpoint',
  sharedaccesskeyname: 'SharedAccessKeyName',
  sharedaccesskey: 'SharedAccessKey',
  sharedaccesssignature: 'SharedAccessSignature',
  entitypath: 'EntityPath',
  usedevelopmentemulator: 'UseDevelopmentEmulator',
} as const;
type Known = keyof typeof KNOWN;

/** A known key's name as the Azure SDKs spell it (`SharedAccessKey`). */
export type ConnectionStringKey = (typeof KNOWN)[Known];

/** The fields a connection string gives; an empty value counts as absent. */
export interface ConnectionStringFields {
  endpoint?: string;
  sharedAccessKeyName?: string;
  sharedAccessKey?: string;
  sharedAccessSignature?: string;
  entityPath?: string;
  useDevelopmentEmulator?: true;
}

/** How the caller reports what the reader cannot accept. */
export interface ConnectionStringErrors {
  /** A part that is not `Key=value`. */
  malformed(): Error;
  /** A known key given twice; without it the last value wins, as in @azure/service-bus. */
  repeated?(key: ConnectionStringKey): Error;
}

/** Reads `text` into its fields; throws only the errors `errors` makes. */
export function readConnectionString(text: string, errors: ConnectionStringErrors): ConnectionStringFields {
  const values = new Map<Known, string>();
  for (const part of text.split(';')) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) throw errors.malformed();
    const name = trimmed.slice(0, eq).trim().toLowerCase();
    if (!Object.hasOwn(KNOWN, name)) continue;
    const known = name as Known;
    if (errors.repeated && values.has(known)) throw errors.repeated(KNOWN[known]);
    values.set(known, trimmed.slice(eq + 1).trim());
  }
  const fields: ConnectionStringFields = {};
  const endpoint = values.get('endpoint');
  if (endpoint) fields.endpoint = endpoint;
  const sharedAccessKeyName = values.get('sharedaccesskeyname');
  if (sharedAccessKeyName) fields.sharedAccessKeyName = sharedAccessKeyName;
  const sharedAccessKey = values.get('sharedaccesskey');
  if (sharedAccessKey) fields.sharedAccessKey = sharedAccessKey;
  const sharedAccessSignature = values.get('sharedaccesssignature');
  if (sharedAccessSignature) fields.sharedAccessSignature = sharedAccessSignature;
  const entityPath = values.get('entitypath');
  if (entityPath) fields.entityPath = entityPath;
  if (values.get('usedevelopmentemulator')?.toLowerCase() === 'true') fields.useDevelopmentEmulator = true;
  return fields;
}
