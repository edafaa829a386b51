/**
 * The `sluice` command's cold start: a fresh `node bin/sluice.js` per run, as `npx sluice`
 * starts it, timed from spawn to exit (what a person at a terminal waits for). `--help` is
 * the start alone; `queue list` adds one signed HTTP call to the local runtime. For scale, the
 * same `--help` through tsx, as the CLI ran before it was bundled.
 */
import { execFile, spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../infra/paths.js';
import { median } from './harness.js';

const run = promisify(execFile);

export interface CliResult {
  /** dist/cli/sluice.js as `npm run build:cli` writes it. */
  bundleBytes: number;
  /** Fresh processes per figure, after one untimed run (the files are in the page cache, as on a used machine). */
  runs: number;
  /** Median wall ms from spawn to exit. */
  coldStartMs: { help: number; queueList: number };
  /** Median CPU ms (user + system) of the same processes: less disturbed by other load on the machine. */
  cpuMs: { help: number; queueList: number };
  /** Every run's wall ms. */
  runsMs: { help: number[]; queueList: number[] };
  /** `node --import tsx infra/cli/main.ts --help`, median of 3: the CLI before it was bundled. */
  helpViaTsxMs: number;
}

/**
 * The child reports its own CPU time (user + system, bootstrap included) on a fourth pipe as it
 * exits: on a loaded machine that is steadier than the wall time, which waits for the cores.
 */
const reportCpu =
  "data:text/javascript,import{writeSync}from'node:fs';process.on('exit',()=>{const u=process.cpuUsage();try{writeSync(3,String((u.user+u.system)/1000))}catch{}})";

function timed(args: string[], env: NodeJS.ProcessEnv): Promise<{ wall: number; cpu: number }> {
  const t = performance.now();
  const child = spawn(process.execPath, [`--import=${reportCpu}`, ...args], { cwd: repoRoot, env, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let cpu = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdio[3]!.on('data', (d: Buffer) => (cpu += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const wall = performance.now() - t;
      if (code !== 0) reject(new Error(`sluice ${args.slice(1).join(' ')} exited ${code}: ${stderr}`));
      else resolve({ wall, cpu: Number(cpu) });
    });
  });
}

async function medianOf(args: string[], env: NodeJS.ProcessEnv, runs: number): Promise<{ wall: number; cpu: number; walls: number[] }> {
  await timed(args, env);
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await timed(args, env);
    walls.push(r.wall);
    cpus.push(r.cpu);
  }
  return { wall: median(walls), cpu: median(cpus), walls };
}

/** Builds the CLI as `prepare` does, then times it; `connectionString` is the local runtime's. */
export async function runCliStart(connectionString: string, runs = 10): Promise<CliResult> {
  await run(process.execPath, ['tools/build-cli.mjs'], { cwd: repoRoot, timeout: 120_000 });
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_CONNECTION_STRING: connectionString };
  delete env.NODE_OPTIONS;
  const bin = join(repoRoot, 'bin/sluice.js');
  const help = await medianOf([bin, '--help'], env, runs);
  const queueList = await medianOf([bin, 'queue', 'list', '--json'], env, runs);
  const viaTsx = await medianOf(['--import', 'tsx', join(repoRoot, 'infra/cli/main.ts'), '--help'], env, 3);
  return {
    bundleBytes: statSync(join(repoRoot, 'dist/cli/sluice.js')).size,
    runs,
    coldStartMs: { help: help.wall, queueList: queueList.wall },
    cpuMs: { help: help.cpu, queueList: queueList.cpu },
    runsMs: { help: help.walls, queueList: queueList.walls },
    helpViaTsxMs: viaTsx.wall,
  };
}

export const CLI_TARGET = 'sluice --help cold start';

/** The target of a bench report (bench/report.ts's `Target`). */
export function cliTargets(c: CliResult | undefined): { name: string; value: string; target: string; pass: boolean }[] {
  if (!c) return [];
  return [{ name: CLI_TARGET, value: `${c.coldStartMs.help.toFixed(0)} ms`, target: '< 300 ms', pass: c.coldStartMs.help < 300 }];
}

export function printCli(c: CliResult | undefined, out: (line: string) => void = console.log): void {
  if (!c) return;
  out('');
  out(
    `CLI — cold start of \`sluice\` (bin/sluice.js on the ${(c.bundleBytes / 1024).toFixed(0)} KB bundle), median of ${c.runs} fresh processes: ` +
      `--help ${c.coldStartMs.help.toFixed(0)} ms (${c.cpuMs.help.toFixed(0)} ms CPU), ` +
      `queue list against the local runtime ${c.coldStartMs.queueList.toFixed(0)} ms (${c.cpuMs.queueList.toFixed(0)} ms CPU) ` +
      `(--help through tsx, as before the bundle: ${c.helpViaTsxMs.toFixed(0)} ms)`,
  );
}
