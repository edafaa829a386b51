/**
 * `sluice token`: prints a Service Bus shared access signature for Sluice (A1).
 *
 *   sluice token [--resource /queues/a] [--ttl 3600]          from the connection string
 *   sluice token --resource <uri or path> --key-name <name> --key <key>
 *
 * The connection string is found as for every other command (--connection-string,
 * SLUICE_CONNECTION_STRING, the local runtime's data folder). A thin adapter over lib/auth:
 * all signing and parsing lives there.
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { signToken, connectionStringResource } from '../../lib/auth/index.js';
import { resolveConnectionString, type ConnectionOptions } from './connection.js';
import { CliError, toCliError, usageError } from './errors.js';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

interface TokenOptions extends ConnectionOptions {
  resource?: string;
  keyName?: string;
  key?: string;
  ttl: number;
}

function parseTtl(value: string): number {
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError('must be a whole number of seconds');
  const ttl = Number(value);
  if (!Number.isSafeInteger(ttl) || ttl <= 0) {
    throw new InvalidArgumentError('must be a positive whole number of seconds');
  }
  return ttl;
}

/** Works out what to sign. Key flags win over any connection string. */
function resolveSigning(options: TokenOptions, env: NodeJS.ProcessEnv, cwd: string) {
  const flagsGiven = options.key !== undefined || options.keyName !== undefined;
  if (options.connectionString !== undefined && flagsGiven) {
    throw usageError('use either --connection-string or --key-name and --key, not both');
  }
  if (flagsGiven) {
    if (!options.keyName || !options.key) {
      throw usageError('give --key-name and --key, or --connection-string (or set SLUICE_CONNECTION_STRING)');
    }
    if (!options.resource) throw usageError('give --resource (a URI or a path like /queues/a)');
    return { resourceUri: options.resource, keyName: options.keyName, key: options.key };
  }
  const { parsed: cs } = resolveConnectionString(options, env, cwd);
  return { resourceUri: options.resource ?? connectionStringResource(cs), keyName: cs.sharedAccessKeyName, key: cs.sharedAccessKey };
}

export interface TokenEnv {
  io: CliIo;
  env: NodeJS.ProcessEnv;
  cwd: string;
  now(): number;
}

/**
 * The `token` command. Standalone it carries its own --connection-string; under `sluice`
 * that option (and --data) is the program's.
 */
export function tokenCommand(cli: TokenEnv, standalone = false): Command {
  const command = new Command('token')
    .description('print a shared access signature (the Authorization header value) for a resource')
    .option('--resource <uri>', 'resource the token is for: a URI or a path (/queues/a); default: the connection string endpoint')
    .option('--key-name <name>', 'authorization rule key name')
    .option('--key <key>', 'authorization rule key (primary or secondary)')
    .option('--ttl <seconds>', 'lifetime in seconds', parseTtl, 3600);
  if (standalone) {
    command.option('--connection-string <text>', 'Endpoint=...;SharedAccessKeyName=...;SharedAccessKey=... (default: $SLUICE_CONNECTION_STRING)');
  }
  return command.action((_o: unknown, self: Command) => {
    const options = self.optsWithGlobals<TokenOptions>();
    const { resourceUri, keyName, key } = resolveSigning(options, cli.env, cli.cwd);
    const expiresAt = Math.floor(cli.now() / 1000) + options.ttl;
    try {
      cli.io.out(`${signToken({ resourceUri, keyName, key, expiresAt })}\n`);
    } catch (error) {
      // lib/auth's messages never include the key.
      if (error instanceof TypeError || error instanceof RangeError) throw usageError(error.message);
      throw new CliError('could not make a token', 1);
    }
  });
}

/** The token command on its own, synchronously; returns the exit code (tests pass `nowMs`). */
export function runTokenCli(argv: readonly string[], env: NodeJS.ProcessEnv, nowMs: number, io: CliIo, cwd = process.cwd()): number {
  const program = tokenCommand({ io, env, cwd, now: () => nowMs }, true)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
  try {
    program.parse([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    const e = toCliError(error);
    io.err(`error: ${e.line}\n`);
    return e.exitCode;
  }
}
