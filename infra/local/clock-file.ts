/**
 * The broker's time survives a restart with its data: the clock's offset is kept in the data
 * folder (`clock.json`), and a clock started on that data is never behind what it was.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OffsetClock } from '../../lib/clock.js';

interface ClockFile {
  offsetMs: number;
}

/**
 * Moves `clock` forward to the offset kept in `dataDir` (none in memory) and returns what
 * saves its offset there after each move.
 */
export function restoreClock(clock: OffsetClock, dataDir: string | null): () => void {
  const file = dataDir ? join(dataDir, 'clock.json') : null;
  const savedOffset = readClockOffset(file);
  if (savedOffset > clock.offset) clock.advance(savedOffset - clock.offset);
  return () => {
    if (file) writeJsonAtomic(file, { offsetMs: clock.offset } satisfies ClockFile);
  };
}

function readClockOffset(file: string | null): number {
  if (!file) return 0;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as ClockFile;
    return Number.isFinite(parsed.offsetMs) && parsed.offsetMs > 0 ? parsed.offsetMs : 0;
  } catch {
    return 0;
  }
}

function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, file);
}
