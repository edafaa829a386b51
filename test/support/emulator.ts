import { inject } from 'vitest';

/** The emulator this worker uses now; fresh-emulator.ts replaces it between files. */
interface WorkerEmulator {
  endpoint: string;
  /** When this worker started using it (real time: how long it has served, not a rule's clock). */
  since: number;
}

// Kept on globalThis: workers run file after file without reloading modules (isolate: false),
// but a setup file's module may still be evaluated anew for each file.
const holder = globalThis as { sluiceWorkerEmulator?: WorkerEmulator };

const poolIndex = () => Number(process.env.VITEST_POOL_ID ?? '1') - 1;

function workerEmulator(): WorkerEmulator {
  if (!holder.sluiceWorkerEmulator) {
    const all = inject('dynamoEndpoints');
    holder.sluiceWorkerEmulator = { endpoint: all[poolIndex() % all.length]!, since: Date.now() };
  }
  return holder.sluiceWorkerEmulator;
}

/** This worker's DynamoDB Local: global-setup.ts starts one per worker, so workers never queue on each other's. */
export function workerEndpoint(): string {
  return workerEmulator().endpoint;
}

/**
 * How long one emulator serves a worker before the next file gets a fresh one. A fresh one
 * costs a second or two of one core (started ahead, while files run); an emulator that has
 * served a few heavy files costs several times that on each file after them. Measured on 2
 * cores, the whole run took 255-270 s swapping every 40 s, 275 s every 80 s, 300 s every 10 s.
 */
const SERVICE_MS = 40_000;

/** Called before each test file: swaps in a fresh emulator once this one has served long enough. */
export async function freshEmulatorIfWorn(): Promise<void> {
  const current = workerEmulator();
  if (Date.now() - current.since < SERVICE_MS) return;
  const response = await fetch(`${inject('emulatorControl')}/?worker=${poolIndex()}`, { method: 'POST' });
  if (!response.ok) throw new Error(`no fresh DynamoDB Local: ${response.status} ${await response.text()}`);
  const { endpoint } = (await response.json()) as { endpoint: string };
  holder.sluiceWorkerEmulator = { endpoint, since: Date.now() };
}

/**
 * Says the worker's emulator has served its term, so the next file gets a fresh one: for a heavy
 * file, after which the emulator stays slow for good (after the 4,000-message session drain, the
 * files that ran next on it took 3 to 6 times as long, dropping the tables did not help), also
 * when the file took less than `SERVICE_MS`. The fresh one was started ahead (global-setup.ts).
 */
export function retireWorkerEmulator(): void {
  workerEmulator().since = Number.NEGATIVE_INFINITY;
}
