/**
 * Builds the OpenAPI 3.1 document of the HTTP API from the route table (lib/api/routes.ts,
 * with the prose of routes.ts) and the zod schemas of its bodies (lib/api, via schemas.ts). `npm run openapi` writes it to
 * docs/openapi.json; test/unit/openapi.test.ts fails when that file differs from a fresh build.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MAX_REQUEST_BYTES } from '../../lib/lambda-limits.js';
import { MAX_MESSAGE_BYTES } from '../../lib/messages/schema.js';
import { jobNames } from '../local/runtime.js';
import { requestExamples } from './examples.js';
import { routes, type RouteSpec } from './routes.js';
import { codesOfStatus, componentSchemas, pathParameters, ref, type JsonSchema } from './schemas.js';

export const documentFile = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const errorResponses: Record<number, { name: string; description: string; headers?: JsonSchema }> = {
  400: {
    name: 'BadRequest',
    description:
      'The request is invalid: malformed JSON, a missing, unknown or invalid field, an invalid name in the path, or a method the path does not take (B2). The message starts with the field.',
  },
  401: {
    name: 'Unauthorized',
    description: 'No valid SharedAccessSignature: missing or malformed, expired, unknown key name, or wrong signature. The answer never says which (A3).',
  },
  403: {
    name: 'Forbidden',
    description:
      "The token is genuine but its `sr` does not cover the path or its rule lacks the operation's right (A2, B3); or the entity refuses the operation (EntityDisabled, E5), or a quota is reached.",
  },
  404: { name: 'NotFound', description: 'The entity, rule or message does not exist (or the path names no resource).' },
  405: {
    name: 'MethodNotAllowed',
    description: 'Local runtime only: the method is not allowed on this local route; `Allow` lists those that are. Error code BadRequest.',
    headers: { Allow: { description: 'The methods the route takes.', schema: { type: 'string' } } },
  },
  408: { name: 'Timeout', description: 'Nothing became available within the wait asked for: no session could be accepted (N2).' },
  409: {
    name: 'Conflict',
    description: 'The entity was created, changed or deleted by another request meanwhile (retry); or the session is locked by another receiver (N2).',
  },
  410: {
    name: 'LockLost',
    description: 'The lock token is unknown, already used, for another message, or its lock has expired (R5); or the session lock is (N4).',
  },
  413: {
    name: 'PayloadTooLarge',
    description: `The request body exceeds ${MAX_REQUEST_BYTES} bytes (counted base64-encoded when it is not text, as Lambda's event carries it), or a message exceeds the S5 limits (${MAX_MESSAGE_BYTES} bytes in all, 64 KB of properties).`,
  },
  500: { name: 'InternalError', description: 'The broker failed; the request may be retried (retryable: true).' },
  503: {
    name: 'Throttled',
    description: 'The store is busy; retry after the number of seconds in `Retry-After`.',
    headers: { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } } },
  },
};

const securityDescription = [
  'A Service Bus shared access signature, exactly as the official Service Bus SDKs send it (A1-A4):',
  '',
  '`Authorization: SharedAccessSignature sr=<url-encoded resource URI>&sig=<url-encoded base64 HMAC-SHA256>&se=<expiry, seconds since the epoch>&skn=<key name>`',
  '',
  "The signature is HMAC-SHA256, keyed with the UTF-8 bytes of the rule's primary or secondary key, over `<sr as sent>\\n<se>`.",
  "The token's `sr` must cover the request path (whole, case-insensitive segments; the namespace root covers everything),",
  'and its rule, on the namespace or on the entity, must hold the right the operation needs (`x-required-right`: Send, Listen or Manage; Manage includes the other two).',
  'A missing, malformed, expired or unverifiable token is a 401; a genuine one without reach or right is a 403.',
  'The namespace rule `RootManageSharedAccessKey` always exists.',
].join('\n');

const apiDescription = [
  'Azure Service Bus semantics over HTTP, on AWS serverless. This document is generated from the code',
  '(`npm run openapi`, infra/openapi) and details the HTTP contract of docs/http-api.md.',
  'Rule ids in parentheses (E1, B1, ...) are those of docs/rules.md.',
  '',
  '- Bodies are JSON (`application/json; charset=utf-8`). Times are ISO 8601 UTC instants, durations ISO 8601 durations (`PT30S`), sequence numbers decimal strings.',
  '- Entity names are case-insensitive (E1). `$` in `$deadletterqueue` and `$transferdeadletterqueue` may be sent percent-encoded (`%24`).',
  '- Every error has the body `{"error": {"code", "message", "retryable", "requestId"}}` (B1).',
  '- Operations marked `x-local-only: true` exist only in the local runtime (`npm start`), need a token of a namespace rule with Manage like any management route, and are absent from the deployed API.',
].join('\n');

const tags = [
  { name: 'Queues', description: 'Queue management (E1-E6).' },
  { name: 'Topics', description: 'Topic management.' },
  { name: 'Subscriptions', description: 'Subscription management.' },
  { name: 'Rules', description: 'Subscription rules: filters and actions (F1).' },
  { name: 'Messages', description: 'Sending, receiving, settling, browsing and dead-letter handling.' },
  { name: 'Sessions', description: 'Ordered, exclusive processing per session id, with session state (N1-N8).' },
  { name: 'Authorization', description: 'Shared access authorization rules on the namespace and on entities (A2, A4).' },
  { name: 'Local', description: 'Local runtime only (`npm start`).' },
];

const JSON_TYPE = 'application/json';

function operation(route: RouteSpec): JsonSchema {
  const op: JsonSchema = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
  };
  if (route.description) op.description = route.description;
  if (route.localOnly) op['x-local-only'] = true;
  op['x-required-right'] = route.right;
  if (route.query?.length) {
    op.parameters = route.query.map((q) => ({ name: q.name, in: 'query', required: q.required ?? false, description: q.description, schema: q.schema }));
  }
  if (route.requestBody) {
    const example = requestExamples[route.requestBody.schema];
    op.requestBody = {
      required: route.requestBody.required,
      ...(route.requestBody.description ? { description: route.requestBody.description } : {}),
      content: { [JSON_TYPE]: { schema: ref(route.requestBody.schema), ...(example !== undefined ? { example } : {}) } },
    };
  }
  const responses: JsonSchema = {};
  for (const r of route.responses) {
    responses[String(r.status)] = {
      description: r.description,
      ...(r.schema ? { content: { [JSON_TYPE]: { schema: ref(r.schema) } } } : {}),
    };
  }
  for (const status of route.errors) {
    const known = errorResponses[status];
    if (!known) throw new Error(`${route.operationId}: no error response for ${status}`);
    responses[String(status)] = { $ref: `#/components/responses/${known.name}` };
  }
  op.responses = responses;
  return op;
}

const templateParameters = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

export function buildDocument(): JsonSchema {
  const paths: Record<string, JsonSchema> = {};
  for (const route of routes) {
    const item = (paths[route.path] ??= {});
    if (item[route.method]) throw new Error(`${route.method.toUpperCase()} ${route.path} is in the route table twice`);
    const params = templateParameters(route.path);
    if (params.length && !item.parameters) {
      item.parameters = params.map((p) => {
        const known = pathParameters[p];
        if (!known) throw new Error(`${route.path}: unknown path parameter {${p}}`);
        return { $ref: `#/components/parameters/${known.component}` };
      });
    }
    item[route.method] = operation(route);
  }

  const parameters: Record<string, JsonSchema> = {};
  for (const [name, p] of Object.entries(pathParameters)) {
    parameters[p.component] = {
      name,
      in: 'path',
      required: true,
      description: p.description,
      schema: name === 'job' ? { ...p.schema, enum: [...jobNames] } : p.schema,
    };
  }

  const responses: Record<string, JsonSchema> = {};
  for (const [status, r] of Object.entries(errorResponses)) {
    const codes = codesOfStatus(Number(status));
    responses[r.name] = {
      description: `${r.description}${codes.length ? ` Error codes: ${codes.join(', ')}.` : ''}`,
      ...(r.headers ? { headers: r.headers } : {}),
      content: { [JSON_TYPE]: { schema: ref('Error') } },
    };
  }

  const schemas = componentSchemas();

  return {
    openapi: '3.1.0',
    info: { title: 'Sluice', version: packageJson.version, description: apiDescription },
    servers: [
      {
        url: '{baseUrl}',
        variables: {
          baseUrl: {
            default: 'http://localhost:4280',
            description: 'The local runtime (`npm start`, port 4280 by default) or the deployed API Gateway URL.',
          },
        },
      },
    ],
    security: [{ sharedAccessSignature: [] }],
    tags,
    paths,
    components: {
      securitySchemes: {
        sharedAccessSignature: { type: 'apiKey', in: 'header', name: 'Authorization', description: securityDescription },
      },
      parameters,
      responses,
      schemas,
    },
  };
}

/** Objects with sorted keys (arrays keep their order), so the file only changes when the API does. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = canonical((value as Record<string, unknown>)[key]);
  return out;
}

/** The document as written to docs/openapi.json: top-level keys in OpenAPI order, the rest sorted, 2-space JSON. */
export function renderDocument(doc: JsonSchema = buildDocument()): string {
  const top: Record<string, unknown> = {};
  for (const key of Object.keys(doc)) top[key] = canonical(doc[key]);
  return `${JSON.stringify(top, null, 2)}\n`;
}
