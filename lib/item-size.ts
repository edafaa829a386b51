/**
 * DynamoDB's size of an item, the figure it bills by: the UTF-8 length of every attribute
 * name plus its value (a string's UTF-8 bytes, a binary's bytes, a number's significant
 * digits / 2 + 1, 1 byte for a boolean or null, 3 bytes plus the members of a list or map).
 * Every write costs one unit per started 1 KB of it (the larger of the old and new item).
 */
export const WRITE_UNIT_BYTES = 1024;

export function itemBytes(item: object): number {
  return Object.entries(item).reduce((n, [k, v]) => (v === undefined ? n : n + Buffer.byteLength(k) + valueBytes(v)), 0);
}

function valueBytes(v: unknown): number {
  if (v === null || v === undefined || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number' || typeof v === 'bigint') {
    const digits = String(v).replace(/[-.]/g, '').replace(/^0+/, '').length || 1;
    return Math.ceil(digits / 2) + 1;
  }
  if (v instanceof Uint8Array) return v.byteLength;
  if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + valueBytes(x), 0);
  if (typeof v === 'object') return 3 + Object.entries(v as Record<string, unknown>).reduce((n, [k, x]) => n + 1 + Buffer.byteLength(k) + valueBytes(x), 0);
  return 0;
}

/** Write units one write of an item of `bytes` costs on the table (indexes extra). */
export const writeUnitsOf = (bytes: number) => Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
