import { AUTH_PK, SESSIONS_PK_PREFIX } from './keys.js';

/**
 * Which stream records the stream consumer is invoked for (Lambda event filtering, so the
 * rest cost nothing). Patterns are OR'ed: message items (counts, forwarding) and every TTL
 * removal, which on AWS carries the DynamoDB service principal. The handler checks again.
 * No record of the key partition is ever delivered, whoever removed it (A4): the stream's
 * images carry the keys, and the consumer has no business reading them.
 */
export const streamFilterPatterns = [
  { dynamodb: { Keys: { pk: { S: [{ prefix: 'msg/' }] } } } },
  {
    userIdentity: { type: ['Service'], principalId: ['dynamodb.amazonaws.com'] },
    dynamodb: { Keys: { pk: { S: [{ 'anything-but': [AUTH_PK] }] } } },
  },
];

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
      Keys: { pk: { S: [{ prefix: 'msg/' }] } },
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
