/**
 * The prose of every route of the HTTP API (docs/http-api.md): what docs/openapi.json is generated
 * from. Method, path, right, broker operation and the bodies' schemas are not written here:
 * each description names its route table entry (lib/api/routes.ts) by operationId and takes
 * them from it, and every documented entry of the table must be described exactly once, each
 * of its success answers too.
 */
import { jobNames } from '../local/runtime.js';
import { routeTable, type Method, type Route } from '../../lib/api/routes.js';
import { responsesOf } from '../../lib/api/route-answers.js';
import { ENTITY_SHAPES, SUBQUEUE_SHAPES } from '../../lib/entities/paths.js';
import type { Right } from '../../lib/auth/sas.js';
import { peekSchema } from '../../lib/requests/schemas.js';
import { peekQuerySchema, type JsonSchema, type RequestSchemaName, type ResponseSchemaName } from './schemas.js';

export type { Method, Right };

export interface QueryParameter {
  name: string;
  description: string;
  schema: JsonSchema;
  required?: boolean;
}

export interface SuccessResponse {
  status: number;
  description: string;
  /** The body's component schema (from the route table); none for an empty body. */
  schema?: ResponseSchemaName;
}

export interface RouteSpec {
  method: Method;
  /** Path template; parameters `{q}`, `{t}`, `{s}`, `{r}`, `{name}`, `{sequenceNumber}`, `{sessionId}`, `{job}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** The right a SharedAccessSignature's rule needs (A2); the local-only routes want Manage on the namespace. */
  right: Right;
  /** Served only by the local runtime (`npm start`), never deployed. */
  localOnly?: boolean;
  /** The broker operation the router calls for it (`auth.put` for `broker.auth.put`). */
  broker?: string;
  requestBody?: { schema: RequestSchemaName; required: boolean; description?: string };
  query?: QueryParameter[];
  responses: SuccessResponse[];
  /** Error statuses it may answer with, each with the B1 error body. */
  errors: number[];
}

/** Error statuses any authorized API request may get: validation, authentication, rights, failure, throttling. */
const BASE = [400, 401, 403, 500, 503];
const errors = (...extra: number[]) => [...new Set([...BASE, ...extra])].sort((a, b) => a - b);
/** A request with a body: 413 when it is larger than MAX_REQUEST_BYTES. */
const BODY = 413;

export const NOT_FOUND_NOTE = 'The entity must exist (404 otherwise).';

const paging: QueryParameter[] = [
  { name: 'next', description: "Paging token from the previous page's `next`. Alias: `continuationToken`.", schema: { type: 'string' } },
  { name: 'continuationToken', description: 'Alias of `next`.', schema: { type: 'string' } },
  { name: 'top', description: 'Page size, 1-100 (default 100). Aliases: `maxItems`, `$top`.', schema: { type: 'integer', minimum: 1, maximum: 100 } },
  { name: 'maxItems', description: 'Alias of `top`.', schema: { type: 'integer', minimum: 1, maximum: 100 } },
  { name: '$top', description: 'Alias of `top`.', schema: { type: 'integer', minimum: 1, maximum: 100 } },
];

/** Listing sessions takes `top` and `next` only (other query parameters are refused, 400). */
const sessionPaging: QueryParameter[] = [
  { name: 'next', description: "Paging token from the previous page's `next`.", schema: { type: 'string' } },
  { name: 'top', description: 'Page size, 1-100 (default 100).', schema: { type: 'integer', minimum: 1, maximum: 100 } },
];

/** Peek's query string, as `peekSchema` reads it: its bounds, and the defaults it fills in. */
const peekQuery: QueryParameter[] = (() => {
  const defaults = peekSchema.parse({});
  const maxMessages: JsonSchema = { ...peekQuerySchema().maxMessages, default: defaults.maxMessages };
  return [
    {
      name: 'fromSequenceNumber',
      description: `Peek from this sequence number on (default ${defaults.fromSequenceNumber}). Other query parameters are refused (400).`,
      schema: { $ref: '#/components/schemas/SequenceNumber', default: defaults.fromSequenceNumber },
    },
    {
      name: 'maxMessages',
      description: `At most this many messages, ${String(maxMessages.minimum)}-${String(maxMessages.maximum)} (default ${defaults.maxMessages}).`,
      schema: maxMessages,
    },
  ];
})();

/** The entity shapes of the route table, with the tag their management routes go under. */
const ENTITIES = ENTITY_SHAPES.map((e) => ({ ...e, tag: `${e.label}s` }));

const subqueueNames: Record<(typeof SUBQUEUE_SHAPES)[number]['subqueue'], string> = {
  '': '',
  deadletter: 'dead-letter subqueue',
  transfer: 'transfer dead-letter subqueue',
};
const SUBQUEUES = SUBQUEUE_SHAPES.map((sub) => ({ ...sub, name: subqueueNames[sub.subqueue] }));

/** What this file writes of a route; the rest (its bodies' schemas too) comes from its table entry. */
type RouteDoc = Omit<RouteSpec, 'method' | 'path' | 'right' | 'localOnly' | 'broker' | 'requestBody' | 'responses'> & {
  requestBodyDescription?: string;
  /** A description of each success answer of the table entry, in its order. */
  responses: { status: number; description: string }[];
};

function buildRoutes(): RouteSpec[] {
  const routes: RouteSpec[] = [];
  const entries = new Map(routeTable.filter((r) => r.undocumented === undefined).map((r) => [r.operationId, r]));
  const add = (doc: RouteDoc) => {
    const entry = entries.get(doc.operationId);
    if (entry === undefined) throw new Error(`${doc.operationId}: no such route in lib/api/routes.ts, or described twice`);
    entries.delete(doc.operationId);
    routes.push(specOf(entry, doc));
  };

  // Listings.
  add({
    operationId: 'listQueues',
    tag: 'Queues',
    summary: 'List queues',
    query: paging,
    responses: [{ status: 200, description: 'A page of queues, in name order.' }],
    errors: errors(),
  });
  add({
    operationId: 'listTopics',
    tag: 'Topics',
    summary: 'List topics',
    query: paging,
    responses: [{ status: 200, description: 'A page of topics, in name order.' }],
    errors: errors(),
  });
  add({
    operationId: 'listSubscriptions',
    tag: 'Subscriptions',
    summary: "List a topic's subscriptions",
    description: 'The topic must exist (404 otherwise).',
    query: paging,
    responses: [{ status: 200, description: 'A page of subscriptions, in name order.' }],
    errors: errors(404),
  });

  // Namespace authorization rules.
  addAuthRules(add, '', 'Namespace', 'the namespace', false);

  for (const e of ENTITIES) {
    add({
      operationId: `put${e.label}`,
      tag: e.tag,
      summary: `Create or update a ${e.kind}`,
      description:
        `Creates the ${e.kind} (201) or updates only the given properties (200) (E2, E3). Unknown fields are refused (400); ` +
        "`enablePartitioning` cannot change after creation. The answer's `runtime` counts are not read on a PUT and show 0; GET the entity for them." +
        (e.kind === 'subscription' ? ' The topic must exist (404 otherwise); a new subscription gets the rule `$Default` (true filter).' : '') +
        (e.kind === 'topic'
          ? ''
          : ' Setting `forwardTo` or `forwardDeadLetteredMessagesTo` needs Send on the target too, with the same token (403 otherwise, whether the target exists or not; a bare name needs it on both the queue and the topic of that name).'),
      requestBodyDescription: 'The properties to set; an empty or absent body takes every default.',
      responses: [
        { status: 200, description: `Updated; the ${e.kind} as it now is.` },
        { status: 201, description: `Created; the new ${e.kind}.` },
      ],
      errors: errors(BODY, ...(e.kind === 'subscription' ? [404] : []), 409),
    });
    add({
      operationId: `get${e.label}`,
      tag: e.tag,
      summary: `Get a ${e.kind} with runtime information`,
      description: 'Properties plus `runtime` (E6).',
      responses: [{ status: 200, description: `The ${e.kind}.` }],
      errors: errors(404),
    });
    add({
      operationId: `delete${e.label}`,
      tag: e.tag,
      summary: `Delete a ${e.kind}`,
      description: `Deletes the ${e.kind} with its messages${e.kind === 'topic' ? ', subscriptions' : ''}${e.kind === 'subscription' ? ', rules' : ''} and authorization rules (E4).`,
      responses: [{ status: 204, description: 'Deleted.' }],
      errors: errors(404, 409),
    });
    addAuthRules(add, e.path, e.label, `the ${e.kind}`, true);
  }

  // Rules of a subscription.
  add({
    operationId: 'listRules',
    tag: 'Rules',
    summary: "List a subscription's rules",
    description: NOT_FOUND_NOTE,
    responses: [{ status: 200, description: 'Every rule of the subscription.' }],
    errors: errors(404),
  });
  add({
    operationId: 'putRule',
    tag: 'Rules',
    summary: 'Create or replace a rule',
    description: 'Filter and action are checked when the rule is written; a syntax error is a 400 naming `filter.sql` or `action.sql` (F1).',
    responses: [
      { status: 200, description: 'Replaced.' },
      { status: 201, description: 'Created.' },
    ],
    errors: errors(BODY, 404),
  });
  add({
    operationId: 'getRule',
    tag: 'Rules',
    summary: 'Get a rule',
    responses: [{ status: 200, description: 'The rule.' }],
    errors: errors(404),
  });
  add({
    operationId: 'deleteRule',
    tag: 'Rules',
    summary: 'Delete a rule',
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: errors(404),
  });

  // Sending: queues and topics.
  for (const e of ENTITIES.filter((x) => x.kind !== 'subscription')) {
    add({
      operationId: `sendTo${e.label}`,
      tag: 'Messages',
      summary: `Send a message to a ${e.kind}`,
      description:
        (e.kind === 'queue'
          ? 'Stored durably before the answer (S1). A queue that forwards (F2) answers with the receipt of the stored copy.'
          : 'Copied to every subscription whose rules match (F1); the answer names them.') +
        ` Refused with 403 (EntityDisabled) when the ${e.kind} is Disabled or SendDisabled (E5), with 413 over the size limits (S5).`,
      responses: [{ status: 201, description: 'Stored.' }],
      errors: errors(BODY, 404),
    });
    add({
      operationId: `sendBatchTo${e.label}`,
      tag: 'Messages',
      summary: `Send up to 100 messages to a ${e.kind}`,
      description: 'Every message is validated before any is stored; then each is stored on its own (S4).',
      responses: [
        { status: 201, description: 'All were stored.' },
        { status: 207, description: 'Some were not stored; their results hold an error (retry those).' },
      ],
      errors: errors(BODY, 404),
    });
    add({
      operationId: `cancelScheduledOn${e.label}`,
      tag: 'Messages',
      summary: 'Cancel a scheduled message',
      description:
        'S6. 404 (MessageNotFound) once it is no longer scheduled.' +
        (e.kind === 'topic'
          ? ' A topic keeps no messages of its own (its scheduled messages are copies in its subscriptions, and a topic send returns no sequence number), so on a topic this answers 404.'
          : ''),
      responses: [{ status: 204, description: 'Cancelled.' }],
      errors: errors(404),
    });
  }

  // Receiving: queues, subscriptions and their subqueues.
  for (const e of ENTITIES.filter((x) => x.kind !== 'topic')) {
    for (const sub of SUBQUEUES) {
      const id = `${e.label}${sub.label}`;
      const where = sub.name ? `the ${e.kind}'s ${sub.name}` : `a ${e.kind}`;
      const tag = 'Messages';
      add({
        operationId: `receiveFrom${id}`,
        tag,
        summary: `Receive messages from ${where}`,
        description:
          'Peek-lock (default) or receive-and-delete, oldest first; waits up to `maxWaitTime` for a message and answers with none when none came (R1, R2). ' +
          '403 (EntityDisabled) when the entity is Disabled' +
          (sub.name ? '.' : ' or ReceiveDisabled (E5).'),
        responses: [{ status: 200, description: 'The messages received; possibly none.' }],
        errors: errors(BODY, 404),
      });
      add({
        operationId: `peek${id}`,
        tag,
        summary: `Peek at messages of ${where}`,
        description: 'Without locking, from a sequence number on; scheduled and deferred messages included with their state (R8).',
        query: peekQuery,
        responses: [{ status: 200, description: 'The messages, in sequence order.' }],
        errors: errors(404),
      });
      add({
        operationId: `notificationsOf${id}`,
        tag,
        summary: `Where to wait for messages on ${where}`,
        description:
          'The WebSocket URL on which a consumer subscribes to availability hints instead of long-polling (README "Waiting"). ' +
          '404 when the entity is missing or the deployment has no WebSocket API.',
        responses: [{ status: 200, description: 'The WebSocket URL.' }],
        errors: errors(404),
      });
      add({
        operationId: `purge${id}`,
        tag,
        summary: `Purge ${where}`,
        description:
          'Deletes every message (D7) but those a receiver holds locked, which stay with their holder, and deferred ones, which stay to be received by ' +
          'sequence number, as Service Bus leaves them (R11). A long purge may stop early; call again until `purged` is 0.',
        responses: [{ status: 200, description: 'How many were deleted.' }],
        errors: errors(404),
      });
      const settlements: { action: string; op: string; summary: string; spec: string }[] = [
        { action: 'complete', op: 'complete', summary: 'Complete a locked message', spec: 'The message is gone (R4).' },
        {
          action: 'abandon',
          op: 'abandon',
          summary: 'Abandon a locked message',
          spec: 'Released for redelivery, optionally with changed application properties (R4, D2).',
        },
        { action: 'defer', op: 'defer', summary: 'Defer a locked message', spec: 'Kept aside until received by sequence number (R4, R7).' },
      ];
      // D5: a message in a dead-letter subqueue cannot be dead-lettered again.
      if (!sub.name) {
        settlements.push({
          action: 'deadletter',
          op: 'deadLetter',
          summary: 'Dead-letter a locked message',
          spec: 'Moved to the dead-letter subqueue with the given reason (R4, D1).',
        });
      }
      for (const s of settlements) {
        add({
          operationId: `${s.op}On${id}`,
          tag,
          summary: `${s.summary} (${where})`,
          description: `${s.spec} 410 (MessageLockLost) when the token is unknown, used, for another message or its lock has expired (R5).`,
          responses: [{ status: 204, description: 'Settled.' }],
          errors: errors(BODY, 404, 410),
        });
      }
      add({
        operationId: `renewLockOn${id}`,
        tag,
        summary: `Renew a message lock (${where})`,
        description: 'The lock now runs until now + lockDuration (R4). 410 (MessageLockLost) as for settlements.',
        responses: [{ status: 200, description: 'The new lock expiry.' }],
        errors: errors(BODY, 404, 410),
      });
      for (const action of ['complete', 'abandon'] as const) {
        add({
          operationId: `${action}BatchOn${id}`,
          tag,
          summary: `${action === 'complete' ? 'Complete' : 'Abandon'} messages by lock token (${where})`,
          description: 'Up to 100 lock tokens; a result for each, in order (R9). A lost lock is a per-token error, not a failure of the request.',
          responses: [{ status: 200, description: 'One result per token.' }],
          errors: errors(BODY, 404),
        });
      }
      add({
        operationId: `receiveDeferredFrom${id}`,
        tag,
        summary: `Receive deferred messages by sequence number (${where})`,
        description: 'Receives those deferred messages under lock (R7); 404 (MessageNotFound) when one of them is not deferred, and then none is locked.',
        responses: [{ status: 200, description: 'The messages, locked.' }],
        errors: errors(BODY, 404),
      });
      add({
        operationId: `deleteMessagesFrom${id}`,
        tag,
        summary: `Delete messages enqueued before a time (${where})`,
        description:
          "Deletes up to `maxMessageCount` messages enqueued before `beforeEnqueueTime` (default: now), as the SDK's `deleteMessages` and `purgeMessages`. " +
          'As in Service Bus, a message a receiver holds locked stays with its holder (its complete still succeeds), and a deferred message stays to be ' +
          'received by sequence number (R11). A long call may stop early; call again.',
        responses: [{ status: 200, description: 'How many were deleted.' }],
        errors: errors(BODY, 404),
      });
      if (sub.name) {
        add({
          operationId: `resubmitFrom${id}`,
          tag,
          summary: `Resubmit messages from ${where}`,
          description:
            'Moves dead-lettered messages back to the parent entity (or `to`) as new messages, dead-letter fields cleared (D7). Each moves atomically (D3); ' +
            'a call that stops early answers `remaining: true`, and calling again continues. 403 (EntityDisabled) when the destination refuses sends; ' +
            '403 (Forbidden) when `to` names an entity the same token has no Send right on, whether it exists or not.',
          responses: [{ status: 200, description: 'How many were resubmitted.' }],
          errors: errors(BODY, 404),
        });
      }
    }
  }

  // Sessions (N1-N8).
  for (const e of ENTITIES.filter((x) => x.kind !== 'topic')) {
    const tag = 'Sessions';
    const of = `a ${e.kind}`;
    const lockLost = "410 (SessionLockLost) when the session lock token is not the session's current one or its lock has run out (N4).";
    const needsSessions = `400 naming \`path\` when the ${e.kind} does not require sessions (N1).`;
    add({
      operationId: `acceptSessionOn${e.label}`,
      tag,
      summary: `Accept a session of ${of}`,
      description:
        'Locks the whole session for `lockDuration` (N2): the named one, accepted even when it has no messages yet, or without `sessionId` the next session that has an available message and no lock holder, ' +
        'the one whose oldest available message is oldest first, waiting up to `maxWaitTime` for one like a receive. ' +
        '409 (SessionCannotBeLocked) when another receiver holds it; 408 (ServiceTimeout) when no session became available in time. ' +
        'Accepting the next session costs the same however many sessions there are, locked or not (N7). ' +
        needsSessions,
      responses: [{ status: 200, description: 'The session, locked for this receiver.' }],
      errors: errors(BODY, 404, 408, 409),
    });
    add({
      operationId: `listSessionsOf${e.label}`,
      tag,
      summary: `List the sessions of ${of}`,
      description: 'The ids of sessions that have messages or state (N8), paged.',
      query: sessionPaging,
      responses: [{ status: 200, description: 'A page of session ids, in id order.' }],
      errors: errors(404),
    });
    add({
      operationId: `receiveFrom${e.label}Session`,
      tag,
      summary: `Receive messages from an accepted session of ${of}`,
      description:
        "In sequence order, only to the session lock holder (N3); an abandoned message, or one whose lock lapsed, comes first again. Messages carry the session's `lockedUntil`; " +
        'settle them with the ordinary settlement routes (`{R}/messages/{sequenceNumber}/complete`, ...), which also check the session lock (410 SessionLockLost once it is lost). ' +
        'A plain receive on an entity that requires sessions is refused (400, N1). ' +
        lockLost,
      responses: [{ status: 200, description: 'The messages received; possibly none.' }],
      errors: errors(BODY, 404, 410),
    });
    add({
      operationId: `renewSessionLockOn${e.label}`,
      tag,
      summary: `Renew a session lock (${of})`,
      description: "The session lock, and with it the locks of the session's messages this holder received, runs until now + lockDuration (N4). " + lockLost,
      responses: [{ status: 200, description: 'The new session lock expiry.' }],
      errors: errors(BODY, 404, 410),
    });
    add({
      operationId: `releaseSessionOn${e.label}`,
      tag,
      summary: `Release a session lock (${of})`,
      description:
        'Closing a session receiver: the next receiver can accept the session at once (N4); messages received but not settled are delivered again, delivery count up by one. ' +
        lockLost,
      responses: [{ status: 204, description: 'Released.' }],
      errors: errors(BODY, 404, 410),
    });
    add({
      operationId: `getSessionStateOf${e.label}`,
      tag,
      summary: `Get a session's state (${of})`,
      description: 'Only for the session lock holder (N5). ' + lockLost,
      query: [{ name: 'sessionLockToken', description: 'The session lock token from the accept.', schema: { type: 'string' }, required: true }],
      responses: [{ status: 200, description: 'The state, base64; null when none is set.' }],
      errors: errors(404, 410),
    });
    add({
      operationId: `setSessionStateOf${e.label}`,
      tag,
      summary: `Set or clear a session's state (${of})`,
      description:
        "Only for the session lock holder (N5); up to 256 KB of bytes (413 MessageSizeExceeded naming `state` above that). The state outlives the session's messages and goes with the entity. " +
        lockLost,
      responses: [{ status: 204, description: 'Stored.' }],
      errors: errors(BODY, 404, 410),
    });
    add({
      operationId: `receiveDeferredFrom${e.label}Session`,
      tag,
      summary: `Receive deferred messages of an accepted session by sequence number (${of})`,
      description:
        'Under the session lock (N6, R7); 404 (MessageNotFound) when one of them is not a deferred message of this session, and then none is locked. ' +
        lockLost,
      responses: [{ status: 200, description: 'The messages, locked.' }],
      errors: errors(BODY, 404, 410),
    });
  }

  // Local runtime only.
  add({
    operationId: 'getLocalClock',
    tag: 'Local',
    summary: "The local broker's clock",
    responses: [{ status: 200, description: "The broker's current time." }],
    errors: [401, 403, 405],
  });
  add({
    operationId: 'advanceLocalClock',
    tag: 'Local',
    summary: "Move the local broker's clock forward",
    description: 'For every handler and job; never back. Kept in the data directory between runs.',
    responses: [{ status: 200, description: "The broker's new time." }],
    errors: [400, 401, 403, 405, 413],
  });
  add({
    operationId: 'runLocalJob',
    tag: 'Local',
    summary: 'Run a background job once',
    description: `Runs the job to completion and answers with what it did. Jobs: ${jobNames.join(', ')}.`,
    responses: [{ status: 200, description: "The job's report." }],
    errors: [401, 403, 404, 405, 500],
  });
  if (entries.size > 0) throw new Error(`routes without a description: ${[...entries.keys()].join(', ')}`);
  return routes;
}

function specOf(entry: Route, { requestBodyDescription, responses: described, ...doc }: RouteDoc): RouteSpec {
  const { method, path, right, body } = entry;
  const requestBody = body && { ...body, ...(requestBodyDescription ? { description: requestBodyDescription } : {}) };
  const statuses = (answers: readonly { status: number }[]) => answers.map((a) => a.status).join(', ');
  const answers = responsesOf(entry);
  if (statuses(described) !== statuses(answers)) {
    throw new Error(`${entry.operationId}: described answers ${statuses(described)}, the route table has ${statuses(answers)}`);
  }
  const responses = answers.map((answer, i) => ({ ...answer, description: described[i]!.description }));
  const spec: RouteSpec = entry.localOnly
    ? { method, path, right, localOnly: true, ...doc, responses }
    : { method, path, right, broker: entry.operation, ...doc, responses };
  return requestBody ? { ...spec, requestBody } : spec;
}

function addAuthRules(add: (r: RouteDoc) => void, prefix: string, label: string, scope: string, entityScoped: boolean) {
  const e404 = entityScoped ? [404] : [];
  const note = entityScoped ? ` The ${scope.replace(/^the /, '')} must exist (404 otherwise).` : '';
  const tag = 'Authorization';
  add({
    operationId: `list${label}AuthorizationRules`,
    tag,
    summary: `List the authorization rules of ${scope}`,
    description: `A4.${note}${entityScoped ? '' : ' Includes RootManageSharedAccessKey.'}`,
    responses: [{ status: 200, description: 'The rules, with their keys.' }],
    errors: errors(...e404),
  });
  add({
    operationId: `put${label}AuthorizationRule`,
    tag,
    summary: `Create or update an authorization rule of ${scope}`,
    description: `Sets the rule's rights; keys are generated on creation and kept on update (A2).${note}${entityScoped ? '' : ' RootManageSharedAccessKey cannot be changed (400).'}`,
    responses: [
      { status: 200, description: 'Updated.' },
      { status: 201, description: 'Created.' },
    ],
    errors: errors(BODY, ...e404),
  });
  add({
    operationId: `get${label}AuthorizationRule`,
    tag,
    summary: `Get an authorization rule of ${scope}`,
    responses: [{ status: 200, description: 'The rule, with its keys.' }],
    errors: errors(404),
  });
  add({
    operationId: `delete${label}AuthorizationRule`,
    tag,
    summary: `Delete an authorization rule of ${scope}`,
    description: entityScoped ? undefined : 'RootManageSharedAccessKey cannot be deleted (400).',
    responses: [{ status: 204, description: 'Deleted.' }],
    errors: errors(404),
  });
  add({
    operationId: `regenerate${label}AuthorizationRuleKey`,
    tag,
    summary: `Regenerate a key of an authorization rule of ${scope}`,
    description: 'One key at a time, so clients can move to the other key first (A4). Tokens signed with the old key stop working.',
    responses: [{ status: 200, description: 'The rule with its new key.' }],
    errors: errors(BODY, 404),
  });
}

export const routes: readonly RouteSpec[] = buildRoutes();

/** Sample values for path parameters (used for examples and by the tests). */
export const sampleParameters: Record<string, string> = {
  q: 'orders',
  t: 'events',
  s: 'audit',
  r: 'red-only',
  name: 'sender',
  sequenceNumber: '42',
  sessionId: 'order-7',
  job: jobNames[0] ?? 'sweeper',
};

/** The template with every parameter filled with its sample (or with `values`). */
export function examplePath(template: string, values: Record<string, string> = sampleParameters): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no sample value for {${name}} in ${template}`);
    return value;
  });
}
