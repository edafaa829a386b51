/**
 * A stream record's image as the item it shows. Lambda delivers binaries base64-encoded
 * (a compressed message body, lib/messages/body.ts, is one); `unmarshall` expects bytes, so
 * they are decoded first. Images already holding bytes (built with `marshall`) pass as they are.
 * A message item's image reads through `messageOfImage`, as the store's reads do.
 */
import type { AttributeValue as StreamAttributeValue } from 'aws-lambda';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { MessageItem } from '../messages/item.js';
import { messageOfStored, type StoredMessageItem } from './message-layout.js';

const bytes = (b: unknown): Uint8Array => (typeof b === 'string' ? Buffer.from(b, 'base64') : (b as Uint8Array));

function sdkValue(v: StreamAttributeValue): AttributeValue {
  if (v.B !== undefined) return { B: bytes(v.B) };
  if (v.BS !== undefined) return { BS: v.BS.map(bytes) };
  if (v.L !== undefined) return { L: v.L.map(sdkValue) };
  if (v.M !== undefined) return { M: sdkImage(v.M) };
  return v as AttributeValue;
}

const sdkImage = (image: Record<string, StreamAttributeValue>): Record<string, AttributeValue> =>
  Object.fromEntries(Object.entries(image).map(([k, v]) => [k, sdkValue(v)]));

export const itemOfImage = <T>(image: Record<string, StreamAttributeValue> | undefined): T | undefined =>
  image ? (unmarshall(sdkImage(image)) as T) : undefined;

/** A message item's image as the item reads (message-layout.ts): what its key holds filled in, its whole lock token. */
export const messageOfImage = (image: Record<string, StreamAttributeValue> | undefined): MessageItem | undefined => {
  const stored = itemOfImage<StoredMessageItem>(image);
  return stored ? messageOfStored(stored) : undefined;
};
