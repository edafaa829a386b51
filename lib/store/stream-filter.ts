import { MESSAGE_PK_PREFIX, POSITIONED_PK_PREFIX, SESSIONS_PK_PREFIX } from './keys.js';

/**
 * Which stream records the stream consumer is invoked for (Lambda event filtering, so the
 * rest cost nothing): message items, whatever happened to them (counts, forwarding, and TTL
 * removals, T7's backstop). The consumer acts on nothing else, so nothing else is delivered.
 * The handler checks again.
 */
export const streamFilterPatterns = [{ dynamodb: { Keys: { pk: { S: [{ prefix: MESSAGE_PK_PREFIX }] } } } }];

/**
 * The stream consumer's batch size on AWS and in the local runtime: the most one GetRecords
 * returns. Large batches keep a message's insert and removal together more often, and they
 * then share one count marker (E6); Lambda still cuts a batch at 6 MB.
 */
export const streamBatchSize = 1000;

/**
 * The notify function's own mapping (H1): only writes that may leave a message receivable
 * (in the ready index and not locked: sends, copies, abandons, activations), and releases of
 * a session lock that put the session back in accept-next's index (N4). A receive's lock
 * sets `lockedUntil`, so it invokes nothing; neither does a send's update of a session entry
 * (its message's put hints already). A positioned message's put (store/positions.ts) makes it
 * receivable as a `ready` entry's does; a tombstone (`tomb`) makes nothing receivable. A
 * positioned message's abandon (R4) raises `g` and removes `gl` (lease-settlements.ts
 * `abandonAtPositions`); a lapse's take-back sets `gl`, a complete leaves `done` or deletes, so
 * none of those invokes notify, nor a receive (a lock writes no positioned message). The
 * handler checks again (`g` rose).
 */
export const hintFilterPatterns = [
  {
    eventName: ['INSERT', 'MODIFY'],
    dynamodb: {
      Keys: { pk: { S: [{ prefix: MESSAGE_PK_PREFIX }] } },
      NewImage: { rpk: { S: [{ exists: true }] }, lockedUntil: { N: [{ exists: false }] } },
    },
  },
  {
    eventName: ['INSERT'],
    dynamodb: {
      Keys: { pk: { S: [{ prefix: POSITIONED_PK_PREFIX }] } },
      NewImage: { tomb: { N: [{ exists: false }] } },
    },
  },
  {
    eventName: ['MODIFY'],
    dynamodb: {
      Keys: { pk: { S: [{ prefix: POSITIONED_PK_PREFIX }] } },
      NewImage: { g: { N: [{ exists: true }] }, gl: { N: [{ exists: false }] }, done: { N: [{ exists: false }] }, tomb: { N: [{ exists: false }] } },
    },
  },
  {
    eventName: ['MODIFY'],
    dynamodb: {
      Keys: { pk: { S: [{ prefix: SESSIONS_PK_PREFIX }] } },
      OldImage: { lockToken: { S: [{ exists: true }] } },
      NewImage: { rpk: { S: [{ exists: true }] }, lockToken: { S: [{ exists: false }] } },
    },
  },
];
