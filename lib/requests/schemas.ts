/**
 * The requests of the HTTP API: each request body's zod schema by the name the route table
 * (lib/api/routes.ts) gives it, and how each is read (`parseRequest`). The router parses a
 * body against the schema its route names and hands the broker the result, typed
 * (`RequestOf<name>`); every other caller that takes input from outside (the Service Bus
 * protocols, the bench) parses with the same functions, so nothing reaches the broker
 * unvalidated. docs/openapi.json is generated from `requestSchemas` (infra/openapi); the name
 * is the document's component name.
 *
 * Nothing here imports lib/broker: the broker imports the types of what it is handed.
 */
import * as z from 'zod/mini';
import { RIGHTS, type Right } from '../auth/sas.js';
import { durations } from '../durations.js';
import { badRequest } from '../errors.js';
import { describeProperties, parseEntityProperties, queueSchema, subscriptionSchema, topicSchema } from '../entities/properties.js';
import { actionSpecSchema, correlationFilterSchema, describeFilterSpecs, filterSpecSchema } from '../filters/spec.js';
import { isLockTokenShape, LOCK_TOKEN_PATTERN, normalizeLockToken } from '../messages/lock-token.js';
import { applicationPropertiesSchema, checkSize, describeMessage, messageSchema, parseMessage, sessionIdText, type MessageInput } from '../messages/schema.js';
import { docSchema, durationField, parseOrThrow, queryInteger, sequenceNumberText } from '../validation.js';

// ---------------------------------------------------------------------------------------
// Sending (S1-S6)
// ---------------------------------------------------------------------------------------

export const MAX_BATCH = 100;

/**
 * The body of a batch send. `parseBatch` reads the envelope by hand and `parseMessage` each
 * message, so an error names `messages[i]`; this is what they accept, for the document.
 */
export const batchSchema = /* @__PURE__ */ docSchema(() =>
  z
    .strictObject({ messages: z.array(messageSchema).check(z.minLength(1), z.maxLength(MAX_BATCH)) })
    .check(z.meta({ description: `Up to ${MAX_BATCH} messages; all are validated before any is stored (S4).` })),
);

function parseBatch(body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('body', 'must be {"messages": [...]}');
  const keys = Object.keys(body);
  const unknown = keys.find((k) => k !== 'messages');
  if (unknown) throw badRequest(unknown, 'unknown field');
  const messages = (body as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) throw badRequest('messages', 'must be an array of messages');
  if (messages.length < 1 || messages.length > MAX_BATCH) throw badRequest('messages', `must hold 1-${MAX_BATCH} messages`);
  return messages;
}

/** A message as sending takes it: validated, and its size within S5's limits (413 otherwise). */
export interface SizedMessage {
  message: MessageInput;
  size: number;
  /** The body as stored: its JSON text. */
  body: string;
}

function parseSized(input: unknown, field = 'body'): SizedMessage {
  const message = parseMessage(input, field);
  return { message, ...checkSize(message, field) };
}

// ---------------------------------------------------------------------------------------
// Receiving and settling (R1-R9, D7)
// ---------------------------------------------------------------------------------------

/** How long a receive or an accept may wait (R2, N2). */
const maxWaitTime = durationField({ max: 20 * durations.SECOND, maxText: 'PT20S' });

/** A receive's options, also a session receive's. */
const receiveMaxMessages = z._default(z.number().check(z.int(), z.minimum(1), z.maximum(100)), 1);
const receiveFields = {
  mode: z._default(z.enum(['peekLock', 'receiveAndDelete']), 'peekLock'),
  maxMessages: receiveMaxMessages,
  maxWaitTime: z.prefault(maxWaitTime, 'PT0S'),
};
export const receiveSchema = z.strictObject(receiveFields);

/** The query string of a peek. */
const peekMaxMessages = z._default(queryInteger(1, 100), 10);
export const peekSchema = z.strictObject({
  fromSequenceNumber: z._default(sequenceNumberText, '0'),
  maxMessages: peekMaxMessages,
});

const lockTokenText = z.string().check(z.refine(isLockTokenShape, 'must be a lock token as returned by a receive'));
const lockToken = z.pipe(lockTokenText, z.transform(normalizeLockToken));
/** R9: each token is checked on its own, so one malformed token fails only its own result. */
const lockTokensItem = z.unknown();
const propertiesToModify = z.optional(applicationPropertiesSchema);

const settleSchemas = {
  complete: z.strictObject({ lockToken }),
  renew: z.strictObject({ lockToken }),
  abandon: z.strictObject({ lockToken, propertiesToModify }),
  defer: z.strictObject({ lockToken, propertiesToModify }),
  deadletter: z.strictObject({
    lockToken,
    deadLetterReason: z.optional(z.string().check(z.maxLength(4096))),
    deadLetterErrorDescription: z.optional(z.string().check(z.maxLength(4096))),
    propertiesToModify,
  }),
  batch: z.strictObject({ lockTokens: z.array(lockTokensItem).check(z.minLength(1), z.maxLength(100)) }),
  deferred: z.strictObject({ sequenceNumbers: z.array(sequenceNumberText).check(z.minLength(1), z.maxLength(100)) }),
};

export const deleteMessagesSchema = z.strictObject({
  maxMessageCount: z.number().check(z.int(), z.minimum(1), z.maximum(4000)),
  beforeEnqueueTime: z.optional(z.iso.datetime({ offset: true })),
});

export const resubmitSchema = z.strictObject({
  sequenceNumbers: z.optional(z.array(sequenceNumberText).check(z.minLength(1), z.maxLength(1000))),
  maxMessages: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(10_000))),
  to: z.optional(z.string().check(z.minLength(1), z.maxLength(600))),
});

// ---------------------------------------------------------------------------------------
// Sessions (N1-N8)
// ---------------------------------------------------------------------------------------

const sessionLockToken = z.pipe(
  z.string().check(z.refine(isLockTokenShape, 'must be a session lock token as returned by accept')),
  z.transform(normalizeLockToken),
);

const sessionSchemas = {
  accept: z.strictObject({ sessionId: z.optional(sessionIdText), maxWaitTime: z._default(maxWaitTime, 0) }),
  receive: z.strictObject({ sessionLockToken, ...receiveFields }),
  token: z.strictObject({ sessionLockToken }),
  state: z.strictObject({ sessionLockToken, state: z.nullable(z.base64('must be base64')) }),
  deferred: z.strictObject({ sessionLockToken, sequenceNumbers: z.array(sequenceNumberText).check(z.minLength(1), z.maxLength(100)) }),
  list: z.strictObject({
    top: z.optional(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100))),
    next: z.optional(z.string().check(z.maxLength(400))),
  }),
};

// ---------------------------------------------------------------------------------------
// Management: filter rules (F1), authorization rules (A2, A4), the local clock
// ---------------------------------------------------------------------------------------

export const ruleSchema = z.strictObject({ filter: z.optional(filterSpecSchema), action: z.nullish(actionSpecSchema) });

/** The body of an authorization rule's PUT. */
const rightsList = z.array(z.enum(RIGHTS as unknown as [Right, ...Right[]])).check(
  z.minLength(1),
  z.maxLength(3),
  z.refine((r) => new Set(r).size === r.length, 'must not repeat a right'),
);
export const rightsSchema = z.strictObject({ rights: rightsList });

/** The body of a key regeneration (A4). */
export const regenerateSchema = z.strictObject({ key: z.enum(['primary', 'secondary']) });

/** The body `/_local/clock` takes; the local runtime reads it by hand, with its own messages. */
const clockAdvance = z.string();
export const clockAdvanceSchema = z.strictObject({ advance: clockAdvance });

/**
 * What docs/openapi.json says of the request schemas beyond their shape, in zod's registry,
 * where z.toJSONSchema reads it. Only the document reads it (infra/openapi/schemas.ts calls
 * this first), never a parse: attached here rather than with `z.meta` where each schema is
 * made, the words stay out of the Lambda bundles, as `docSchema`'s do.
 */
export const describeRequests = /* @__PURE__ */ docSchema((): true => {
  const lockTokenMeta = { pattern: LOCK_TOKEN_PATTERN, description: 'The lock token a peek-lock receive returned (GUID-shaped; it names the message).' };
  const described: [z.ZodMiniType, z.core.GlobalMeta][] = [
    [
      receiveMaxMessages,
      { description: "At most this many. An answer carries fewer when more would pass Lambda's 6 MB answer limit (R10): receive again for the rest." },
    ],
    [receiveSchema, { description: 'Receive options; all optional (R1).' }],
    [
      peekMaxMessages,
      { description: "At most this many. A page carries fewer when more would pass Lambda's 6 MB answer limit (R10): peek on from the last one." },
    ],
    [lockTokenText, lockTokenMeta],
    [lockTokensItem, { type: 'string', ...lockTokenMeta }],
    [settleSchemas.batch, { description: 'Lock tokens to settle at once (R9).' }],
    [settleSchemas.deferred, { description: 'Sequence numbers of deferred messages to receive under lock (R7).' }],
    [deleteMessagesSchema, { description: 'At most how many messages to delete, and the enqueue time they must be older than (default: now).' }],
    [
      resubmitSchema,
      {
        description:
          'Which dead-lettered messages to resubmit (all by default), at most how many, and where to (`queues/q` or `topics/t/subscriptions/s`; default: the parent entity).',
      },
    ],
    [ruleSchema, { description: 'A subscription rule. Without a filter, `{"true": {}}`; the action is optional.' }],
    [rightsList, { uniqueItems: true }],
    [rightsSchema, { description: 'Rights of a shared access authorization rule; Manage implies Send and Listen (A2).' }],
    [clockAdvance, { format: 'duration', description: 'ISO 8601 duration to move the clock forward by (never back).' }],
    [clockAdvanceSchema, { description: 'How far to move the local broker clock forward.' }],
    [sequenceNumberText, { description: 'A sequence number: a decimal string of a non-negative 64-bit integer (S2).' }],
  ];
  for (const [schema, meta] of described) z.globalRegistry.add(schema, meta);
  describeMessage();
  describeProperties();
  describeFilterSpecs();
  return true;
});

// ---------------------------------------------------------------------------------------
// The registry
// ---------------------------------------------------------------------------------------

/** Request schemas by component name; the parts others refer to (Filter, SequenceNumber, ...) too. */
export const requestSchemas = /* @__PURE__ */ docSchema(
  () =>
    ({
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
      MessageBatch: batchSchema(),
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
    }) satisfies Record<string, z.ZodMiniType>,
);

export type RequestSchemaName = keyof ReturnType<typeof requestSchemas>;

/** A body that must be there: an absent one is `body: is required`. */
const body =
  <S extends z.ZodMiniType>(schema: S) =>
  (input: unknown): z.output<S> =>
    parseOrThrow(schema, input);
/** A body that may be left out: an absent one reads as `{}`, so a missing field is named as such. */
const bodyOrEmpty =
  <S extends z.ZodMiniType>(schema: S) =>
  (input: unknown): z.output<S> =>
    parseOrThrow(schema, input ?? {});

/**
 * How each request body is read: a 400 naming the field (B2), or a 413 for a message past
 * S5's limits, else the value the broker is handed. The route table names a body by one of
 * these names, and calls it required exactly where it is read with `body` (or refuses an
 * absent one itself, as a message and a batch do): a body holding a field without a default
 * (a lock token, a count) is required, since `{}` could never be accepted.
 */
export const requestParsers = {
  QueueProperties: (input: unknown) => parseEntityProperties('queue', input),
  TopicProperties: (input: unknown) => parseEntityProperties('topic', input),
  SubscriptionProperties: (input: unknown) => parseEntityProperties('subscription', input),
  RuleProperties: bodyOrEmpty(ruleSchema),
  Message: (input: unknown): SizedMessage => parseSized(input),
  // S4: every message is checked, in order, before any is stored.
  MessageBatch: (input: unknown): SizedMessage[] => parseBatch(input).map((m, i) => parseSized(m, `messages[${i}]`)),
  ReceiveOptions: bodyOrEmpty(receiveSchema),
  CompleteRequest: body(settleSchemas.complete),
  AbandonRequest: body(settleSchemas.abandon),
  DeferRequest: body(settleSchemas.defer),
  DeadLetterRequest: body(settleSchemas.deadletter),
  RenewLockRequest: body(settleSchemas.renew),
  LockTokens: body(settleSchemas.batch),
  DeferredRequest: body(settleSchemas.deferred),
  ResubmitRequest: bodyOrEmpty(resubmitSchema),
  DeleteMessagesRequest: body(deleteMessagesSchema),
  AuthorizationRuleProperties: body(rightsSchema),
  RegenerateKeyRequest: body(regenerateSchema),
  AcceptSessionRequest: bodyOrEmpty(sessionSchemas.accept),
  SessionReceiveOptions: body(sessionSchemas.receive),
  SessionLockRequest: body(sessionSchemas.token),
  SessionStateUpdate: body(sessionSchemas.state),
  SessionDeferredRequest: body(sessionSchemas.deferred),
  // Served by the local runtime alone, which reads it by hand with its own messages; named here as the table names it.
  ClockAdvance: body(clockAdvanceSchema),
} satisfies Partial<Record<RequestSchemaName, (input: unknown) => unknown>>;

/** The names a route's body may have. */
export type RequestBodyName = keyof typeof requestParsers;

/** What the broker is handed for a body of this name: the parsed, normalised value. */
export type RequestOf<N extends RequestBodyName> = ReturnType<(typeof requestParsers)[N]>;

/** Reads a body of the named kind; the one way a body from outside reaches the broker. */
export const parseRequest = <N extends RequestBodyName>(name: N, input: unknown): RequestOf<N> => requestParsers[name](input) as RequestOf<N>;

/** A settlement's body, whichever settlement: each one's body reads as a part of the dead-letter one. */
export type SettleRequest = RequestOf<'DeadLetterRequest'>;

/** The query string of a peek (R8). */
export const parsePeekQuery = (query: Record<string, string | undefined>) => parseOrThrow(peekSchema, query);
export type PeekQuery = ReturnType<typeof parsePeekQuery>;

/** The query string of a session listing (N8). */
export const parseSessionListQuery = (query: Record<string, unknown> | undefined) => parseOrThrow(sessionSchemas.list, query ?? {});
export type SessionListQuery = ReturnType<typeof parseSessionListQuery>;

/** A session lock token given in the query string (GET state, N5). */
export const parseSessionLockQuery = (token: unknown) => parseOrThrow(sessionSchemas.token, { sessionLockToken: token });
export type SessionLockQuery = ReturnType<typeof parseSessionLockQuery>;
