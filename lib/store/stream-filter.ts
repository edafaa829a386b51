import { MESSAGE_PK_PREFIX, SESSIONS_PK_PREFIX } from './keys.js';

/**
 * Which stream records the stream consumer is invoked for (Lambda event filtering, so the
 * rest cost nothing): message items, whatever happened to them (counts, forwarding, and TTL
 * removals, T7's backstop). The consumer acts on nothing else, so nothing else is delivered.
 * The handler checks again.
 */
export const streamFilterPatterns = [{ dynamodb: { Keys: { pk: { S: [{ prefix: MESSAGE_PK_PREFIX }] } } } }];

/**
 * The notify function's own mapping (H1): only writes that may leave a message receivable
 * (in the ready index and not locked: sends, copies, abandons, activations), and releases of
 * a session lock that put the session back in accept-next's index (N4). A receive's lock
 * sets `lockedUntil`, so it invokes nothing; neither does a send's update of a session entry
 * (its message's put hints already). The handler checks again.
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
    eventName: ['MODIFY'],
    dynamodb: {
      Keys: { pk: { S: [{ prefix: SESSIONS_PK_PREFIX }] } },
      OldImage: { lockToken: { S: [{ exists: true }] } },
      NewImage: { rpk: { S: [{ exists: true }] }, lockToken: { S: [{ exists: false }] } },
    },
  },
];
