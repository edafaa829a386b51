/**
 * What the CLI prints: human-readable tables and key/value blocks by default, JSON with
 * `--json` (one document per command on stdout, so `| jq` works). Errors and progress go to
 * stderr, never into the data.
 */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** stderr is a terminal: progress may redraw one line. */
  errIsTty: boolean;
}

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** Cut longer cells to this width with an ellipsis. */
  max?: number;
}

export function cell(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

const clip = (text: string, max: number | undefined) => {
  const flat = text.replace(/\s+/g, ' ');
  return max !== undefined && flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((row) => columns.map((c) => clip(cell(c.value(row)), c.max)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n') + '\n';
}

/** `key  value` lines; nested objects (runtime counts) are indented under their key. */
export function record(value: Record<string, unknown>, indent = ''): string {
  const keys = Object.keys(value);
  const width = Math.max(0, ...keys.map((k) => k.length));
  return keys
    .map((k) => {
      const v = value[k];
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date)) {
        return `${indent}${k}:\n${record(v as Record<string, unknown>, `${indent}  `)}`;
      }
      return `${indent}${k.padEnd(width)}  ${v === null ? '-' : cell(v)}\n`;
    })
    .join('');
}

export const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/**
 * Progress of long work on stderr: a redrawn bar on a terminal, nothing otherwise (a script
 * reading stderr wants the one-line error, not hundreds of progress lines).
 */
export function progress(io: Io, label: string, total: number | undefined) {
  let last = '';
  const draw = (done: number) => {
    if (!io.errIsTty) return;
    const width = 30;
    const text =
      total && total > 0
        ? (() => {
            const ratio = Math.min(1, done / total);
            const filled = Math.round(ratio * width);
            return `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total}`;
          })()
        : `${label} ${done}`;
    if (text !== last) io.err(`\r${text}\x1b[K`);
    last = text;
  };
  return {
    update: draw,
    done(): void {
      if (io.errIsTty && last) io.err('\n');
    },
  };
}
