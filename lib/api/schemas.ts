/**
 * The request bodies of the HTTP API by name: the zod schemas the broker validates
 * with, as exported where they are defined. Route table entries name their body from here
 * (lib/api/routes.ts), and docs/openapi.json is generated from these (infra/openapi); the
 * name is the document's component name.
 */
import * as z from 'zod';
import { regenerateSchema, rightsSchema } from '../broker/authorization.js';
import { deleteMessagesSchema } from '../broker/bulk-delete.js';
import { resubmitSchema } from '../broker/resubmit.js';
import { receiveSchema } from '../broker/receive.js';
import { ruleSchema } from '../broker/filter-rules.js';
import { batchSchema } from '../broker/send.js';
import { schemas as settleSchemas } from '../broker/settle.js';
import { schemas as sessionSchemas } from '../broker/sessions.js';
import { queueSchema, subscriptionSchema, topicSchema } from '../entities/properties.js';
import { actionSpecSchema, correlationFilterSchema, filterSpecSchema } from '../filters/spec.js';
import { applicationPropertiesSchema, messageSchema } from '../messages/schema.js';
import { sequenceNumberText } from '../validation.js';

/** The body `/_local/clock` takes; the local runtime reads it by hand, with its own messages. */
export const clockAdvanceSchema = z
  .strictObject({ advance: z.string().meta({ format: 'duration', description: 'ISO 8601 duration to move the clock forward by (never back).' }) })
  .meta({ description: 'How far to move the local broker clock forward.' });

/** Request schemas by component name; the parts others refer to (Filter, SequenceNumber, ...) too. */
export const requestSchemas = {
  QueueProperties: queueSchema,
  TopicProperties: topicSchema,
  SubscriptionProperties: subscriptionSchema,
  Filter: filterSpecSchema,
  CorrelationFilter: correlationFilterSchema,
  Action: actionSpecSchema,
  RuleProperties: ruleSchema,
  ApplicationProperties: applicationPropertiesSchema,
  SequenceNumber: sequenceNumberText,
  Message: messageSchema,
  MessageBatch: batchSchema,
  ReceiveOptions: receiveSchema,
  CompleteRequest: settleSchemas.complete,
  AbandonRequest: settleSchemas.abandon,
  DeferRequest: settleSchemas.defer,
  DeadLetterRequest: settleSchemas.deadletter,
  RenewLockRequest: settleSchemas.renew,
  LockTokens: settleSchemas.batch,
  DeferredRequest: settleSchemas.deferred,
  ResubmitRequest: resubmitSchema,
  DeleteMessagesRequest: deleteMessagesSchema,
  AuthorizationRuleProperties: rightsSchema,
  RegenerateKeyRequest: regenerateSchema,
  AcceptSessionRequest: sessionSchemas.accept,
  SessionReceiveOptions: sessionSchemas.receive,
  SessionLockRequest: sessionSchemas.token,
  SessionStateUpdate: sessionSchemas.state,
  SessionDeferredRequest: sessionSchemas.deferred,
  ClockAdvance: clockAdvanceSchema,
} satisfies Record<string, z.ZodType>;

export type RequestSchemaName = keyof typeof requestSchemas;
