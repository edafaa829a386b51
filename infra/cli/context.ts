/** What every command gets: where to write, where to read, and the way to the broker. */
import type { Command } from 'commander';
import { resolveConnectionString, type ConnectionOptions } from './connection.js';
import { ServiceBusAdministrationClient } from '../../lib/client/admin.js';
import { ServiceBusClient } from '../../lib/client/client.js';
import { cliRetryOptions, httpTransport, type Transport } from './http.js';
import { json, type Io } from './output.js';

export interface CliEnv {
  io: Io;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The whole of stdin (for `send` without a body argument). */
  readStdin(): Promise<Buffer>;
  /** Fired on Ctrl-C (or by a test): long-running commands (tail, receive --wait) stop. */
  signal: AbortSignal;
  now(): number;
}

export interface GlobalOptions extends ConnectionOptions {
  json?: boolean;
}

export interface Ctx extends CliEnv {
  options: GlobalOptions;
  transport(): Transport;
  /** sluice/client's ServiceBusAdministrationClient, for entity management. */
  admin(): ServiceBusAdministrationClient;
  /** sluice/client's ServiceBusClient, for receiving and peeking. */
  client(): ServiceBusClient;
  /** Prints `data` as JSON with --json, else what `human` makes of it. */
  print<T>(data: T, human: (data: T) => string): void;
}

export function contextOf(command: Command, cli: CliEnv): Ctx {
  const options = command.optsWithGlobals<GlobalOptions>();
  let transport: Transport | undefined;
  let admin: ServiceBusAdministrationClient | undefined;
  let client: ServiceBusClient | undefined;
  return {
    ...cli,
    options,
    transport() {
      transport ??= httpTransport(resolveConnectionString(options, cli.env, cli.cwd).parsed);
      return transport;
    },
    admin() {
      admin ??= new ServiceBusAdministrationClient(resolveConnectionString(options, cli.env, cli.cwd).text, { retryOptions: cliRetryOptions });
      return admin;
    },
    client() {
      // The CLI names its entities itself (and signs for each one's own path); the SDK's
      // EntityPath check would refuse `peek TOPIC/SUB` with an Azure-style `TOPIC/Subscriptions/SUB`.
      client ??= new ServiceBusClient(withoutEntityPath(resolveConnectionString(options, cli.env, cli.cwd).text), { retryOptions: cliRetryOptions });
      return client;
    },
    print(data, human) {
      cli.io.out(options.json ? json(data) : human(data));
    },
  };
}

const withoutEntityPath = (connectionString: string) =>
  connectionString
    .split(';')
    .filter((part) => !/^\s*entitypath\s*=/i.test(part))
    .join(';');
