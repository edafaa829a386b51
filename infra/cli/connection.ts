/**
 * Where the CLI gets its connection string, first found wins:
 * `--connection-string`, then `SLUICE_CONNECTION_STRING`, then the local runtime's data
 * folder (`--data`, default `.sluice/`, where `npm start` keeps it with the root key).
 */
import { resolve } from 'node:path';
import { parseConnectionString, type ConnectionString } from '../../lib/auth/index.js';
import { readConnectionFile } from '../local/connection-file.js';
import { CliError, exitCodes } from './errors.js';

export interface ConnectionOptions {
  connectionString?: string;
  data?: string;
}

export const defaultDataDir = '.sluice/';

export type ConnectionSource = 'option' | 'environment' | 'data folder';

export function resolveConnectionString(
  options: ConnectionOptions,
  env: NodeJS.ProcessEnv,
  cwd: string,
): { text: string; parsed: ConnectionString; source: ConnectionSource } {
  const fromEnv = env.SLUICE_CONNECTION_STRING;
  const dataDir = resolve(cwd, options.data ?? defaultDataDir);
  const [text, source]: [string | undefined, ConnectionSource] =
    options.connectionString !== undefined
      ? [options.connectionString, 'option']
      : fromEnv !== undefined && fromEnv !== ''
        ? [fromEnv, 'environment']
        : [readConnectionFile(dataDir), 'data folder'];
  if (text === undefined) {
    throw new CliError(
      `no connection string: none given and none in ${dataDir}`,
      exitCodes.unauthorized,
      'pass --connection-string, set SLUICE_CONNECTION_STRING, or start the local broker here (npm start)',
    );
  }
  try {
    return { text, parsed: parseConnectionString(text), source };
  } catch (error) {
    // The parser's messages never quote a value, so the key cannot leak here.
    throw new CliError(
      `bad connection string from the ${source}: ${(error as Error).message}`,
      exitCodes.usage,
      'it looks like Endpoint=...;SharedAccessKeyName=...;SharedAccessKey=...',
    );
  }
}
