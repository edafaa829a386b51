/**
 * The response bodies of the HTTP API by name, as zod schemas: the route table names
 * each route's answers from here (lib/api/routes.ts), and docs/openapi.json is generated
 * from them (infra/openapi); the name is the document's component name.
 *
 * A presenter's body is described once, beside the presenter where it has one
 * (`presentMessage`, `presentEntity`, `receiptOf`), whose return type is the schema's wire
 * form (`z.input`), so tsc fails when they drift apart. The smaller answers the broker
 * returns as they are are described here, and `Presented` below holds each broker
 * function's return type to its schema. Nothing parses an answer at run time (Lambda time);
 * test/api/openapi-answers.test.ts validates real answers against the document.
 *
 * Only infra and the tests import this module at run time.
 */
import * as z from 'zod/mini';
import { RIGHTS } from '../auth/sas.js';
import type { presentAuthRule } from '../broker/authorization.js';
import type { deleteMessages, purge } from '../broker/bulk-delete.js';
import type { resubmit } from '../broker/resubmit.js';
import { entityListSchemas, entityViewSchemas, runtimeSchema, topicRuntimeSchema } from '../broker/entities.js';
import { sendReceiptSchema } from '../broker/message-items.js';
import type { Broker } from '../broker/index.js';
import type { listRules, presentRule } from '../broker/filter-rules.js';
import type { SendAnswer } from '../broker/send.js';
import type { acceptSession, getSessionState, listSessions, renewSessionLock } from '../broker/sessions.js';
import type { renewLock } from '../broker/settle.js';
import { ERROR_CODES } from '../errors.js';
import { actionSpecSchema, filterSpecSchema } from '../filters/spec.js';
import { receivedMessageSchema } from '../messages/item.js';
import { sequenceNumberText } from '../validation.js';

const instant = (description = 'ISO 8601 UTC instant') => z.string().check(z.meta({ format: 'date-time', description }));
const count = () => z.number().check(z.int(), z.minimum(0));

// ---------------------------------------------------------------------------------------
// Errors (B1): one shape, its codes the broker's list.
// ---------------------------------------------------------------------------------------

const errorDetailShape = {
  code: z.enum(ERROR_CODES),
  message: z.string().check(z.meta({ description: 'What was wrong; for a bad request it starts with the field (B2).' })),
  retryable: z.boolean().check(z.meta({ description: 'True when the same request may succeed later.' })),
};

export const errorDetailSchema = z.object(errorDetailShape).check(z.meta({ description: 'The failure of one item of a batch.' }));

/** The body of every failure: functions/api/http.ts `errorBody`, and the local runtime's. */
export const errorSchema = z
  .object({
    error: z.object({ ...errorDetailShape, requestId: z.string().check(z.meta({ description: 'Quote it when reporting a problem.' })) }),
  })
  .check(z.meta({ description: 'Every failure (B1).' }));

// ---------------------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------------------

export const topicSendReceiptSchema = z
  .object({
    messageId: z.string(),
    subscriptions: z.array(z.string()),
    sequenceNumber: z.optional(sequenceNumberText),
  })
  .check(
    z.meta({
      description:
        'A message sent to a topic: the subscriptions it reached (F1). A scheduled message also gets a `sequenceNumber` that cancels it in every subscription (S6).',
    }),
  );

export const queueSendResultSchema = z.union([sendReceiptSchema(), topicSendReceiptSchema]).check(
  z.meta({
    description:
      'A send to a queue: the receipt of the stored message. When the queue forwards to a topic (F2), the receipt is that of the first subscription copy, ' +
      'or, when no subscription took the message, the topic form `{"messageId", "subscriptions": []}`.',
  }),
);

export const batchItemErrorSchema = z.object({ messageId: z.optional(z.string()), error: errorDetailSchema });

export const batchSendResultSchema = z
  .object({ results: z.array(z.union([sendReceiptSchema(), topicSendReceiptSchema, batchItemErrorSchema])) })
  .check(z.meta({ description: 'One result per message, in request order (S4).' }));

// ---------------------------------------------------------------------------------------
// Receiving and settling
// ---------------------------------------------------------------------------------------

export const messageListSchema = z.object({ messages: z.array(receivedMessageSchema()) });

export const lockRenewalSchema = z.object({ lockedUntil: instant() });

/** A token as the client sent it, also a malformed one (R9); the request documents strings. */
const sentLockToken = () => z.unknown().check(z.meta({ type: 'string' }));

export const settleBatchResultSchema = z
  .object({
    results: z.array(
      z.union([z.object({ lockToken: sentLockToken(), ok: z.literal(true) }), z.object({ lockToken: sentLockToken(), error: errorDetailSchema })]),
    ),
  })
  .check(z.meta({ description: 'One result per lock token, in request order (R9).' }));

export const deleteMessagesResultSchema = z.object({ deleted: count() });
export const purgeResultSchema = z.object({ purged: count() });
export const resubmitResultSchema = z.object({
  resubmitted: count(),
  remaining: z.boolean().check(
    z.meta({
      description: 'True when the call stopped early (time budget or maxMessages) or skipped dead letters held under lock; call again to continue.',
    }),
  ),
});

export const notificationsEndpointSchema = z.object({
  url: z.string().check(z.meta({ format: 'uri', description: 'wss://… on AWS, ws://…/_websocket locally.' })),
});

// ---------------------------------------------------------------------------------------
// Rules and authorization rules
// ---------------------------------------------------------------------------------------

/** Lists the API answers whole: `next` is there for the shape of a page, always null. */
const wholeList = <T extends z.ZodMiniType>(item: T, description: string) =>
  z.object({ items: z.array(item), next: z.null().check(z.meta({ description: 'Always null: the whole list is one page.' })) }).check(z.meta({ description }));

export const ruleSchema = z
  .object({ name: z.string(), filter: filterSpecSchema, action: z.nullable(actionSpecSchema), createdAt: instant() })
  .check(z.meta({ description: 'A subscription rule (F1).' }));

export const ruleListSchema = wholeList(ruleSchema, 'The rules of a subscription.');

export const authorizationRuleSchema = z
  .object({ keyName: z.string(), rights: z.array(z.enum(RIGHTS)), primaryKey: z.string(), secondaryKey: z.string() })
  .check(z.meta({ description: 'A shared access authorization rule and its keys (A2).' }));

export const authorizationRuleListSchema = wholeList(authorizationRuleSchema, 'The authorization rules of one scope.');

// ---------------------------------------------------------------------------------------
// Sessions (N1-N8)
// ---------------------------------------------------------------------------------------

export const acceptedSessionSchema = z
  .object({
    sessionId: z.string(),
    sessionLockToken: z
      .string()
      .check(z.meta({ description: "Receive, settle (the settlement routes check it through the message's lock), renew, release and use state with it." })),
    lockedUntil: instant(),
  })
  .check(z.meta({ description: 'A session locked for this receiver until `lockedUntil` (N2).' }));

export const sessionListSchema = z
  .object({
    items: z.array(z.string()),
    next: z.nullable(z.string()).check(z.meta({ description: 'Paging token for the next page (query `next`); null on the last page.' })),
  })
  .check(z.meta({ description: 'A page of the ids of sessions with messages or state (N8).' }));

export const sessionStateSchema = z
  .object({ sessionId: z.string(), state: z.nullable(z.string()).check(z.meta({ description: "base64 of the state's bytes; null when none is set." })) })
  .check(z.meta({ description: 'The session state (N5).' }));

// ---------------------------------------------------------------------------------------
// The local runtime
// ---------------------------------------------------------------------------------------

export const clockSchema = z.object({ now: instant() });
export const jobReportSchema = z.looseObject({}).check(z.meta({ description: 'What the job did (its own report).' }));

/** Response schemas by component name. */
export const responseSchemas = {
  Error: errorSchema,
  ErrorDetail: errorDetailSchema,
  Runtime: runtimeSchema(),
  TopicRuntime: topicRuntimeSchema(),
  Queue: entityViewSchemas().queue,
  Topic: entityViewSchemas().topic,
  Subscription: entityViewSchemas().subscription,
  QueueList: entityListSchemas().queue,
  TopicList: entityListSchemas().topic,
  SubscriptionList: entityListSchemas().subscription,
  ReceivedMessage: receivedMessageSchema(),
  MessageList: messageListSchema,
  SendReceipt: sendReceiptSchema(),
  TopicSendReceipt: topicSendReceiptSchema,
  QueueSendResult: queueSendResultSchema,
  BatchItemError: batchItemErrorSchema,
  BatchSendResult: batchSendResultSchema,
  LockRenewal: lockRenewalSchema,
  SettleBatchResult: settleBatchResultSchema,
  DeleteMessagesResult: deleteMessagesResultSchema,
  NotificationsEndpoint: notificationsEndpointSchema,
  PurgeResult: purgeResultSchema,
  ResubmitResult: resubmitResultSchema,
  Rule: ruleSchema,
  RuleList: ruleListSchema,
  AuthorizationRule: authorizationRuleSchema,
  AuthorizationRuleList: authorizationRuleListSchema,
  AcceptedSession: acceptedSessionSchema,
  SessionList: sessionListSchema,
  SessionState: sessionStateSchema,
  Clock: clockSchema,
  JobReport: jobReportSchema,
} satisfies Record<string, z.ZodMiniType>;

export type ResponseSchemaName = keyof typeof responseSchemas;

/** What a body named `N` is on the wire. */
export type Wire<N extends ResponseSchemaName> = z.input<(typeof responseSchemas)[N]>;

// ---------------------------------------------------------------------------------------
// Compile-time: each broker answer is its schema's wire form. A field added, removed or
// retyped on one side and not the other fails tsc here. (The lists the router wraps,
// `{messages}`, `{results}`, are checked where it builds them, with `satisfies`.)
// ---------------------------------------------------------------------------------------

type Presented<Actual extends Wire<N>, N extends ResponseSchemaName> = [Actual, N];
type Answer<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

export type _PresentersConform = [
  Presented<SendAnswer, 'QueueSendResult'>,
  Presented<Answer<typeof renewLock>, 'LockRenewal'>,
  Presented<Answer<typeof deleteMessages>, 'DeleteMessagesResult'>,
  Presented<Answer<typeof purge>, 'PurgeResult'>,
  Presented<Answer<typeof resubmit>, 'ResubmitResult'>,
  Presented<ReturnType<typeof presentRule>, 'Rule'>,
  Presented<Answer<typeof listRules>, 'RuleList'>,
  Presented<Answer<Broker['notifications']>, 'NotificationsEndpoint'>,
  Presented<ReturnType<typeof presentAuthRule>, 'AuthorizationRule'>,
  Presented<Answer<typeof acceptSession>, 'AcceptedSession'>,
  Presented<Answer<typeof listSessions>, 'SessionList'>,
  Presented<Answer<typeof getSessionState>, 'SessionState'>,
  Presented<Answer<typeof renewSessionLock>, 'LockRenewal'>,
];
