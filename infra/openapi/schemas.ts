/**
 * The JSON Schemas of the OpenAPI document (docs/openapi.json).
 *
 * Request bodies are the zod schemas the broker validates with, exported where they are
 * defined (with their descriptions and duration bounds as `.meta()`), turned into JSON
 * Schema by `z.toJSONSchema(..., { io: 'input' })`; nothing here restates them. The only
 * body written here is `/_local/clock`'s, which the local runtime reads by hand.
 *
 * Response bodies whose presenter is typed by a zod schema (`receiptOf`: SendReceipt) come
 * from that schema too; the others are written here by hand from the presenters
 * (`presentMessage`, `presentEntity`, `presentRule`, `presentAuthRule`), and the tests run
 * each presenter and validate its output against the schema.
 */
import * as z from 'zod';
import { RIGHTS } from '../../lib/auth/index.js';
import { requestSchemas, responseSchemas } from '../../lib/api/schemas.js';
import { peekSchema } from '../../lib/broker/browse.js';
import { defaults, presentProperties, type EntityKind } from '../../lib/entities/properties.js';
import { BrokerError, ERROR_CODES, type ErrorCode } from '../../lib/errors.js';
import { LOCK_TOKEN_PATTERN } from '../../lib/messages/lock-token.js';
import { nameLimits } from '../../lib/names.js';

export type JsonSchema = { [key: string]: unknown };

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const instant: JsonSchema = { type: 'string', format: 'date-time', description: 'ISO 8601 UTC instant' };

export { requestSchemas, type RequestSchemaName } from '../../lib/api/schemas.js';

const lockTokenSchema: JsonSchema = {
  type: 'string',
  pattern: LOCK_TOKEN_PATTERN,
  description: 'The lock token a peek-lock receive returned (GUID-shaped; it names the message).',
};

/** Writes every nullable duration or instant the way zod writes plain nullable strings. */
function annotate(schema: unknown): void {
  if (Array.isArray(schema)) {
    schema.forEach(annotate);
    return;
  }
  if (typeof schema !== 'object' || schema === null) return;
  const s = schema as JsonSchema;
  const props = s.properties as Record<string, JsonSchema> | undefined;
  if (props) {
    for (const prop of Object.values(props)) {
      // A nullable duration or instant reads as one schema, `type: ["string", "null"]`, as zod writes plain nullable strings.
      const arms = prop.anyOf as JsonSchema[] | undefined;
      if (arms?.length === 2 && typeof arms[0]!.format === 'string' && arms[1]!.type === 'null' && Object.keys(arms[1]!).length === 1) {
        delete prop.anyOf;
        Object.assign(prop, arms[0], { type: [arms[0]!.type, 'null'] });
      }
    }
  }
  for (const value of Object.values(s)) annotate(value);
}

function strip(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

/** The request schemas, and the responses typed by a schema, as JSON Schema with `$ref`s between them. */
export function requestComponentSchemas(): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries({ ...requestSchemas, ...responseSchemas })) registry.add(schema as z.ZodType, { id });
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
  out.CorrelationFilter!.description = 'Matches when every given property equals the message\'s; at least one property is required.';
  out.CorrelationFilter!.minProperties = 1;
  out.Filter!.description = 'A rule filter: SQL, correlation, or constant true/false.';
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
  const schema = z.toJSONSchema(peekSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return schema.properties as Record<string, JsonSchema>;
}

// ---------------------------------------------------------------------------------------
// Errors (SPEC B1)
// ---------------------------------------------------------------------------------------

/** The HTTP status of each code, as the broker answers it. */
export const statusOfCode = (code: ErrorCode): number => new BrokerError(code, '').status;

export const codesOfStatus = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => statusOfCode(c) === status);

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
  for (const prop of Object.values(given)) {
    delete prop.default;
    if (prop.format === 'duration') prop.description = `ISO 8601 duration${prop['x-unlimited'] ? '; null when unlimited' : ''}.`;
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
  code: { type: 'string', enum: [...ERROR_CODES] },
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
    to: { type: 'string', description: 'Application routing hint; not used by the broker.' },
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
    AcceptedSession: {
      type: 'object',
      description: 'A session locked for this receiver until `lockedUntil` (N2).',
      properties: {
        sessionId: { type: 'string' },
        sessionLockToken: { type: 'string', description: 'Receive, settle (the settlement routes check it through the message\'s lock), renew, release and use state with it.' },
        lockedUntil: instant,
      },
      required: ['sessionId', 'sessionLockToken', 'lockedUntil'],
    },
    SessionList: {
      type: 'object',
      description: 'A page of the ids of sessions with messages or state (N8).',
      properties: {
        items: { type: 'array', items: { type: 'string' } },
        next: { type: ['string', 'null'], description: 'Paging token for the next page (query `next`); null on the last page.' },
      },
      required: ['items', 'next'],
    },
    SessionState: {
      type: 'object',
      description: 'The session state (N5).',
      properties: { sessionId: { type: 'string' }, state: { type: ['string', 'null'], description: 'base64 of the state\'s bytes; null when none is set.' } },
      required: ['sessionId', 'state'],
    },
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
  sessionId: {
    component: 'SessionIdInPath',
    description: 'A session id (1-128 characters, case-sensitive), percent-encoded as one path segment.',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  job: { component: 'Job', description: 'A background job of the local runtime.', schema: { type: 'string' } },
};
