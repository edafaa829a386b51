/**
 * The JSON Schemas of the OpenAPI document (docs/openapi.json).
 *
 * Request bodies are derived from the zod schemas the broker validates with, through
 * `z.toJSONSchema(..., { io: 'input' })`, so they cannot drift from the code. Where the
 * broker's schema is not exported (messages, receive options, peek, resubmit, rules, rights),
 * a mirror is written here from the exported building blocks; test/unit/openapi.test.ts
 * probes every mirror against the broker's real parser (every documented field accepted,
 * unknown fields refused, bounds and enums agree), so a mirror that drifts fails the tests.
 *
 * Response bodies are written by hand from the presenters (`presentMessage`,
 * `presentEntity`, `presentRule`, `presentAuthRule`, `receiptOf`); the tests run each
 * presenter and validate its output against the schema here.
 */
import * as z from 'zod';
import { RIGHTS } from '../../lib/auth/index.js';
import { schemas as settleSchemas } from '../../lib/broker/settle.js';
import { MAX_BATCH } from '../../lib/broker/send.js';
import {
  defaults,
  presentProperties,
  queueSchema,
  subscriptionSchema,
  topicSchema,
  type EntityKind,
} from '../../lib/entities/properties.js';
import { BrokerError, type ErrorCode } from '../../lib/errors.js';
import { actionSpecSchema, correlationFilterSchema, filterSpecSchema } from '../../lib/filters/spec.js';
import { applicationPropertiesSchema, MAX_MESSAGE_BYTES, MAX_PROPERTIES_BYTES } from '../../lib/messages/schema.js';
import { nameLimits } from '../../lib/names.js';
import { sequenceNumberText } from '../../lib/validation.js';

export type JsonSchema = { [key: string]: unknown };

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const instant: JsonSchema = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC instant' };

// ---------------------------------------------------------------------------------------
// Mirrors of request schemas the broker does not export. Each is probed against the real
// parser by test/unit/openapi.test.ts; keep the comment naming the original up to date.
// ---------------------------------------------------------------------------------------

const text = (max: number) => z.string().max(max).nullish();

/** Mirror of `messageSchema` in lib/messages/schema.ts (parsed by `parseMessage`). */
export const messageMirror = z.strictObject({
  body: z.unknown(),
  contentType: text(256),
  messageId: z.string().min(1).max(128).nullish(),
  correlationId: text(128),
  sessionId: text(128),
  replyTo: text(260),
  replyToSessionId: text(128),
  subject: text(256),
  to: text(260),
  partitionKey: text(128),
  timeToLive: z.string().nullish(),
  scheduledEnqueueTime: z.string().nullish(),
  applicationProperties: applicationPropertiesSchema.nullish(),
});

/** Mirror of the body `parseBatch` in lib/broker/send.ts accepts. */
export const batchMirror = z.strictObject({ messages: z.array(messageMirror).min(1).max(MAX_BATCH) });

/** Mirror of `receiveSchema` in lib/broker/receive.ts (parsed by `parseReceiveOptions`). */
export const receiveMirror = z.strictObject({
  mode: z.enum(['peekLock', 'receiveAndDelete']).default('peekLock'),
  maxMessages: z.number().int().min(1).max(100).default(1),
  maxWaitTime: z.string().default('PT0S'),
});

/** Mirror of `peekSchema` in lib/broker/browse.ts: the query string of a peek. */
export const peekMirror = z.strictObject({
  fromSequenceNumber: sequenceNumberText.default('0'),
  maxMessages: z.coerce.number().int().min(1).max(100).default(10),
});

/** Mirror of `resubmitSchema` in lib/broker/browse.ts. */
export const resubmitMirror = z.strictObject({
  sequenceNumbers: z.array(sequenceNumberText).min(1).max(1000).optional(),
  maxMessages: z.number().int().min(1).max(10_000).optional(),
  to: z.string().min(1).max(600).optional(),
});

/** Mirror of `deleteMessagesSchema` in lib/broker/browse.ts (#11 deleteMessages). */
export const deleteMessagesMirror = z.strictObject({
  maxMessageCount: z.number().int().min(1).max(4000),
  beforeEnqueueTime: z.iso.datetime({ offset: true }).optional(),
});

/** Mirror of `ruleBody` in lib/broker/rules.ts (filter and action schemas are the real ones). */
export const ruleMirror = z.strictObject({ filter: filterSpecSchema.optional(), action: actionSpecSchema.nullish() });

/** Mirror of `rightsSchema` in lib/broker/authorization.ts (`uniqueItems` stands for its refine). */
export const rightsMirror = z.strictObject({ rights: z.array(z.enum(RIGHTS)).min(1).max(3) });

/** Mirror of the body of `regenerate` in lib/broker/authorization.ts. */
export const regenerateMirror = z.strictObject({ key: z.enum(['primary', 'secondary']) });

/** Mirror of the body `/_local/clock` takes in infra/local/runtime.ts (hand-parsed there). */
export const clockMirror = z.strictObject({ advance: z.string() });

/** Request body schemas by component name. */
export const requestSchemas = {
  QueueProperties: queueSchema,
  TopicProperties: topicSchema,
  SubscriptionProperties: subscriptionSchema,
  Filter: filterSpecSchema,
  CorrelationFilter: correlationFilterSchema,
  Action: actionSpecSchema,
  RuleProperties: ruleMirror,
  ApplicationProperties: applicationPropertiesSchema,
  SequenceNumber: sequenceNumberText,
  Message: messageMirror,
  MessageBatch: batchMirror,
  ReceiveOptions: receiveMirror,
  CompleteRequest: settleSchemas.complete,
  AbandonRequest: settleSchemas.abandon,
  DeferRequest: settleSchemas.defer,
  DeadLetterRequest: settleSchemas.deadletter,
  RenewLockRequest: settleSchemas.renew,
  LockTokens: settleSchemas.batch,
  DeferredRequest: settleSchemas.deferred,
  ResubmitRequest: resubmitMirror,
  DeleteMessagesRequest: deleteMessagesMirror,
  AuthorizationRuleProperties: rightsMirror,
  RegenerateKeyRequest: regenerateMirror,
  ClockAdvance: clockMirror,
} satisfies Record<string, z.ZodType>;

export type RequestSchemaName = keyof typeof requestSchemas;

/**
 * What JSON Schema cannot learn from zod (refinements, transforms), by property name:
 * durations are strings parsed by `durationField`, with these bounds; `x-minimum-duration`
 * and `x-maximum-duration` are probed against the real parsers by the tests.
 */
export const durationBounds: Record<string, { min?: string; max?: string; unlimited?: boolean }> = {
  lockDuration: { min: 'PT5S', max: 'PT5M' },
  defaultMessageTimeToLive: { min: 'PT1S', unlimited: true },
  autoDeleteOnIdle: { min: 'PT5M', unlimited: true },
  duplicateDetectionHistoryTimeWindow: { min: 'PT20S', max: 'P7D' },
  timeToLive: { min: 'PT0.001S', unlimited: true },
  maxWaitTime: { max: 'PT20S' },
  advance: {},
};

const LOCK_TOKEN_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const lockTokenSchema: JsonSchema = {
  type: 'string',
  pattern: LOCK_TOKEN_PATTERN,
  description: 'The lock token a peek-lock receive returned (GUID-shaped; it names the message).',
};

const fieldNotes: Record<string, JsonSchema> = {
  lockToken: lockTokenSchema,
  scheduledEnqueueTime: { format: 'date-time', description: 'ISO 8601 instant; the message becomes visible then (S6).' },
  forwardTo: { description: 'Auto-forwarding target: "queues/q", "topics/t" or a bare name (a queue or topic); null for none (F2).' },
  forwardDeadLetteredMessagesTo: { description: 'Where dead-lettered messages are forwarded; null for none (F2).' },
  to: { description: 'Application routing hint; not used by the broker.' },
};

function describeDuration(name: string): JsonSchema {
  const b = durationBounds[name]!;
  const parts = ['ISO 8601 duration (e.g. "PT30S"; years and months are refused)'];
  if (b.min) parts.push(`at least ${b.min}`);
  if (b.max) parts.push(`at most ${b.max}`);
  if (b.unlimited) parts.push('a huge value such as Service Bus\'s TimeSpan.MaxValue means unlimited');
  return {
    format: 'duration',
    description: `${parts.join('; ')}.`,
    ...(b.min ? { 'x-minimum-duration': b.min } : {}),
    ...(b.max ? { 'x-maximum-duration': b.max } : {}),
  };
}

/** Adds what zod cannot express to every object property named in `durationBounds` / `fieldNotes`. */
function annotate(schema: unknown): void {
  if (Array.isArray(schema)) {
    schema.forEach(annotate);
    return;
  }
  if (typeof schema !== 'object' || schema === null) return;
  const s = schema as JsonSchema;
  const props = s.properties as Record<string, JsonSchema> | undefined;
  if (props) {
    for (const [name, prop] of Object.entries(props)) {
      if (name in durationBounds) Object.assign(prop, describeDuration(name));
      if (name in fieldNotes) Object.assign(prop, fieldNotes[name]);
      if (name === 'lockTokens' && typeof prop.items === 'object') prop.items = { ...lockTokenSchema };
    }
  }
  for (const value of Object.values(s)) annotate(value);
}

function strip(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

/** The request schemas as JSON Schema, with `$ref`s between them. */
export function requestComponentSchemas(): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(requestSchemas)) registry.add(schema as z.ZodType, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonSchema> };
  const out: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(schemas)) out[id] = strip(schema);
  annotate(out);

  for (const kind of ['queue', 'topic', 'subscription'] as const) {
    const props = out[propertiesName[kind]]!.properties as Record<string, JsonSchema>;
    const given = presentProperties(kind, defaults);
    for (const [key, value] of Object.entries(given)) if (props[key]) props[key].default = value;
    out[propertiesName[kind]]!.description =
      `The ${kind}'s properties (SPEC E2). A PUT sends only those it sets; the rest keep their value (or the default shown). Unknown fields are refused (400).`;
  }
  const message = out.Message!;
  message.description =
    `A message as sent. Only \`body\` (any JSON value) is required; null means absent. The whole message is at most ${MAX_MESSAGE_BYTES} bytes, its properties at most ${MAX_PROPERTIES_BYTES} (S5, else 413). With a \`sessionId\`, the session decides the partition.`;
  (message.properties as Record<string, JsonSchema>).body!.description = 'The payload: any JSON value.';
  out.MessageBatch!.description = `Up to ${MAX_BATCH} messages; all are validated before any is stored (S4).`;
  out.CorrelationFilter!.description = 'Matches when every given property equals the message\'s; at least one property is required.';
  out.CorrelationFilter!.minProperties = 1;
  out.Filter!.description = 'A rule filter: SQL, correlation, or constant true/false.';
  out.RuleProperties!.description = 'A subscription rule. Without a filter, `{"true": {}}`; the action is optional.';
  out.AuthorizationRuleProperties!.description = 'Rights of a shared access authorization rule; Manage implies Send and Listen (A2).';
  (out.AuthorizationRuleProperties!.properties as Record<string, JsonSchema>).rights!.uniqueItems = true;
  out.ResubmitRequest!.description =
    'Which dead-lettered messages to resubmit (all by default), at most how many, and where to (`queues/q` or `topics/t/subscriptions/s`; default: the parent entity).';
  out.ReceiveOptions!.description = 'Receive options; all optional (R1).';
  out.DeferredRequest!.description = 'Sequence numbers of deferred messages to receive under lock (R7).';
  out.LockTokens!.description = 'Lock tokens to settle at once (R9).';
  out.DeleteMessagesRequest!.description = 'At most how many messages to delete, and the enqueue time they must be older than (default: now).';
  out.ClockAdvance!.description = 'How far to move the local broker clock forward.';
  (out.ClockAdvance!.properties as Record<string, JsonSchema>).advance!.description = 'ISO 8601 duration to move the clock forward by (never back).';
  out.SequenceNumber!.description = 'A sequence number: a decimal string of a non-negative 64-bit integer (S2).';
  out.ApplicationProperties!.description = 'Application properties: names of 1-256 characters, values string, number, boolean or null.';
  return out;
}

export const propertiesName: Record<EntityKind, string> = {
  queue: 'QueueProperties',
  topic: 'TopicProperties',
  subscription: 'SubscriptionProperties',
};
export const entityName: Record<EntityKind, string> = { queue: 'Queue', topic: 'Topic', subscription: 'Subscription' };

/** Example peek query parameters as JSON Schema (object properties). */
export function peekQuerySchema(): Record<string, JsonSchema> {
  const schema = z.toJSONSchema(peekMirror, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return schema.properties as Record<string, JsonSchema>;
}

// ---------------------------------------------------------------------------------------
// Errors (SPEC B1)
// ---------------------------------------------------------------------------------------

/** Every ErrorCode of lib/errors.ts; tsc fails below when a code is added there and not here. */
export const errorCodes = [
  'BadRequest',
  'Unauthorized',
  'Forbidden',
  'EntityNotFound',
  'MessageNotFound',
  'EntityAlreadyExists',
  'MessageLockLost',
  'SessionLockLost',
  'MessageSizeExceeded',
  'EntityDisabled',
  'QuotaExceeded',
  'Conflict',
  'Throttled',
  'InternalError',
] as const satisfies readonly ErrorCode[];
type MissingCodes = Exclude<ErrorCode, (typeof errorCodes)[number]>;
const allCodesListed: [MissingCodes] extends [never] ? true : MissingCodes = true;
void allCodesListed;

/** The HTTP status of each code, as the broker answers it. */
export const statusOfCode = (code: ErrorCode): number => new BrokerError(code, '').status;

export const codesOfStatus = (status: number): ErrorCode[] => errorCodes.filter((c) => statusOfCode(c) === status);

// ---------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------

const runtimeProps = (kind: EntityKind): Record<string, JsonSchema> => {
  const count = (what: string): JsonSchema => ({ type: 'integer', minimum: 0, description: what });
  return {
    activeMessageCount: count('Messages ready to receive (or locked).'),
    ...(kind === 'topic' ? {} : { deadLetterMessageCount: count('Messages in the dead-letter subqueue.') }),
    scheduledMessageCount: count('Messages scheduled for later (S6).'),
    ...(kind === 'topic'
      ? {}
      : {
          transferDeadLetterMessageCount: count('Messages in the transfer dead-letter subqueue.'),
          deferredMessageCount: count('Deferred messages (R7).'),
        }),
    totalMessageCount: count('Sum of the counts above.'),
    sizeInBytes: count('Bytes of the stored messages.'),
    createdAt: instant,
    updatedAt: instant,
    accessedAt: { ...instant, description: 'Last use (I2); written at most about once a minute.' },
  };
};

function runtimeSchema(kind: EntityKind): JsonSchema {
  const properties = runtimeProps(kind);
  return {
    type: 'object',
    description:
      kind === 'topic'
        ? 'Runtime information of a topic (SPEC E6). A topic has no dead-letter, transfer dead-letter or deferred counts (D8).'
        : 'Runtime information of a queue or subscription (SPEC E6).',
    properties,
    required: Object.keys(properties),
  };
}

/** An entity as GET answers it: every visible property (as in the PUT body, all present), name, runtime. */
function entityResponse(kind: EntityKind, propertiesSchema: JsonSchema): JsonSchema {
  const given = structuredClone(propertiesSchema.properties) as Record<string, JsonSchema>;
  for (const [key, prop] of Object.entries(given)) {
    delete prop.default;
    if (key in durationBounds) {
      const b = durationBounds[key]!;
      prop.description = `ISO 8601 duration${b.unlimited ? '; null when unlimited' : ''}.`;
    }
  }
  const properties: Record<string, JsonSchema> = {
    name: { type: 'string', description: 'The name as first given (names are case-insensitive, E1).' },
    ...(kind === 'subscription' ? { topicName: { type: 'string' } } : {}),
    ...given,
    runtime: ref(kind === 'topic' ? 'TopicRuntime' : 'Runtime'),
  };
  return {
    type: 'object',
    description: `A ${kind}: its properties (durations as ISO 8601, null for unlimited) and runtime information (SPEC E2, E6).`,
    properties,
    required: Object.keys(properties),
  };
}

const listOf = (item: string, description: string, paged: boolean): JsonSchema => ({
  type: 'object',
  description,
  properties: {
    items: { type: 'array', items: ref(item) },
    next: paged
      ? { type: ['string', 'null'], description: 'Paging token for the next page (query `next`); null on the last page.' }
      : { type: 'null', description: 'Always null: the whole list is one page.' },
  },
  required: ['items', 'next'],
});

const errorDetailProps: Record<string, JsonSchema> = {
  code: { type: 'string', enum: [...errorCodes] },
  message: { type: 'string', description: 'What was wrong; for a bad request it starts with the field (B2).' },
  retryable: { type: 'boolean', description: 'True when the same request may succeed later.' },
};

const optionalText = (names: string[]): Record<string, JsonSchema> =>
  Object.fromEntries(names.map((n) => [n, { type: 'string' }]));

const deadLetterNote = 'Present on messages in a dead-letter subqueue (and on messages that once were); null when not set.';

export function responseComponentSchemas(request: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const receivedProps: Record<string, JsonSchema> = {
    body: { description: 'The payload as sent.' },
    messageId: { type: 'string' },
    ...optionalText(['contentType', 'correlationId', 'sessionId', 'replyTo', 'replyToSessionId', 'subject', 'to', 'partitionKey']),
    applicationProperties: ref('ApplicationProperties'),
    sequenceNumber: ref('SequenceNumber'),
    enqueuedTime: instant,
    scheduledEnqueueTime: { ...instant, description: 'Only while the message is scheduled (state Scheduled).' },
    expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'null when the message never expires.' },
    timeToLive: { type: ['string', 'null'], format: 'duration', description: 'The effective time to live (T1); null when unlimited.' },
    deliveryCount: { type: 'integer', minimum: 0 },
    state: { type: 'string', enum: ['Active', 'Scheduled', 'Deferred'] },
    lockToken: { ...lockTokenSchema, description: 'Under peek-lock only: settle the message with it.' },
    lockedUntil: { ...instant, description: 'Under peek-lock only: when the lock runs out.' },
    deadLetterReason: { type: ['string', 'null'], description: deadLetterNote },
    deadLetterErrorDescription: { type: ['string', 'null'], description: deadLetterNote },
    deadLetterSource: { type: ['string', 'null'], description: `${deadLetterNote} The entity path the message was dead-lettered from.` },
    enqueuedSequenceNumber: { type: ['string', 'null'], description: `${deadLetterNote} Its sequence number before it was dead-lettered.` },
  };

  const schemas: Record<string, JsonSchema> = {
    Error: {
      type: 'object',
      description: 'Every failure (SPEC B1).',
      properties: {
        error: {
          type: 'object',
          properties: { ...errorDetailProps, requestId: { type: 'string', description: 'Quote it when reporting a problem.' } },
          required: ['code', 'message', 'retryable', 'requestId'],
        },
      },
      required: ['error'],
    },
    ErrorDetail: {
      type: 'object',
      description: 'The failure of one item of a batch.',
      properties: errorDetailProps,
      required: ['code', 'message', 'retryable'],
    },
    Runtime: runtimeSchema('queue'),
    TopicRuntime: runtimeSchema('topic'),
    ReceivedMessage: {
      type: 'object',
      description: 'A message as received or peeked (API.md "Messages").',
      properties: receivedProps,
      required: ['body', 'messageId', 'applicationProperties', 'sequenceNumber', 'enqueuedTime', 'expiresAt', 'timeToLive', 'deliveryCount', 'state'],
    },
    MessageList: {
      type: 'object',
      properties: { messages: { type: 'array', items: ref('ReceivedMessage') } },
      required: ['messages'],
    },
    SendReceipt: {
      type: 'object',
      description: 'A message stored in a queue.',
      properties: {
        messageId: { type: 'string' },
        sequenceNumber: ref('SequenceNumber'),
        enqueuedTime: { ...instant, description: 'When it becomes visible (the schedule time for a scheduled message).' },
        expiresAt: { type: ['string', 'null'], format: 'date-time' },
      },
      required: ['messageId', 'sequenceNumber', 'enqueuedTime', 'expiresAt'],
    },
    TopicSendReceipt: {
      type: 'object',
      description:
        'A message sent to a topic: the subscriptions it reached (F1). A scheduled message also gets a `sequenceNumber` that cancels it in every subscription (S6).',
      properties: {
        messageId: { type: 'string' },
        subscriptions: { type: 'array', items: { type: 'string' } },
        sequenceNumber: { type: 'string', pattern: '^[0-9]{1,19}$' },
      },
      required: ['messageId', 'subscriptions'],
    },
    QueueSendResult: {
      description:
        'A send to a queue: the receipt of the stored message. When the queue forwards to a topic (F2), the receipt is that of the first subscription copy, ' +
        'or, when no subscription took the message, the topic form `{"messageId", "subscriptions": []}`.',
      anyOf: [ref('SendReceipt'), ref('TopicSendReceipt')],
    },
    BatchItemError: {
      type: 'object',
      properties: { messageId: { type: 'string' }, error: ref('ErrorDetail') },
      required: ['error'],
    },
    BatchSendResult: {
      type: 'object',
      description: 'One result per message, in request order (S4).',
      properties: {
        results: { type: 'array', items: { anyOf: [ref('SendReceipt'), ref('TopicSendReceipt'), ref('BatchItemError')] } },
      },
      required: ['results'],
    },
    LockRenewal: {
      type: 'object',
      properties: { lockedUntil: instant },
      required: ['lockedUntil'],
    },
    SettleBatchResult: {
      type: 'object',
      description: 'One result per lock token, in request order (R9).',
      properties: {
        results: {
          type: 'array',
          items: {
            anyOf: [
              { type: 'object', properties: { lockToken: { type: 'string' }, ok: { const: true } }, required: ['lockToken', 'ok'] },
              { type: 'object', properties: { lockToken: { type: 'string' }, error: ref('ErrorDetail') }, required: ['lockToken', 'error'] },
            ],
          },
        },
      },
      required: ['results'],
    },
    DeleteMessagesResult: { type: 'object', properties: { deleted: { type: 'integer', minimum: 0 } }, required: ['deleted'] },
    NotificationsEndpoint: {
      type: 'object',
      properties: { url: { type: 'string', format: 'uri', description: 'wss://… on AWS, ws://…/_websocket locally.' } },
      required: ['url'],
    },
    PurgeResult: { type: 'object', properties: { purged: { type: 'integer', minimum: 0 } }, required: ['purged'] },
    ResubmitResult: {
      type: 'object',
      properties: {
        resubmitted: { type: 'integer', minimum: 0 },
        remaining: { type: 'boolean', description: 'True when the call stopped early (time budget or maxMessages) or skipped dead letters held under lock; call again to continue.' },
      },
      required: ['resubmitted', 'remaining'],
    },
    Rule: {
      type: 'object',
      description: 'A subscription rule (F1).',
      properties: { name: { type: 'string' }, filter: ref('Filter'), action: { anyOf: [ref('Action'), { type: 'null' }] }, createdAt: instant },
      required: ['name', 'filter', 'action', 'createdAt'],
    },
    RuleList: listOf('Rule', 'The rules of a subscription.', false),
    AuthorizationRule: {
      type: 'object',
      description: 'A shared access authorization rule and its keys (A2).',
      properties: {
        keyName: { type: 'string' },
        rights: { type: 'array', items: { type: 'string', enum: [...RIGHTS] } },
        primaryKey: { type: 'string' },
        secondaryKey: { type: 'string' },
      },
      required: ['keyName', 'rights', 'primaryKey', 'secondaryKey'],
    },
    AuthorizationRuleList: listOf('AuthorizationRule', 'The authorization rules of one scope.', false),
    Clock: { type: 'object', properties: { now: instant }, required: ['now'] },
    JobReport: { type: 'object', description: 'What the job did (its own report).', additionalProperties: true },
  };
  for (const kind of ['queue', 'topic', 'subscription'] as const) {
    schemas[entityName[kind]] = entityResponse(kind, request[propertiesName[kind]]!);
    schemas[`${entityName[kind]}List`] = listOf(entityName[kind], `A page of ${kind}s in name order.`, true);
  }
  return schemas;
}

/** Path parameters, keyed by their name in the path templates. */
export const namePattern = '^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$';
export const pathParameters: Record<string, { component: string; description: string; schema: JsonSchema }> = {
  q: { component: 'QueueName', description: 'Queue name (E1, case-insensitive).', schema: { type: 'string', minLength: 1, maxLength: nameLimits.queue, pattern: namePattern } },
  t: { component: 'TopicName', description: 'Topic name (E1, case-insensitive).', schema: { type: 'string', minLength: 1, maxLength: nameLimits.topic, pattern: namePattern } },
  s: {
    component: 'SubscriptionName',
    description: 'Subscription name (E1, case-insensitive).',
    schema: { type: 'string', minLength: 1, maxLength: nameLimits.subscription, pattern: namePattern },
  },
  r: {
    component: 'RuleName',
    description: 'Rule name; `$Default` is the rule every new subscription gets.',
    schema: { type: 'string', minLength: 1, maxLength: nameLimits.rule, pattern: `^(?:\\$Default|${namePattern.slice(1, -1)})$` },
  },
  name: {
    component: 'KeyName',
    description: 'Authorization rule (key) name.',
    schema: { type: 'string', minLength: 1, maxLength: nameLimits.authorizationRule, pattern: namePattern },
  },
  sequenceNumber: { component: 'SequenceNumberInPath', description: 'The message\'s sequence number.', schema: ref('SequenceNumber') },
  job: { component: 'Job', description: 'A background job of the local runtime.', schema: { type: 'string' } },
};
