/**
 * `npm start`: the whole broker on this machine (see docs/http-api.md, "The local runtime").
 *
 *   npm start -- --port 4280 --data .sluice/
 *   npm start -- --in-memory
 *   npm start -- --tls          (HTTPS, for clients that speak only HTTPS)
 */
import { keysTableOf } from '../../lib/deps.js';
import { Command, InvalidArgumentError } from 'commander';
import { resolve } from 'node:path';
import { startLocalRuntime, type LocalRuntime } from './runtime.js';

// The SDK's notice about future Node versions says nothing useful to someone running Sluice locally.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InvalidArgumentError('a port is a whole number from 0 to 65535');
  }
  return port;
}

const program = new Command()
  .name('sluice')
  .description('Runs Sluice locally: the same handlers as on AWS, on DynamoDB Local.')
  .option('--port <n>', 'HTTP port (0: any free port)', parsePort, 4280)
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--data <dir>', 'where data is kept between runs', '.sluice/')
  .option('--in-memory', 'keep nothing on disk; data is lost when Sluice stops', false)
  .option('--tls', 'serve HTTPS with a self-signed certificate kept with the data (for the official admin clients)', false)
  .showHelpAfterError();

program.parse();
const options = program.opts<{ port: number; host: string; data: string; inMemory: boolean; tls: boolean }>();

let runtime: LocalRuntime;
try {
  runtime = await startLocalRuntime({
    port: options.port,
    host: options.host,
    tls: options.tls,
    ...(options.inMemory ? { inMemory: true } : { dataDir: options.data }),
  });
} catch (error) {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  console.error(
    code === 'EADDRINUSE'
      ? `Could not start Sluice: port ${options.port} on ${options.host} is in use (try --port)`
      : `Could not start Sluice: ${(error as Error)?.message ?? String(error)}`,
  );
  process.exit(1);
}

console.log(`Sluice is listening on ${runtime.url}`);
console.log(
  runtime.dataDir
    ? `Data is kept in ${runtime.dataDir}`
    : `Data is kept in memory and lost when Sluice stops (without --in-memory it is kept in ${resolve(options.data)})`,
);
console.log(`DynamoDB Local: ${runtime.dynamoEndpoint} (tables ${runtime.deps.tableName} and ${keysTableOf(runtime.deps)})`);
// A1: every request needs a token; this is the key to make them with (npm run token).
console.log(`Connection string: ${runtime.connectionString}`);
console.log(`Explorer: ${runtime.url}/explorer (paste the connection string there)`);
if (runtime.certificate) {
  // The certificate is self-signed: clients must be told to trust it.
  console.log(
    runtime.certificate.file
      ? `TLS certificate: ${runtime.certificate.file}\n  Node clients trust it with NODE_EXTRA_CA_CERTS=${runtime.certificate.file} (set before node starts),\n  or per client: new https.Agent({ ca: readFileSync('${runtime.certificate.file}') }) as the client's \`agent\` option.`
      : 'TLS certificate: generated in memory (new on every start); keep data on disk to keep one you can trust.',
  );
}
console.log('Press Ctrl-C to stop.');

let stopping = false;
const shutdown = (signal: NodeJS.Signals) => {
  if (stopping) {
    // A second signal: leave now (DynamoDB Local is still killed on exit).
    console.error(`${signal} again; exiting without waiting`);
    process.exit(1);
  }
  stopping = true;
  console.log(`${signal}: stopping Sluice...`);
  runtime.stop().then(
    () => {
      console.log('Sluice stopped.');
      process.exit(0);
    },
    (error: unknown) => {
      console.error('Sluice did not stop cleanly', error);
      process.exit(1);
    },
  );
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
