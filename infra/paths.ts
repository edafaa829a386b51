import { fileURLToPath } from 'node:url';
import path from 'node:path';

/**
 * The repository root, found from this file rather than from the working directory, so
 * `cdk synth`, vitest and tsx resolve the same paths wherever they are started.
 */
export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** The Lambda handlers, one directory each under `functions/`. */
export type FunctionName = 'api' | 'stream' | 'sweeper' | 'reaper' | 'notify';

export function handlerEntry(name: FunctionName): string {
  return path.join(repoRoot, 'functions', name, 'handler.ts');
}
