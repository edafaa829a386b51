/**
 * One example body for each request schema. Each shows every field the schema has, and
 * test/unit/openapi.test.ts checks that the broker's real parser accepts it.
 */
import type { RequestSchemaName } from './schemas.js';

/** A well-formed lock token for sequence number 42 (the first 64 bits are the sequence number). */
export const LOCK_TOKEN = '00000000-0000-002a-8c1f-4be29d07a3e6';
const LOCK_TOKEN_43 = '00000000-0000-002b-51d0-93ae6c2f7b18';
/** A session lock token as `POST {R}/sessions/accept` answers it. */
export const SESSION_LOCK_TOKEN = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

export const requestExamples: Partial<Record<RequestSchemaName, unknown>> = {
  QueueProperties: {
    lockDuration: 'PT30S',
    maxDeliveryCount: 5,
    defaultMessageTimeToLive: 'P14D',
    deadLetteringOnMessageExpiration: true,
    autoDeleteOnIdle: null,
    requiresSession: false,
    forwardTo: null,
    forwardDeadLetteredMessagesTo: null,
    status: 'Active',
    requiresDuplicateDetection: true,
    duplicateDetectionHistoryTimeWindow: 'PT10M',
    maxSizeInMegabytes: 1024,
    enablePartitioning: false,
  },
  TopicProperties: {
    defaultMessageTimeToLive: 'P7D',
    autoDeleteOnIdle: null,
    status: 'Active',
    requiresDuplicateDetection: false,
    duplicateDetectionHistoryTimeWindow: 'PT10M',
    maxSizeInMegabytes: 1024,
    enablePartitioning: false,
  },
  SubscriptionProperties: {
    lockDuration: 'PT1M',
    maxDeliveryCount: 10,
    defaultMessageTimeToLive: null,
    deadLetteringOnMessageExpiration: true,
    deadLetteringOnFilterEvaluationExceptions: false,
    autoDeleteOnIdle: 'PT1H',
    requiresSession: false,
    forwardTo: null,
    forwardDeadLetteredMessagesTo: 'queues/audit-dead-letters',
    status: 'Active',
  },
  RuleProperties: {
    filter: { sql: "color = 'red' AND sys.label LIKE 'a%'" },
    action: { sql: "SET priority = 'high'" },
  },
  Message: {
    body: { any: 'JSON value' },
    contentType: 'application/json',
    messageId: 'm-1',
    correlationId: 'c-1',
    sessionId: 's-1',
    replyTo: 'q2',
    replyToSessionId: 's-2',
    subject: 'order.created',
    to: 'x',
    partitionKey: 's-1',
    timeToLive: 'PT10M',
    scheduledEnqueueTime: '2026-11-20T12:05:00Z',
    applicationProperties: { color: 'red', n: 3, ok: true },
  },
  MessageBatch: {
    messages: [
      { body: { order: 1 }, messageId: 'm-1' },
      { body: { order: 2 }, messageId: 'm-2', applicationProperties: { color: 'blue' } },
    ],
  },
  ReceiveOptions: { mode: 'peekLock', maxMessages: 10, maxWaitTime: 'PT5S' },
  CompleteRequest: { lockToken: LOCK_TOKEN },
  AbandonRequest: { lockToken: LOCK_TOKEN, propertiesToModify: { attempts: 2 } },
  DeferRequest: { lockToken: LOCK_TOKEN, propertiesToModify: { deferredBy: 'worker-7' } },
  DeadLetterRequest: {
    lockToken: LOCK_TOKEN,
    deadLetterReason: 'InvalidOrder',
    deadLetterErrorDescription: 'customer id is missing',
    propertiesToModify: { checkedBy: 'validator' },
  },
  RenewLockRequest: { lockToken: LOCK_TOKEN },
  LockTokens: { lockTokens: [LOCK_TOKEN, LOCK_TOKEN_43] },
  DeferredRequest: { sequenceNumbers: ['42', '43'] },
  DeleteMessagesRequest: { maxMessageCount: 500, beforeEnqueueTime: '2026-11-20T12:00:00Z' },
  ResubmitRequest: { sequenceNumbers: ['42'], maxMessages: 100, to: 'queues/orders-retry' },
  AuthorizationRuleProperties: { rights: ['Send', 'Listen'] },
  RegenerateKeyRequest: { key: 'primary' },
  AcceptSessionRequest: { sessionId: 'order-7', maxWaitTime: 'PT5S' },
  SessionReceiveOptions: { sessionLockToken: SESSION_LOCK_TOKEN, mode: 'peekLock', maxMessages: 10, maxWaitTime: 'PT5S' },
  SessionLockRequest: { sessionLockToken: SESSION_LOCK_TOKEN },
  SessionStateUpdate: { sessionLockToken: SESSION_LOCK_TOKEN, state: 'eyJzdGVwIjoicGFpZCJ9' },
  SessionDeferredRequest: { sessionLockToken: SESSION_LOCK_TOKEN, sequenceNumbers: ['42', '43'] },
  ClockAdvance: { advance: 'PT6M' },
};
