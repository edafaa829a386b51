/**
 * When a body is stored compressed (only when that saves a write unit of the locked
 * item), that every stored form reads back as the text that was sent, and that stream images
 * with base64 binaries (as Lambda delivers them) read back as bytes.
 */
import { randomBytes } from 'node:crypto';
import { brotliCompressSync, constants } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb-streams';
import { bodyTextOf, LOCK_HEADROOM_BYTES, packBody, SESSION_LOCK_HEADROOM_BYTES } from '../../lib/messages/body.js';
import type { MessageItem } from '../../lib/messages/item.js';
import { itemBytes, writeUnitsOf } from '../../lib/item-size.js';
import { storedMessage } from '../../lib/store/message-layout.js';
import { itemOfImage } from '../../lib/store/stream-image.js';
import { toLambdaImage } from '../../infra/local/stream-records.js';
import { seededRandom } from '../../bench/payloads.js';

const item: Omit<MessageItem, 'body'> = {
  pk: 'msg/0123456789ab/a/0',
  sk: '0001763883863512000',
  seq: '1763883863512000',
  eid: '0123456789ab',
  entity: 'queues/orders',
  subqueue: 'active',
  partition: 0,
  messageId: '0123456789abcdef0123456789abcdef',
  enqueuedAt: 1763883863512,
  state: 'Active',
  deliveryCount: 0,
  size: 0,
  v: 0,
  rpk: 'msg/0123456789ab/a/0',
  rsk: '001763883863512/0001763883863512000',
};
/** The item as it is put (its key not repeated), body aside: what packBody is given. */
const stored = storedMessage({ ...item, body: '' });
const lockedUnits = (body: string | Uint8Array) => writeUnitsOf(itemBytes({ ...stored, body }) + LOCK_HEADROOM_BYTES);

describe('packBody', () => {
  it('keeps a body whose item already takes one unit as text', () => {
    const text = JSON.stringify({ text: 'a'.repeat(400) });
    expect(packBody(stored, text)).toBe(text);
  });

  it('compresses a repetitive 1 KB body: the locked item drops from 2 units to 1', () => {
    const text = JSON.stringify({ items: Array.from({ length: 20 }, (_, i) => ({ sku: `SKU-${i}`, name: 'Merino wool crew neck sweater', quantity: 1 })) });
    expect(lockedUnits(text)).toBe(2);
    const packed = packBody(stored, text);
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(lockedUnits(packed)).toBe(1);
    expect(bodyTextOf(packed)).toBe(text);
  });

  it('keeps text when compression shrinks the body but not by a unit', () => {
    // Base64 of random bytes: Brotli takes it to about 75%, and the locked item stays at 2 units.
    const text = JSON.stringify(randomBytes(768).toString('base64'));
    expect(brotliCompressSync(text).byteLength).toBeLessThan(0.8 * text.length);
    expect(lockedUnits(text)).toBe(2);
    expect(packBody(stored, text)).toBe(text);
  });

  it('tries the best quality on text with no repeats when it may be just enough: random numbers', () => {
    // Digits coded by their frequencies take about 446 bytes here; the fast quality makes ~519,
    // the best one ~474. Room for exactly what the best one makes: only it saves the unit.
    const next = seededRandom(7);
    const text = JSON.stringify(Array.from({ length: 150 }, () => Math.round(next() * 1e6)));
    const fast = brotliCompressSync(text, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }).byteLength;
    const best = brotliCompressSync(text, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
    }).byteLength;
    expect(best).toBeLessThan(fast);
    const base = storedMessage({ ...item, subject: '', body: '' });
    const subject = 'x'.repeat(1024 - best - itemBytes(base) - LOCK_HEADROOM_BYTES);
    const roomy = storedMessage({ ...item, subject, body: '' });
    expect(writeUnitsOf(itemBytes({ ...roomy, body: text }) + LOCK_HEADROOM_BYTES)).toBe(2);
    const packed = packBody(roomy, text);
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(writeUnitsOf(itemBytes({ ...roomy, body: packed }) + LOCK_HEADROOM_BYTES)).toBe(1);
    expect(bodyTextOf(packed)).toBe(text);
  });

  it("leaves room for a session message's lock (N3): compressed where a plain message of the same size is not", () => {
    const sessionId = 'order-1';
    const inSession = storedMessage({ ...item, sessionId, rpk: `${item.pk}/s/${sessionId}`, body: '' });
    const plain = storedMessage({ ...item, sessionId, body: '' });
    // A body that leaves a plain message's lock just room enough in one unit, not a session lock's.
    const room = 1024 - itemBytes(inSession) - LOCK_HEADROOM_BYTES;
    const text = JSON.stringify({ note: 'Leave the parcel with the neighbour. '.repeat(40).slice(0, room - 10 - '{"note":""}'.length) });
    expect(writeUnitsOf(itemBytes({ ...plain, body: text }) + LOCK_HEADROOM_BYTES)).toBe(1);
    expect(writeUnitsOf(itemBytes({ ...inSession, body: text }) + LOCK_HEADROOM_BYTES + SESSION_LOCK_HEADROOM_BYTES)).toBe(2);
    expect(packBody(plain, text)).toBe(text);
    const packed = packBody(inSession, text);
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(writeUnitsOf(itemBytes({ ...inSession, body: packed }) + LOCK_HEADROOM_BYTES + SESSION_LOCK_HEADROOM_BYTES)).toBe(1);
    expect(bodyTextOf(packed)).toBe(text);
  });

  it('leaves an already compressed body as it is, and reads text with any characters back', () => {
    const text = JSON.stringify({ name: 'María González, Straße 12, 東京', note: 'ü'.repeat(900) });
    const packed = packBody(stored, text);
    expect(packed).toBeInstanceOf(Uint8Array);
    expect(packBody(stored, packed)).toBe(packed);
    expect(bodyTextOf(packed)).toBe(text);
    expect(bodyTextOf(text)).toBe(text);
  });
});

describe('stream images', () => {
  it('decode base64 binaries, also nested, as Lambda delivers them', () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const stored = { pk: 'p', body: bytes, nested: { b: bytes, list: [bytes] }, n: 3 };
    const lambda = toLambdaImage(marshall(stored) as Record<string, SdkAttributeValue>);
    expect(typeof lambda.body?.B).toBe('string');
    const back = itemOfImage<typeof stored>(lambda)!;
    expect(new Uint8Array(back.body)).toEqual(bytes);
    expect(new Uint8Array(back.nested.b)).toEqual(bytes);
    expect(new Uint8Array(back.nested.list[0]!)).toEqual(bytes);
    expect(back.n).toBe(3);
    // Images built with marshall (bytes already) read the same.
    expect(new Uint8Array(itemOfImage<typeof stored>(marshall(stored) as never)!.body)).toEqual(bytes);
  });
});
