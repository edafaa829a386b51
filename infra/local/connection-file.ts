/**
 * The root connection string, kept with the local runtime's data so that tools on the same
 * machine (the `sluice` CLI) can find the broker and its key without being told.
 *
 * The root rule itself lives in the table inside DynamoDB Local's files; reading it back
 * from there would mean starting Java. One small file, rewritten on every start (the port
 * may change), readable only by its owner because it holds the key.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const connectionFileName = 'connection-string';

export function writeConnectionFile(dataDir: string, connectionString: string): void {
  const file = join(dataDir, connectionFileName);
  writeFileSync(file, `${connectionString}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // writeFileSync's mode applies only when it creates the file
}

/** The saved connection string, or undefined when the folder holds none. */
export function readConnectionFile(dataDir: string): string | undefined {
  try {
    const text = readFileSync(join(dataDir, connectionFileName), 'utf8').trim();
    return text === '' ? undefined : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
