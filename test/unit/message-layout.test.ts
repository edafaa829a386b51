/**
 * A message item as stored (lib/store/message-layout.ts): it does not repeat its key and keeps
 * only its lock token's random half; read back, it is the item the broker built, and an item
 * stored before (carrying `seq`, `eid`, `subqueue`, `partition` and the whole token) reads as
 * it is. Stream images read the same way.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb-streams';
import { describe, expect, it } from 'vitest';
import type { MessageItem } from '../../lib/messages/item.js';
import { isLockTokenShape, lockTokenOfStored, lockTokenTail, newLockToken, sequenceOfLockToken } from '../../lib/messages/lock-token.js';
import { itemBytes } from '../../lib/item-size.js';
import { messageKey, readySortKey } from '../../lib/store/keys.js';
import type { Subqueue } from '../../lib/entities/kinds.js';
import { messageOfStored, storedMessage } from '../../lib/store/message-layout.js';
import { messageOfImage } from '../../lib/store/stream-image.js';
import { toLambdaImage } from '../../infra/local/stream-records.js';

const seq = 117689552473686600n;

function built(subqueue: Subqueue, partition: number, more: Partial<MessageItem> = {}): MessageItem {
  const key = messageKey('20571c4d03c9', subqueue, partition, seq);
  return {
    ...key,
    seq: seq.toString(),
    eid: '20571c4d03c9',
    entity: 'queues/orders',
    subqueue,
    partition,
    messageId: '0116a675fc487752fa576a1681a19d3f',
    body: '{"a":1}',
    enqueuedAt: 1795800056056,
    state: 'Active',
    deliveryCount: 0,
    size: 7,
    v: 0,
    rpk: key.pk,
    rsk: readySortKey(1795800056056, seq),
    ...more,
  };
}

const cases: [string, MessageItem][] = [
  ['an active message', built('active', 0)],
  ['a message of partition 7', built('active', 7)],
  ['a dead-lettered message', built('deadletter', 0, { deadLetterReason: 'Broken', enqueuedSequenceNumber: '42' })],
  ['a transfer dead-letter', built('transfer', 0)],
  [
    'a locked session message',
    built('active', 3, {
      sessionId: 'life10-0',
      rpk: 'msg/20571c4d03c9/a/3/s/life10-0',
      lockToken: newLockToken(seq),
      lockedUntil: 1795800356104,
      slk: 'cd647025-1052-40c2-8b73-992fb38fd4e4',
      sgen: 1,
      deliveryCount: 1,
    }),
  ],
];

describe('the stored layout of a message item', () => {
  it.each(cases)('%s is stored without what its key holds, and reads back as built', (_what, item) => {
    const stored = storedMessage(item);
    for (const attribute of ['seq', 'eid', 'subqueue', 'partition']) expect(stored).not.toHaveProperty(attribute);
    if (item.lockToken) expect(stored.lockToken).toBe(lockTokenTail(item.lockToken));
    expect(messageOfStored(stored)).toEqual(item);
  });

  it('saves the key attributes and half the lock token: 81 bytes of a locked message', () => {
    const item = cases[4]![1];
    expect(itemBytes(item) - itemBytes(storedMessage(item))).toBe(81);
  });

  it('an item stored before (its key attributes and whole lock token carried) reads as it is', () => {
    const before = cases[4]![1];
    expect(messageOfStored(before)).toEqual(before);
    // Even where a carried value and the key disagree, the carried value is what the item says.
    expect(messageOfStored({ ...before, subqueue: 'deadletter' }).subqueue).toBe('deadletter');
  });

  it('keeps a value its key does not agree with, rather than lose it', () => {
    const odd = { ...built('active', 0), partition: 2, lockToken: newLockToken(seq + 1n) };
    const stored = storedMessage(odd);
    expect(stored.partition).toBe(2);
    expect(stored.lockToken).toBe(odd.lockToken);
    expect(messageOfStored(stored)).toEqual(odd);
  });

  it('a stream image of the stored item (binaries base64-encoded, as Lambda delivers them) reads as the built item', () => {
    const item = { ...cases[4]![1], body: new Uint8Array([1, 2, 3]) };
    const image = toLambdaImage(marshall(storedMessage(item), { removeUndefinedValues: true }) as Record<string, SdkAttributeValue>);
    const read = messageOfImage(image)!;
    expect({ ...read, body: new Uint8Array(read.body as Uint8Array) }).toEqual(item);
    expect(messageOfImage(undefined)).toBeUndefined();
  });
});

describe('lock tokens stored by their random half', () => {
  it('rebuild the token handed out: same GUID, same sequence number', () => {
    const token = newLockToken(seq);
    const tail = lockTokenTail(token);
    expect(tail).toMatch(/^[0-9a-f]{16}$/);
    expect(lockTokenOfStored(seq, tail)).toBe(token);
    expect(isLockTokenShape(lockTokenOfStored(seq, tail))).toBe(true);
    expect(sequenceOfLockToken(lockTokenOfStored(seq, tail))).toBe(seq);
  });

  it('a whole token stored before reads as it is', () => {
    const token = newLockToken(seq);
    expect(lockTokenOfStored(seq, token)).toBe(token);
  });
});
