/**
 * How a message body is stored. A body is JSON text. DynamoDB bills a write by the
 * started kilobyte of the item, and a message is written three times in its life (send,
 * lock, settle), so a body is stored compressed when, and only when, that makes its item one
 * write unit smaller: then `body` is a Binary attribute holding the Brotli-compressed UTF-8
 * text; otherwise it is the text itself, as before. Everything that reads a body reads it
 * through `bodyTextOf`; copies (dead-letter, forwarding, fan-out, resubmit) carry the stored
 * form along unchanged. S5's `size` is always the uncompressed size.
 */
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { itemBytes, WRITE_UNIT_BYTES, writeUnitsOf } from '../item-size.js';

/** The text, or its Brotli compression (a DynamoDB Binary). */
export type StoredBody = string | Uint8Array;

const decoder = new TextDecoder();

export const bodyTextOf = (body: StoredBody): string => (typeof body === 'string' ? body : decoder.decode(brotliDecompressSync(body)));

export const isCompressed = (body: StoredBody): body is Uint8Array => typeof body !== 'string';

/**
 * What a stored message gains after its send, in the worst case of a life: its lock (token 25
 * bytes, its random half: store/message-layout.ts; lockedUntil 19), the sweeper's agenda entry
 * on its last delivery (dpk/dsk, 19), a growing delivery count and version. A body is
 * compressed by what its item weighs when locked.
 */
export const LOCK_HEADROOM_BYTES = 76;

/**
 * What a session message's lock adds to that (N3): the session lock it is taken under (`slk`,
 * 39 bytes), its generation (`sgen`, up to 9) and that generation after its ready sort key
 * (up to 8).
 */
export const SESSION_LOCK_HEADROOM_BYTES = 56;

/** What packBody reads of an item besides its size: whether it is in its session's own ready partition (message-items.ts `isSessionMessage`). */
interface Placed {
  pk: string;
  rpk?: string;
  sessionId?: string;
}

const inSession = (item: Placed) => item.sessionId !== undefined && item.rpk !== undefined && item.rpk !== item.pk;

/** What a stored item weighs locked, body aside. */
export const lockedBytesBesideBody = (stored: Placed) =>
  itemBytes({ ...stored, body: '' }) + LOCK_HEADROOM_BYTES + (inSession(stored) ? SESSION_LOCK_HEADROOM_BYTES : 0);

/** Fast and near the best for small bodies; the slow best only for a few KB, and only when close. */
const FAST_QUALITY = 5;
const BEST_QUALITY = 11;
const BEST_QUALITY_MAX_BYTES = 4096;

const compress = (text: string, quality: number) =>
  brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(text),
    },
  });

/**
 * A topic's fan-out builds one item per subscription from the same text: it is compressed
 * once. One entry is enough (the copies of one send are built one after another).
 */
let last: { text: string; quality: number; packed: Uint8Array } | undefined;
function compressOnce(text: string, quality: number): Uint8Array {
  if (last?.text === text && last.quality === quality) return last.packed;
  const packed = new Uint8Array(compress(text, quality));
  last = { text, quality, packed };
  return packed;
}

/**
 * The body to store in `stored` (the item as it is put, store/message-layout.ts
 * `storedMessage`, with everything but the body set, its ready partition included): the text,
 * or its compression if that saves at least one write unit per write of the locked item.
 * A body already stored compressed (a copy of a stored message) stays as it is.
 */
export function packBody(stored: Placed, body: StoredBody): StoredBody {
  if (isCompressed(body)) return body;
  const rest = lockedBytesBesideBody(stored);
  const plain = writeUnitsOf(rest + Buffer.byteLength(body));
  if (plain === 1) return body;
  // Small enough to save a unit: at most this many bytes.
  const wanted = (plain - 1) * WRITE_UNIT_BYTES - rest;
  let packed = compressOnce(body, FAST_QUALITY);
  // The best quality wins a few percent over the fast one: worth its time only when that is all
  // that is missing, and when it can get there at all (`withoutRepeatsBytes`).
  if (packed.byteLength > wanted && packed.byteLength <= wanted * 1.1 && Buffer.byteLength(body) <= BEST_QUALITY_MAX_BYTES && mayReach(body, packed, wanted))
    packed = compressOnce(body, BEST_QUALITY);
  return packed.byteLength <= wanted ? packed : body;
}

/**
 * Whether the best quality may get `text` down to `wanted` bytes where the fast one made
 * `packed` of it. When the fast one did no better than `withoutRepeatsBytes`, it found no
 * repeats worth using (random-looking text: base64 or hex of encrypted bytes), and the best
 * one's slower search finds none either: it ends near that figure too (1 KB of base64: 763
 * bytes without repeats, 797 fast, 798 best), so it is tried only if that figure fits. Text
 * with repeats (JSON) always gets its try. A cost decision only: either way the body stored
 * decodes to the same text; the best quality costs about ten times the fast one (0.7 ms a KB).
 */
function mayReach(text: string, packed: Uint8Array, wanted: number): boolean {
  const floor = withoutRepeatsBytes(text);
  return packed.byteLength < floor || wanted >= floor;
}

/** Bytes `text` takes coded a byte at a time by each byte's frequency in it (its order-0 entropy): what is left when there are no repeats to use. */
function withoutRepeatsBytes(text: string): number {
  const counts = new Uint32Array(256);
  // ASCII text (base64, hex, most JSON) is its own UTF-8 bytes: counted without encoding a copy.
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) {
      counts.fill(0);
      const bytes = Buffer.from(text);
      for (let j = 0; j < bytes.length; j++) counts[bytes[j]!]!++;
      length = bytes.length;
      break;
    }
    counts[code]!++;
  }
  let bits = 0;
  for (let b = 0; b < 256; b++) {
    const n = counts[b]!;
    if (n > 0) bits -= n * Math.log2(n / length);
  }
  return Math.ceil(bits / 8);
}
