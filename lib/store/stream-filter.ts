/**
 * Which stream records the stream consumer is invoked for (Lambda event filtering, so the
 * rest cost nothing). Patterns are OR'ed: message items (counts, forwarding) and every TTL
 * removal, which on AWS carries the DynamoDB service principal. The handler checks again.
 */
export const streamFilterPatterns = [
  { dynamodb: { Keys: { pk: { S: [{ prefix: 'msg/' }] } } } },
  { userIdentity: { type: ['Service'], principalId: ['dynamodb.amazonaws.com'] } },
];
