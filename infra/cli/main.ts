/**
 * `sluice`: the command line for a Sluice namespace (README, "The sluice CLI").
 * bin/sluice.js runs it from its bundle (dist/cli/sluice.js, made by tools/build-cli.mjs);
 * `runCli` is the whole program, with its world passed in.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { entityGroups } from './commands/entities.js';
import { messageCommands } from './commands/messages.js';
import { defaultDataDir } from './connection.js';
import type { CliEnv } from './context.js';
import { exitCodes, toCliError } from './errors.js';
import { tokenCommand } from './token.js';

export function buildProgram(cli: CliEnv, stdinIsTty: boolean): Command {
  const program = new Command('sluice')
    .description('Manage and use a Sluice namespace: entities, messages, dead letters, tokens.')
    .version(packageVersion())
    .option('--connection-string <text>', 'Endpoint=...;SharedAccessKeyName=...;SharedAccessKey=...')
    .option('--data <dir>', `the local runtime's data folder, read when no connection string is given`, defaultDataDir)
    .option('--json', 'print JSON (for scripts) instead of tables')
    .showHelpAfterError('(add --help for usage)')
    .addHelpText(
      'after',
      `
The connection string comes from --connection-string, else $SLUICE_CONNECTION_STRING, else the
folder where \`npm start\` keeps its data (--data, default ${defaultDataDir}).

Exit codes: 0 ok, 1 failed, 2 bad input, 3 not found, 4 unauthorized or no connection string,
5 conflict (already exists, lock lost, disabled), 6 broker unreachable or busy (try again).`,
    );
  for (const group of entityGroups(cli)) program.addCommand(group);
  for (const command of messageCommands(cli, stdinIsTty)) program.addCommand(command);
  program.addCommand(tokenCommand(cli));
  // Every command reports its own errors the same way; commander's usage errors exit 2.
  const configure = (command: Command) => {
    command.exitOverride().configureOutput({ writeOut: (s) => cli.io.out(s), writeErr: (s) => cli.io.err(s) });
    command.commands.forEach(configure);
  };
  configure(program);
  return program;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Runs the CLI; resolves to the exit code. */
export async function runCli(argv: readonly string[], cli: CliEnv, stdinIsTty = true): Promise<number> {
  const program = buildProgram(cli, stdinIsTty);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCodes.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version are not errors; everything else commander refuses is bad input.
      return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    }
    const e = toCliError(error);
    cli.io.err(`error: ${e.line}\n`);
    return e.exitCode;
  }
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) await main();

export async function main(): Promise<void> {
  const abort = new AbortController();
  let interrupted = false;
  process.on('SIGINT', () => {
    // First Ctrl-C: stop following and exit cleanly; a second one leaves at once.
    if (interrupted) process.exit(130);
    interrupted = true;
    abort.abort();
  });
  process.on('SIGTERM', () => abort.abort());
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0); // `sluice peek q | head` is fine
  });
  const code = await runCli(
    process.argv.slice(2),
    {
      io: { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t), errIsTty: process.stderr.isTTY === true },
      env: process.env,
      cwd: process.cwd(),
      readStdin: async () => {
        const chunks: Buffer[] = [];
        for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks);
      },
      signal: abort.signal,
      now: Date.now,
    },
    process.stdin.isTTY === true,
  );
  process.exitCode = code;
}
