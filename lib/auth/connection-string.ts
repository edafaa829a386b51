/**
 * Connection strings as the CLI and the local runtime need them: with a key to sign tokens
 * with. Read by the one reader in `lib/connection-string.ts`; this adds what a signer requires.
 * Errors name the missing or repeated field and never quote any value, so a key cannot end up
 * in a message (A4).
 */
import { readConnectionString } from '../connection-string.js';

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

/** Throws ConnectionStringError for a malformed part, a repeated field, or a missing endpoint or key. */
export function parseConnectionString(text: string): ConnectionString {
  const { endpoint, sharedAccessKeyName, sharedAccessKey, entityPath, useDevelopmentEmulator } = readConnectionString(text, {
    malformed: () => new ConnectionStringError('Connection string parts must look like Name=value'),
    repeated: (key) => new ConnectionStringError(`Connection string has ${key} more than once`),
  });
  if (!endpoint) throw new ConnectionStringError('Connection string has no Endpoint');
  if (!sharedAccessKeyName) {
    throw new ConnectionStringError('Connection string has no SharedAccessKeyName');
  }
  if (!sharedAccessKey) throw new ConnectionStringError('Connection string has no SharedAccessKey');
  return {
    endpoint,
    sharedAccessKeyName,
    sharedAccessKey,
    ...(entityPath ? { entityPath } : {}),
    ...(useDevelopmentEmulator ? { useDevelopmentEmulator } : {}),
  };
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
