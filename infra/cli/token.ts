/**
 * Prints a Service Bus shared access signature for Sluice (SPEC A1).
 *
 *   npx tsx infra/cli/token.ts --resource <uri or path> --key-name <name> --key <key> [--ttl 3600]
 *   npx tsx infra/cli/token.ts --connection-string "Endpoint=...;SharedAccessKeyName=...;SharedAccessKey=..."
 *   SLUICE_CONNECTION_STRING=... npx tsx infra/cli/token.ts [--resource /queues/a]
 *
 * A thin adapter over lib/auth: all signing and parsing lives there.
 */
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import {
  ConnectionStringError,
  connectionStringResource,
  parseConnectionString,
  signToken,
} from '../../lib/auth/index.js';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

interface TokenOptions {
  resource?: string;
  keyName?: string;
  key?: string;
  ttl: number;
  connectionString?: string;
}

function parseTtl(value: string): number {
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError('must be a whole number of seconds');
  const ttl = Number(value);
  if (!Number.isSafeInteger(ttl) || ttl <= 0) {
    throw new InvalidArgumentError('must be a positive whole number of seconds');
  }
  return ttl;
}

class UsageError extends Error {}

/** Works out what to sign. Flags win over `SLUICE_CONNECTION_STRING`. */
function resolve(options: TokenOptions, env: NodeJS.ProcessEnv) {
  const flagsGiven = options.key !== undefined || options.keyName !== undefined;
  if (options.connectionString !== undefined && flagsGiven) {
    throw new UsageError('use either --connection-string or --key-name and --key, not both');
  }
  const connectionText = flagsGiven ? undefined : (options.connectionString ?? env.SLUICE_CONNECTION_STRING);
  if (connectionText !== undefined && connectionText !== '') {
    const cs = parseConnectionString(connectionText);
    return {
      resourceUri: options.resource ?? connectionStringResource(cs),
      keyName: cs.sharedAccessKeyName,
      key: cs.sharedAccessKey,
    };
  }
  if (!options.keyName || !options.key) {
    throw new UsageError(
      'give --key-name and --key, or --connection-string (or set SLUICE_CONNECTION_STRING)',
    );
  }
  if (!options.resource) throw new UsageError('give --resource (a URI or a path like /queues/a)');
  return { resourceUri: options.resource, keyName: options.keyName, key: options.key };
}

/** Runs the CLI; returns the exit code. `nowMs` is the clock, for tests. */
export function runTokenCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  nowMs: number,
  io: CliIo,
): number {
  const program = new Command()
    .name('token')
    .description('Print a Service Bus shared access signature for a Sluice resource')
    .option('--resource <uri>', 'resource the token is for: a URI or a path (/queues/a); default: the connection string endpoint')
    .option('--key-name <name>', 'authorization rule key name')
    .option('--key <key>', 'authorization rule key (primary or secondary)')
    .option('--ttl <seconds>', 'lifetime in seconds', parseTtl, 3600)
    .option('--connection-string <text>', 'Endpoint=...;SharedAccessKeyName=...;SharedAccessKey=... (default: $SLUICE_CONNECTION_STRING)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });

  try {
    program.parse([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    throw error;
  }
  try {
    const options = program.opts<TokenOptions>();
    const { resourceUri, keyName, key } = resolve(options, env);
    const expiresAt = Math.floor(nowMs / 1000) + options.ttl;
    io.out(`${signToken({ resourceUri, keyName, key, expiresAt })}\n`);
    return 0;
  } catch (error) {
    // Our messages never include the key; anything unexpected is reported without detail.
    const known =
      error instanceof UsageError ||
      error instanceof ConnectionStringError ||
      error instanceof TypeError ||
      error instanceof RangeError;
    io.err(`error: ${known ? (error as Error).message : 'could not make a token'}\n`);
    return 1;
  }
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  process.exitCode = runTokenCli(process.argv.slice(2), process.env, Date.now(), {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
}
