/**
 * The JSON Schemas of the OpenAPI document (docs/openapi.json).
 *
 * Request and response bodies are the zod schemas of lib/api (`requestSchemas`: what the
 * router parses requests with; `responseSchemas`: what the presenters' answers are typed by), with
 * their descriptions and bounds as `.meta()`, turned into JSON Schema by
 * `z.toJSONSchema(..., { io: 'input' })`: a response's input side is its wire form. Nothing
 * here restates them; this file adds what is documentation only (property defaults) and the
 * path parameters.
 */
import * as z from 'zod/mini';
import { requestSchemas } from '../../lib/requests/schemas.js';
import { responseSchemas } from '../../lib/api/responses.js';
import { describeRequests, peekSchema } from '../../lib/requests/schemas.js';
import { defaults, presentProperties } from '../../lib/entities/properties.js';
import { httpStatusOf } from '../../lib/api/errors.js';
import { ERROR_CODES, type ErrorCode } from '../../lib/errors.js';
import { nameLimits } from '../../lib/names.js';
import { describeDurations, ownRecordDocs } from '../../lib/validation.js';

export type JsonSchema = { [key: string]: unknown };

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

export { requestSchemas, type RequestSchemaName } from '../../lib/requests/schemas.js';
export { responseSchemas, type ResponseSchemaName } from '../../lib/api/responses.js';

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

/** Describes each `ownRecord` (lib/validation.ts) as the record it wraps, its stand-in's metadata. */
function describeOwnRecords(): void {
  for (const [standIn, record] of ownRecordDocs) {
    const { $schema: _schema, ...documented } = z.toJSONSchema(record, { io: 'input', unrepresentable: 'any' });
    z.globalRegistry.add(standIn, documented);
  }
}

/** The request and response schemas, as JSON Schema with `$ref`s between them. */
export function componentSchemas(): Record<string, JsonSchema> {
  describeRequests();
  describeOwnRecords();
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries({ ...requestSchemas(), ...responseSchemas })) registry.add(schema as z.ZodMiniType, { id });
  // After the schemas above are made: a lazily made one may hold a duration field of its own.
  describeDurations();
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonSchema> };
  const out: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(schemas)) out[id] = strip(schema);
  annotate(out);

  for (const [kind, name] of [
    ['queue', 'QueueProperties'],
    ['topic', 'TopicProperties'],
    ['subscription', 'SubscriptionProperties'],
  ] as const) {
    const props = out[name]!.properties as Record<string, JsonSchema>;
    const given = presentProperties(kind, defaults);
    for (const [key, value] of Object.entries(given)) if (props[key]) props[key].default = value;
    out[name]!.description =
      `The ${kind}'s properties (E2). A PUT sends only those it sets; the rest keep their value (or the default shown). Unknown fields are refused (400).`;
  }
  out.CorrelationFilter!.description = "Matches when every given property equals the message's; at least one property is required.";
  out.CorrelationFilter!.minProperties = 1;
  out.Filter!.description = 'A rule filter: SQL, correlation, or constant true/false.';
  return out;
}

/** Example peek query parameters as JSON Schema (object properties). */
export function peekQuerySchema(): Record<string, JsonSchema> {
  describeRequests();
  const schema = z.toJSONSchema(peekSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return schema.properties as Record<string, JsonSchema>;
}

// ---------------------------------------------------------------------------------------
// Errors (B1)
// ---------------------------------------------------------------------------------------

/** The HTTP status of each code, as the API answers it (lib/api/errors.ts). */
export const statusOfCode = (code: ErrorCode): number => httpStatusOf(code);

export const codesOfStatus = (status: number): ErrorCode[] => ERROR_CODES.filter((c) => statusOfCode(c) === status);

/** Path parameters, keyed by their name in the path templates. */
export const namePattern = '^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$';
export const pathParameters: Record<string, { component: string; description: string; schema: JsonSchema }> = {
  q: {
    component: 'QueueName',
    description: 'Queue name (E1, case-insensitive).',
    schema: { type: 'string', minLength: 1, maxLength: nameLimits.queue, pattern: namePattern },
  },
  t: {
    component: 'TopicName',
    description: 'Topic name (E1, case-insensitive).',
    schema: { type: 'string', minLength: 1, maxLength: nameLimits.topic, pattern: namePattern },
  },
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
  sequenceNumber: { component: 'SequenceNumberInPath', description: "The message's sequence number.", schema: ref('SequenceNumber') },
  sessionId: {
    component: 'SessionIdInPath',
    description: 'A session id (1-128 characters, case-sensitive), percent-encoded as one path segment.',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  job: { component: 'Job', description: 'A background job of the local runtime.', schema: { type: 'string' } },
};
