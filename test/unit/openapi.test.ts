/**
 * Holds docs/openapi.json to the code: it is what `npm run openapi` generates now; every
 * route in it is a route of the real router, and every path shape the router handles is in
 * it; the rights agree with `requiredRight`; request schemas agree with the real parsers;
 * the presenters' rarer shapes fit the response schemas; and the document is well-formed.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { route, type ApiRequest, type ApiResponse } from '../../functions/api/router.js';
import { buildDocument, documentFile, renderDocument } from '../../infra/openapi/document.js';
import { LOCK_TOKEN, SESSION_LOCK_TOKEN, requestExamples } from '../../infra/openapi/examples.js';
import { examplePath, routes, sampleParameters, type RouteSpec } from '../../infra/openapi/routes.js';
import { resolveRef, validate } from '../../infra/openapi/check.js';
import { namePattern, pathParameters, type JsonSchema, type RequestSchemaName, type ResponseSchemaName } from '../../infra/openapi/schemas.js';
import { jobNames } from '../../infra/local/runtime.js';
import { RIGHTS } from '../../lib/auth/index.js';
import { requiredRight } from '../../lib/api/authorize.js';
import { routesAt, routeTable } from '../../lib/api/routes.js';
import { parsePeekQuery, parseRequest, parseSessionListQuery, parseSessionLockQuery } from '../../lib/requests/schemas.js';
import { matchTemplate, templateParts } from '../../lib/entities/templates.js';
import { NAMESPACE_GRANT, ruleStore } from '../../lib/broker/authorization.js';
import { peek } from '../../lib/broker/peek.js';
import { resubmit } from '../../lib/broker/resubmit.js';
import { presentEntity, type EntityItem } from '../../lib/broker/entities.js';
import { putRule } from '../../lib/broker/filter-rules.js';
import { receiveDeferred, renewLock, settle, settleBatch } from '../../lib/broker/settle.js';
import { getSessionState, listSessions } from '../../lib/broker/sessions.js';
import type { BrokerContext } from '../../lib/broker/context.js';
import { formatDuration, parseDuration } from '../../lib/durations.js';
import { defaults, parseEntityProperties, type EntityKind } from '../../lib/entities/properties.js';
import type { ReceiveTarget } from '../../lib/entities/paths.js';
import { BrokerError } from '../../lib/errors.js';
import { presentMessage, type MessageItem } from '../../lib/messages/item.js';
import { validateName } from '../../lib/names.js';
import { SequenceGenerator } from '../../lib/store/sequence.js';

const doc = buildDocument();
const apiRoutes = routes.filter((r) => !r.localOnly);
const localRoutes = routes.filter((r) => r.localOnly);
const label = (r: Pick<RouteSpec, 'method' | 'path'>) => `${r.method.toUpperCase()} ${r.path}`;

// ---------------------------------------------------------------------------------------
// A broker that records which operation the router called, and answers every one.
// ---------------------------------------------------------------------------------------

const answers: Record<string, unknown> = {
  sendBatch: [],
  putEntity: { created: true, entity: {} },
  putRule: { created: true, rule: {} },
  'auth.list': [],
  'auth.put': { created: true, rule: {} },
};
const syncOperations = new Set(['presentEntity', 'presentRule']);

function recordingBroker() {
  const calls: string[] = [];
  const make = (prefix: string): unknown =>
    new Proxy(
      {},
      {
        get: (_target, prop) => {
          if (typeof prop !== 'string' || prop === 'then') return undefined;
          if (prefix === '' && prop === 'auth') return make('auth.');
          const name = `${prefix}${prop}`;
          if (syncOperations.has(name)) return () => ({});
          return async () => {
            calls.push(name);
            return structuredClone(answers[name] ?? {});
          };
        },
      },
    );
  return { broker: make('') as never, calls };
}

type Outcome = { kind: 'handled'; response: ApiResponse; calls: string[] } | { kind: 'unrouted'; error: BrokerError } | { kind: 'refused'; error: unknown };

const isUnrouted = (e: unknown): e is BrokerError =>
  e instanceof BrokerError && (e.message === 'no such resource' || /^method \S+ is not allowed on this path$/.test(e.message));

/** Samples of the query parameters a route requires. */
const sampleQuery: Record<string, string> = { sessionLockToken: SESSION_LOCK_TOKEN };

/**
 * The documented example body, and the required query parameters, of the route a request is
 * routed to: the router parses both before the broker is called, so a request about routing
 * sends good ones.
 */
function exampleRequest(method: string, path: string): Pick<ApiRequest, 'body' | 'query'> {
  let segments: string[];
  try {
    segments = path
      .split('/')
      .filter(Boolean)
      .map((s) => decodeURIComponent(s));
  } catch {
    return { body: undefined, query: {} };
  }
  const hit = routesAt(segments).find((x) => x.route.method === method.toLowerCase())?.route;
  const schema = hit?.body?.schema;
  const required = routes.find((r) => r.operationId === hit?.operationId)?.query?.filter((q) => q.required) ?? [];
  return {
    body: schema === undefined ? undefined : requestExamples[schema],
    query: Object.fromEntries(required.map((q) => [q.name, sampleQuery[q.name]])),
  };
}

async function send(method: string, path: string, extra: Partial<ApiRequest> = {}): Promise<Outcome> {
  const { broker, calls } = recordingBroker();
  try {
    const response = await route(broker, { method, path, ...exampleRequest(method, path), ...extra });
    return { kind: 'handled', response, calls };
  } catch (error) {
    if (isUnrouted(error)) return { kind: 'unrouted', error };
    return { kind: 'refused', error };
  }
}

// ---------------------------------------------------------------------------------------
// Matching concrete paths against the documented templates.
// ---------------------------------------------------------------------------------------

/** Path parameters the router itself validates (parseEntitySegments, then the ones read before a body); the broker validates the others. */
const routerValidated = new Set(['q', 't', 's']);
const nameRegex = new RegExp(namePattern);
const validParameter = (param: string, value: string) =>
  param === 'sequenceNumber' || param === 'sessionId'
    ? validate(pathParameters[param]!.schema, value, doc).length === 0
    : !routerValidated.has(param) || nameRegex.test(value);

/** The documented routes a concrete request matches (parameters the router validates must be valid names). */
function documentedRoutes(method: string, path: string): RouteSpec[] {
  const m = method.toLowerCase();
  const p = path
    .split('/')
    .filter(Boolean)
    .map((s) => decodeURIComponent(s));
  return apiRoutes.filter((r) => {
    const match = r.method === m ? matchTemplate(r.path, p) : undefined;
    return match !== undefined && Object.entries(match.params).every(([param, value]) => validParameter(param, value));
  });
}

/**
 * Path shapes the router hands to the broker that the document leaves out on purpose. Each
 * always fails in the broker, so documenting it would only mislead.
 */
const routedButUndocumented: { method: string; pattern: RegExp; why: string }[] = [
  {
    method: 'POST',
    pattern: /\/\$(deadletterqueue|transferdeadletterqueue)\/messages\/[^/]+\/deadletter$/,
    why: 'D5: a message in a dead-letter subqueue cannot be dead-lettered again (the broker answers 400)',
  },
];

describe('docs/openapi.json', () => {
  it('is what `npm run openapi` generates from the code now', () => {
    let committed = '';
    try {
      committed = readFileSync(documentFile, 'utf8');
    } catch {
      expect.fail('docs/openapi.json is missing: run `npm run openapi` and commit the result');
    }
    const fresh = renderDocument(doc);
    if (committed !== fresh) {
      expect.fail('docs/openapi.json is out of date with the code: run `npm run openapi` and commit the result');
    }
  });

  it('is written with stable key order, 2-space JSON and a trailing newline', () => {
    expect(renderDocument(buildDocument())).toBe(renderDocument(doc));
    const text = renderDocument(doc);
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.split('\n')[1]).toBe('  "openapi": "3.1.0",');
    expect(JSON.stringify(JSON.parse(text), null, 2) + '\n').toBe(text);
  });
});

describe('the route table and the router agree', () => {
  it.each(apiRoutes.map((r) => [label(r), r] as const))('%s reaches its broker operation', async (_name, r) => {
    const outcome = await send(r.method.toUpperCase(), examplePath(r.path));
    if (outcome.kind !== 'handled') throw new Error(`${label(r)}: the router answered ${String(outcome.error)}`);
    expect(outcome.calls.at(-1)).toBe(r.broker);
    expect(r.responses.map((x) => x.status)).toContain(outcome.response.status);
  });

  it.each(apiRoutes.filter((r) => r.path.includes('$')).map((r) => [label(r), r] as const))(
    '%s is the same route with `$` sent as %%24 or in another case',
    async (_name, r) => {
      for (const spelling of [examplePath(r.path).replace('$', '%24'), examplePath(r.path).replace(/\$(\w+)/, (_, s: string) => `$${s.toUpperCase()}`)]) {
        const outcome = await send(r.method.toUpperCase(), spelling);
        expect(outcome.kind, spelling).toBe('handled');
        if (outcome.kind === 'handled') expect(outcome.calls.at(-1)).toBe(r.broker);
      }
    },
  );

  it('answers "no such resource" or "method not allowed" for paths that are not documented', async () => {
    const undocumented: [string, string][] = [
      ['GET', '/'],
      ['GET', '/nothing'],
      ['POST', '/queues'],
      ['DELETE', '/topics'],
      ['PUT', '/topics/events/subscriptions'],
      ['PATCH', '/queues/orders'],
      ['POST', '/queues/orders'],
      ['GET', '/topics/events/messages'],
      ['POST', '/topics/events/messages/receive'],
      ['GET', '/queues/orders/rules'],
      ['GET', '/queues/orders/messages/42'],
      ['POST', '/queues/orders/messages/42/complete/now'],
      ['POST', '/queues/orders/messages/42/settle'],
      ['POST', '/queues/orders/messages/unknown'],
      ['GET', '/queues/orders/messages/receive'],
      ['POST', '/queues/orders/resubmit'],
      ['GET', '/queues/orders/$deadletterqueue'],
      ['GET', '/queues/orders/$deadletterqueue/authorization-rules'],
      ['GET', '/authorization-rules/sender/keys'],
      ['POST', '/authorization-rules'],
      ['GET', '/topics/events/subscriptions/audit/rules/red/extra'],
      // Sessions live on the active subqueue of queues and subscriptions only.
      ['POST', '/topics/events/sessions/accept'],
      ['POST', '/queues/orders/$deadletterqueue/sessions/accept'],
      ['GET', '/queues/orders/$deadletterqueue/sessions'],
      ['GET', '/queues/orders/sessions/accept'],
      ['DELETE', '/queues/orders/sessions/order-7/state'],
      ['GET', '/queues/orders/sessions/order-7/receive'],
      ['POST', '/queues/orders/sessions/order-7'],
      ['POST', '/queues/orders/sessions/order-7/complete'],
    ];
    for (const [method, path] of undocumented) {
      expect(documentedRoutes(method, path), `${method} ${path} is documented`).toEqual([]);
      const outcome = await send(method, path);
      expect(outcome.kind, `${method} ${path}`).toBe('unrouted');
    }
  });

  it('routes none of the local-only paths: they are absent from the deployed API', async () => {
    for (const r of localRoutes) {
      expect(r.right).toBe('Manage'); // the root key, on the namespace
      const outcome = await send(r.method.toUpperCase(), examplePath(r.path));
      expect(outcome.kind, label(r)).toBe('unrouted');
    }
  });

  it('documents every path shape the router hands to the broker, and only those', async () => {
    const prefixes = ['', 'queues/q1', 'topics/t1', 'topics/t1/subscriptions/s1'];
    for (const entity of ['queues/q1', 'topics/t1', 'topics/t1/subscriptions/s1']) {
      prefixes.push(`${entity}/$deadletterqueue`, `${entity}/$transferdeadletterqueue`);
    }
    const words = [
      'queues',
      'topics',
      'subscriptions',
      'rules',
      'messages',
      'batch',
      'scheduled',
      'receive',
      'deferred',
      'complete',
      'abandon',
      'deadletter',
      'defer',
      'renew-lock',
      'resubmit',
      'authorization-rules',
      'regenerate',
      '$deadletterqueue',
      'n1',
      '42',
      'sessions',
      'accept',
      'release',
      'state',
    ];
    // Up to three words after each prefix, as a tree: a path is extended only while some
    // template (the router's table or the document's) can still begin with it. The router hands
    // the broker only what routesAt finds in its table, and documentedRoutes matches only the
    // document's templates, so no path under a dead prefix can be handled or documented. The
    // dead prefix itself, where the router first refuses, is still sent under every method.
    const templates = [...routeTable, ...apiRoutes].map((r) => templateParts(r.path));
    const extensible = (segments: string[]) =>
      templates.some(
        (parts) =>
          parts.length > segments.length &&
          segments.every((segment, i) => {
            const part = parts[i]!;
            return 'param' in part || part.literal === (part.anyCase ? segment.toLowerCase() : segment);
          }),
      );
    const suffixesAfter = (prefix: string): string[][] => {
      const base = prefix.split('/').filter(Boolean);
      const out: string[][] = [];
      const grow = (suffix: string[]) => {
        out.push(suffix);
        if (suffix.length < 3 && extensible([...base, ...suffix])) for (const w of words) grow([...suffix, w]);
      };
      grow([]);
      return out;
    };
    const methods = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'];
    const problems: string[] = [];
    const seen = new Set<string>();
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0; // hundreds of thousands of refusals: skip their stacks
    try {
      for (const prefix of prefixes) {
        for (const suffix of suffixesAfter(prefix)) {
          const path = `/${[prefix, ...suffix].filter(Boolean).join('/')}`;
          if (seen.has(path)) continue;
          seen.add(path);
          for (const method of methods) {
            const outcome = await send(method, path);
            const documented = documentedRoutes(method, path);
            const handled = outcome.kind === 'handled';
            if (handled && documented.length === 0) {
              if (!routedButUndocumented.some((x) => x.method === method && x.pattern.test(path))) problems.push(`undocumented but routed: ${method} ${path}`);
            } else if (!handled && documented.length > 0) {
              problems.push(`documented (${documented.map(label).join(', ')}) but ${outcome.kind}: ${method} ${path}`);
            } else if (handled && !documented.some((r) => r.broker === outcome.calls.at(-1))) {
              problems.push(`${method} ${path} reaches ${outcome.calls.at(-1)}, documented as ${documented.map((r) => r.broker).join(', ')}`);
            }
          }
        }
      }
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    expect(problems.slice(0, 30)).toEqual([]);
    // The allow-list is not stale: each entry is still routed.
    const allowListSamples = ['/queues/q1/$deadletterqueue/messages/42/deadletter'];
    for (const [i, x] of routedButUndocumented.entries()) {
      expect(x.pattern.test(allowListSamples[i]!)).toBe(true);
      expect((await send(x.method, allowListSamples[i]!)).kind, x.why).toBe('handled');
    }
  }, 120_000);
});

describe('the route table', () => {
  it('documents every entry once, with its method, path and right, unless it says why not', () => {
    for (const entry of routeTable) {
      const documented = routes.filter((r) => r.operationId === entry.operationId);
      if (entry.undocumented !== undefined) {
        expect(documented, entry.operationId).toEqual([]);
        continue;
      }
      expect(
        documented.map((r) => [r.method, r.path, r.right, r.localOnly ?? false]),
        entry.operationId,
      ).toEqual([[entry.method, entry.path, entry.right, entry.localOnly ?? false]]);
    }
    expect(new Set(routeTable.map((r) => `${r.method} ${r.path}`)).size).toBe(routeTable.length);
  });

  it.each(routeTable.filter((r) => !r.localOnly).map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))(
    '%s is reachable: the router hands it to its operation, and requiredRight asks its right',
    async (_name, entry) => {
      const path = examplePath(entry.path);
      const outcome = await send(entry.method.toUpperCase(), path);
      if (outcome.kind !== 'handled') throw new Error(`${entry.operationId}: the router answered ${String(outcome.error)}`);
      expect(outcome.calls.at(-1)).toBe(entry.operation);
      expect(requiredRight(entry.method.toUpperCase(), path)).toBe(entry.right);
    },
  );
});

describe('the rights in the table agree with requiredRight', () => {
  it.each(apiRoutes.map((r) => [label(r), r] as const))('%s', (_name, r) => {
    const path = examplePath(r.path);
    expect(requiredRight(r.method.toUpperCase(), path)).toBe(r.right);
    expect(requiredRight(r.method.toUpperCase(), path.replace('$', '%24'))).toBe(r.right);
    expect(requiredRight(r.method.toLowerCase(), `https://sluice.example${path}`)).toBe(r.right);
  });

  it('states the right on every operation; local-only ones need a token too', () => {
    for (const r of routes) {
      const op = (doc.paths as Record<string, Record<string, JsonSchema>>)[r.path]![r.method]!;
      expect(RIGHTS).toContain(op['x-required-right']);
      expect(op['x-required-right']).toBe(r.right);
      expect(op.security).toBeUndefined();
      expect(op['x-local-only']).toBe(r.localOnly ? true : undefined);
    }
  });
});

describe('the document is well-formed', () => {
  it('is OpenAPI 3.1 with the package version and the SharedAccessSignature scheme', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; scripts: Record<string, string> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'Sluice', version: pkg.version });
    expect(pkg.scripts.openapi).toBe('tsx infra/openapi/generate.ts');
    const schemes = (doc.components as JsonSchema).securitySchemes as Record<string, JsonSchema>;
    expect(schemes.sharedAccessSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'Authorization' });
    expect(String(schemes.sharedAccessSignature!.description)).toContain('SharedAccessSignature');
  });

  it('resolves every $ref, and uses every component', () => {
    const refs = new Set<string>();
    const walk = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (typeof node === 'object' && node !== null) {
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref' && typeof v === 'string') refs.add(v);
          else walk(v);
        }
      }
    };
    walk(doc);
    const unresolved = [...refs].filter((r) => resolveRef(doc, r) === undefined);
    expect(unresolved).toEqual([]);
    const components = doc.components as Record<string, Record<string, unknown>>;
    const unused: string[] = [];
    for (const section of ['schemas', 'parameters', 'responses']) {
      for (const name of Object.keys(components[section]!)) if (!refs.has(`#/components/${section}/${name}`)) unused.push(`${section}/${name}`);
    }
    expect(unused).toEqual([]);
  });

  it('gives every operation an id, a success response and its path parameters', () => {
    const ids = new Set<string>();
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, JsonSchema>)) {
      const declared = ((item.parameters ?? []) as JsonSchema[]).map((p) => (resolveRef(doc, p.$ref as string) as JsonSchema).name);
      const inTemplate = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(declared, path).toEqual(inTemplate);
      for (const [method, op] of Object.entries(item)) {
        if (method === 'parameters') continue;
        operations++;
        const o = op as JsonSchema;
        expect(typeof o.operationId).toBe('string');
        expect(ids.has(o.operationId as string), `duplicate operationId ${String(o.operationId)}`).toBe(false);
        ids.add(o.operationId as string);
        const statuses = Object.keys(o.responses as JsonSchema);
        expect(statuses.length, `${method} ${path}`).toBeGreaterThan(0);
        expect(
          statuses.some((s) => s.startsWith('2')),
          `${method} ${path} has no success response`,
        ).toBe(true);
        if (!(o as { 'x-local-only'?: boolean })['x-local-only']) {
          for (const s of ['400', '401', '403', '500', '503']) expect(statuses, `${method} ${path}`).toContain(s);
        }
        if (o.requestBody) expect(statuses, `${method} ${path}: a body may be too large`).toContain('413');
      }
    }
    expect(operations).toBe(routes.length);
  });

  it('declares every tag an operation uses, and uses every tag it declares', () => {
    const declared = (doc.tags as { name: string }[]).map((t) => t.name).sort();
    expect([...new Set(routes.map((r) => r.tag))].sort()).toEqual(declared);
  });

  it('names every receive path of queues, subscriptions and their subqueues, and the local routes', () => {
    const paths = Object.keys(doc.paths as JsonSchema);
    for (const R of ['/queues/{q}', '/topics/{t}/subscriptions/{s}']) {
      for (const sub of ['', '/$deadletterqueue', '/$transferdeadletterqueue']) {
        expect(paths).toContain(`${R}${sub}/messages/receive`);
        expect(paths).toContain(`${R}${sub}/messages/{sequenceNumber}/complete`);
      }
      expect(paths).toContain(`${R}/authorization-rules/{name}`);
    }
    expect(paths).toContain('/topics/{t}/authorization-rules/{name}/regenerate');
    expect(paths).toContain('/authorization-rules/{name}');
    expect(paths).toContain('/_local/clock');
    expect(paths).toContain('/_local/jobs/{job}');
    const job = (doc.components as Record<string, Record<string, JsonSchema>>).parameters!.Job!;
    expect((job.schema as JsonSchema).enum).toEqual([...jobNames]);
  });

  it('documents name parameters as the names the code accepts', () => {
    const samples = ['a', 'orders', 'Orders.v2', 'a-b_c.d', '9', '-a', 'a-', 'a b', '$x', '', 'x'.repeat(51), 'x'.repeat(261)];
    const kinds: Record<string, 'queue' | 'topic' | 'subscription' | 'authorizationRule'> = {
      q: 'queue',
      t: 'topic',
      s: 'subscription',
      name: 'authorizationRule',
    };
    for (const [param, kind] of Object.entries(kinds)) {
      const schema = pathParameters[param]!.schema;
      for (const name of samples) {
        let ok = true;
        try {
          validateName(kind, name);
        } catch {
          ok = false;
        }
        expect(validate(schema, name, doc).length === 0, `${param} = ${JSON.stringify(name)}`).toBe(ok);
      }
    }
    expect(validate(pathParameters.r!.schema, '$Default', doc)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// Request schemas against the real parsers.
// ---------------------------------------------------------------------------------------

/** Thrown by the store stub: the request got past validation. */
class Reached extends Error {}

const reachingContext = (): BrokerContext =>
  ({
    db: { send: async () => Promise.reject(new Reached('validation passed')) },
    tableName: 'openapi-probe',
    clock: { now: () => Date.UTC(2026, 10, 20, 12), sleep: async () => {} },
    sequences: new SequenceGenerator(),
  }) as unknown as BrokerContext;

const queueTarget: ReceiveTarget = { kind: 'queue', name: 'orders', subqueue: 'active' };

const parsers: Partial<Record<RequestSchemaName, (body: unknown) => unknown>> = {
  QueueProperties: (b) => parseEntityProperties('queue', b),
  TopicProperties: (b) => parseEntityProperties('topic', b),
  SubscriptionProperties: (b) => parseEntityProperties('subscription', b),
  RuleProperties: (b) => putRule(reachingContext(), 'events', 'audit', 'red-only', parseRequest('RuleProperties', b)),
  Message: (b) => parseRequest('Message', b),
  MessageBatch: (b) => parseRequest('MessageBatch', b),
  CompleteRequest: (b) => settle(reachingContext(), queueTarget, '42', 'complete', parseRequest('CompleteRequest', b)),
  AbandonRequest: (b) => settle(reachingContext(), queueTarget, '42', 'abandon', parseRequest('AbandonRequest', b)),
  DeferRequest: (b) => settle(reachingContext(), queueTarget, '42', 'defer', parseRequest('DeferRequest', b)),
  DeadLetterRequest: (b) => settle(reachingContext(), queueTarget, '42', 'deadletter', parseRequest('DeadLetterRequest', b)),
  RenewLockRequest: (b) => renewLock(reachingContext(), queueTarget, '42', parseRequest('RenewLockRequest', b)),
  LockTokens: (b) => settleBatch(reachingContext(), queueTarget, 'complete', parseRequest('LockTokens', b)),
  DeferredRequest: (b) => receiveDeferred(reachingContext(), queueTarget, parseRequest('DeferredRequest', b)),
  ResubmitRequest: (b) => resubmit(reachingContext(), { ...queueTarget, subqueue: 'deadletter' }, parseRequest('ResubmitRequest', b), NAMESPACE_GRANT),
  AuthorizationRuleProperties: (b) => ruleStore(reachingContext()).put('/', 'sender', parseRequest('AuthorizationRuleProperties', b)),
};

/**
 * Request schemas not probed: ClockAdvance has no parser reachable from here; the others
 * are read by `parseOrThrow` on the very zod schema the document is generated from,
 * so a probe would only compare zod with itself.
 */
const unprobed: RequestSchemaName[] = [
  'ClockAdvance',
  'ReceiveOptions',
  'DeleteMessagesRequest',
  'RegenerateKeyRequest',
  'AcceptSessionRequest',
  'SessionReceiveOptions',
  'SessionLockRequest',
  'SessionStateUpdate',
  'SessionDeferredRequest',
];

async function accepts(parser: (body: unknown) => unknown, body: unknown): Promise<boolean> {
  try {
    await parser(body);
    return true;
  } catch (e) {
    if (e instanceof Reached) return true;
    if (e instanceof BrokerError && (e.code === 'BadRequest' || e.code === 'MessageSizeExceeded')) return false;
    throw e;
  }
}

const schemaOf = (name: string) => resolveRef(doc, `#/components/schemas/${name}`) as JsonSchema;
const deref = (s: JsonSchema): JsonSchema => (typeof s.$ref === 'string' ? deref(resolveRef(doc, s.$ref) as JsonSchema) : s);

/** The non-null branch of a nullable property, and whether null is allowed. */
function branches(prop: JsonSchema): { main: JsonSchema; nullable: boolean } {
  const p = deref(prop);
  if (Array.isArray(p.anyOf)) {
    const arms = (p.anyOf as JsonSchema[]).map(deref);
    const nonNull = arms.filter((a) => a.type !== 'null');
    return { main: { ...p, ...(nonNull.length === 1 ? nonNull[0] : {}), anyOf: undefined }, nullable: nonNull.length < arms.length };
  }
  if (Array.isArray(p.type)) {
    const types = (p.type as string[]).filter((t) => t !== 'null');
    return { main: { ...p, type: types.length === 1 ? types[0] : types }, nullable: types.length < (p.type as string[]).length };
  }
  return { main: p, nullable: false };
}

/** Fields probed together, so a probe of one never trips a rule about the other. */
const linked: Record<string, string> = { sessionId: 'partitionKey', partitionKey: 'sessionId' };

const ms = (duration: string) => parseDuration(duration, 'x');

/** Values the documented schema says are fine, and values it says are not. */
function probeValues(name: string, prop: JsonSchema, example: unknown): { good: unknown[]; bad: unknown[] } {
  const { main, nullable } = branches(prop);
  const good: unknown[] = [];
  const bad: unknown[] = [];
  if (nullable) good.push(null);
  const type = main.type;
  if (type === 'integer') {
    if (typeof main.minimum === 'number') {
      good.push(main.minimum);
      bad.push(main.minimum - 1);
    }
    if (typeof main.maximum === 'number') {
      good.push(main.maximum);
      bad.push(main.maximum + 1);
    }
    bad.push(1.5, '1');
  }
  if (type === 'boolean') {
    good.push(true, false);
    bad.push('yes');
  }
  if (Array.isArray(main.enum)) {
    good.push(...main.enum);
    bad.push('NotAValue');
  }
  if (type === 'string' && !main.enum) {
    bad.push(42);
    if (main.format === 'duration') {
      bad.push('soon', 'P1M');
      const min = main['x-minimum-duration'] as string | undefined;
      const max = main['x-maximum-duration'] as string | undefined;
      if (min) {
        good.push(min);
        bad.push(formatDuration(ms(min) - 1));
      }
      if (max) {
        good.push(max);
        bad.push(formatDuration(ms(max) + 1));
      }
      if (String(main.description).includes('unlimited')) good.push('P10675199DT2H48M5.4775807S');
    } else if (main.format === 'date-time') {
      good.push('2026-11-20T12:05:00.000Z', '2026-11-20T12:05:00+01:00');
      bad.push('tomorrow');
    } else if (typeof main.pattern === 'string') {
      bad.push('not a valid value!');
    } else {
      if (typeof main.maxLength === 'number') {
        good.push('x'.repeat(main.maxLength));
        bad.push('x'.repeat(main.maxLength + 1));
      }
      if (typeof main.minLength === 'number' && main.minLength > 0) bad.push('x'.repeat(main.minLength - 1));
    }
  }
  if (type === 'array' && Array.isArray(example) && example.length > 0) {
    const items = deref((main.items ?? {}) as JsonSchema);
    const enumValues = Array.isArray(items.enum) ? (items.enum as unknown[]) : undefined;
    const make = (n: number) => (enumValues && n <= enumValues.length ? enumValues.slice(0, n) : Array.from({ length: n }, () => example[0]));
    if (typeof main.minItems === 'number') {
      good.push(make(main.minItems));
      bad.push(make(main.minItems - 1));
    }
    if (typeof main.maxItems === 'number') {
      good.push(make(main.maxItems));
      bad.push(make(main.maxItems + 1));
    }
    bad.push('not an array');
  }
  if (name === 'lockToken') bad.push('not-a-lock-token');
  return { good, bad };
}

describe('request schemas agree with the parsers the broker uses', () => {
  const probed = Object.keys(parsers) as RequestSchemaName[];

  it('has an example for every request body, valid under its documented schema', () => {
    for (const r of routes) {
      if (!r.requestBody) continue;
      const example = requestExamples[r.requestBody.schema];
      expect(example, r.requestBody.schema).toBeDefined();
      expect(validate(schemaOf(r.requestBody.schema), example, doc), r.requestBody.schema).toEqual([]);
      if (!probed.includes(r.requestBody.schema)) expect(unprobed, `${r.requestBody.schema} has no parser to probe`).toContain(r.requestBody.schema);
    }
  });

  it.each(probed.map((n) => [n] as const))('%s', async (name) => {
    const parser = parsers[name]!;
    const schema = schemaOf(name);
    const props = schema.properties as Record<string, JsonSchema>;
    const example = requestExamples[name] as Record<string, unknown>;
    expect(Object.keys(example).sort(), 'the example shows every documented field').toEqual(Object.keys(props).sort());
    expect(await accepts(parser, example), 'the example is accepted').toBe(true);
    expect(schema.additionalProperties).toBe(false);
    expect(await accepts(parser, { ...example, surplusField: 1 }), 'unknown fields are refused').toBe(false);
    const required = (schema.required ?? []) as string[];
    for (const key of Object.keys(props)) {
      const without = { ...example };
      delete without[key];
      expect(await accepts(parser, without), `without ${key}`).toBe(!required.includes(key));
      const { good, bad } = probeValues(key, props[key]!, example[key]);
      const withValue = (value: unknown) => ({ ...example, [key]: value, ...(key in linked && linked[key]! in example ? { [linked[key]!]: value } : {}) });
      for (const value of good) {
        expect(validate(props[key], value, doc), `documented ${key} = ${JSON.stringify(value)?.slice(0, 60)}`).toEqual([]);
        expect(await accepts(parser, withValue(value)), `${key} = ${JSON.stringify(value)?.slice(0, 60)} is accepted`).toBe(true);
      }
      for (const value of bad) {
        expect(await accepts(parser, withValue(value)), `${key} = ${JSON.stringify(value)?.slice(0, 60)} is refused`).toBe(false);
      }
    }
  });

  it('peek query parameters: bounds and strictness as documented', async () => {
    const peekRoute = apiRoutes.find((r) => r.broker === 'peek')!;
    const maxMessages = peekRoute.query!.find((q) => q.name === 'maxMessages')!.schema;
    const ok = (query: Record<string, string>) => accepts((q) => peek(reachingContext(), queueTarget, parsePeekQuery(q as Record<string, string>)), query);
    expect(peekRoute.query!.map((q) => q.name).sort()).toEqual(['fromSequenceNumber', 'maxMessages']);
    expect(await ok({})).toBe(true);
    expect(await ok({ fromSequenceNumber: '42', maxMessages: String(maxMessages.minimum) })).toBe(true);
    expect(await ok({ maxMessages: String(maxMessages.maximum) })).toBe(true);
    expect(await ok({ maxMessages: String(Number(maxMessages.minimum) - 1) })).toBe(false);
    expect(await ok({ maxMessages: String(Number(maxMessages.maximum) + 1) })).toBe(false);
    expect(await ok({ fromSequenceNumber: 'first' })).toBe(false);
    expect(await ok({ other: '1' })).toBe(false);
  });

  it('session query parameters: listing takes top (1-100) and next only; state takes the session lock token', async () => {
    const listRoute = apiRoutes.find((r) => r.broker === 'listSessions')!;
    expect(listRoute.query!.map((q) => q.name).sort()).toEqual(['next', 'top']);
    const top = listRoute.query!.find((q) => q.name === 'top')!.schema;
    const list = (q: Record<string, string>) =>
      accepts((x) => listSessions(reachingContext(), queueTarget, parseSessionListQuery(x as Record<string, string>)), q);
    expect(await list({})).toBe(true);
    expect(await list({ top: String(top.minimum), next: 'abc' })).toBe(true);
    expect(await list({ top: String(top.maximum) })).toBe(true);
    expect(await list({ top: String(Number(top.minimum) - 1) })).toBe(false);
    expect(await list({ top: String(Number(top.maximum) + 1) })).toBe(false);
    expect(await list({ other: '1' })).toBe(false);
    const stateRoute = apiRoutes.find((r) => r.broker === 'getSessionState')!;
    expect(stateRoute.query!.map((q) => q.name)).toEqual(['sessionLockToken']);
    const state = (token: unknown) => accepts((t) => getSessionState(reachingContext(), queueTarget, 'order-7', parseSessionLockQuery(t)), token);
    expect(await state(SESSION_LOCK_TOKEN)).toBe(true);
    expect(await state(undefined)).toBe(false);
    expect(await state('not-a-token')).toBe(false);
  });

  it('list paging: top is 1-100 as documented', async () => {
    for (const [top, good] of [
      ['1', true],
      ['100', true],
      ['0', false],
      ['101', false],
      ['x', false],
    ] as const) {
      for (const alias of ['top', 'maxItems', '$top']) {
        const outcome = await send('GET', '/queues', { query: { [alias]: top } });
        expect(outcome.kind === 'handled', `${alias}=${top}`).toBe(good);
      }
    }
  });

  it('the sequence number in a path is a documented SequenceNumber', () => {
    expect(validate(pathParameters.sequenceNumber!.schema, sampleParameters.sequenceNumber, doc)).toEqual([]);
    expect(validate(pathParameters.sequenceNumber!.schema, '-1', doc)).not.toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// Response schemas: the presenters' rarer shapes. The schemas type the presenters (tsc), and
// test/api/openapi-answers.test.ts holds real answers to the document; these add the shapes
// a walk does not meet (every optional field at once, each entity kind without stats).
// ---------------------------------------------------------------------------------------

const NOW = Date.UTC(2026, 10, 20, 12);

function messageItem(overrides: Partial<MessageItem> = {}): MessageItem {
  return {
    pk: 'pk',
    sk: '00000000000000000042',
    seq: '42',
    eid: 'e1',
    entity: 'queues/orders',
    subqueue: 'active',
    partition: 0,
    messageId: 'm-1',
    body: JSON.stringify({ n: 1 }),
    enqueuedAt: NOW - 1000,
    state: 'Active',
    deliveryCount: 1,
    size: 10,
    ...overrides,
  };
}

function entityItem(kind: EntityKind): EntityItem {
  return {
    ...defaults,
    pk: 'pk',
    sk: 'sk',
    kind,
    name: 'orders',
    ...(kind === 'subscription' ? { topic: 'events' } : {}),
    eid: 'e1',
    path: 'queues/orders',
    partitions: 1,
    createdAt: NOW,
    updatedAt: NOW,
    accessedAt: NOW,
  } as EntityItem;
}

/** The presenter's output is valid under the schema and shows no field the schema does not name. */
function conforms(schemaName: ResponseSchemaName, value: unknown) {
  const plain = JSON.parse(JSON.stringify(value)) as unknown;
  expect(validate(schemaOf(schemaName), plain, doc, '$', { closed: true }), schemaName).toEqual([]);
}

describe("response schemas hold the presenters' rarer shapes", () => {
  it('ReceivedMessage: plain, locked, scheduled, with every optional field, dead-lettered', () => {
    conforms('ReceivedMessage', presentMessage(messageItem(), NOW));
    conforms('ReceivedMessage', presentMessage(messageItem({ lockToken: LOCK_TOKEN, lockedUntil: NOW + 60_000 }), NOW, { lock: true }));
    conforms('ReceivedMessage', presentMessage(messageItem({ state: 'Scheduled', enqueuedAt: NOW + 60_000 }), NOW));
    conforms(
      'ReceivedMessage',
      presentMessage(
        messageItem({
          contentType: 'application/json',
          correlationId: 'c',
          sessionId: 's',
          replyTo: 'r',
          replyToSessionId: 'rs',
          subject: 'x',
          to: 't',
          partitionKey: 's',
          props: JSON.stringify({ color: 'red', n: 3, ok: true, none: null }),
          timeToLive: 600_000,
          expiresAt: NOW + 600_000,
          state: 'Deferred',
        }),
        NOW,
      ),
    );
    conforms(
      'ReceivedMessage',
      presentMessage(
        messageItem({ subqueue: 'deadletter', deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterSource: 'queues/orders', enqueuedSequenceNumber: '7' }),
        NOW,
      ),
    );
    const keys = new Set(
      Object.keys(presentMessage(messageItem({ lockToken: LOCK_TOKEN, lockedUntil: NOW + 1, subqueue: 'deadletter', contentType: 'x' }), NOW, { lock: true })),
    );
    expect(keys.has('lockToken') && keys.has('deadLetterReason') && keys.has('enqueuedSequenceNumber')).toBe(true);
  });

  it.each([
    ['queue', 'Queue'],
    ['topic', 'Topic'],
    ['subscription', 'Subscription'],
  ] as const)('%s: properties and runtime, every field present', (kind, schemaName) => {
    const presented = presentEntity(entityItem(kind), { active: 3, deadLetter: 1, scheduled: 2, transfer: 0, deferred: 1, sizeInBytes: 1234 });
    conforms(schemaName, presented);
    expect(Object.keys(presented).sort()).toEqual([...(schemaOf(schemaName).required as string[])].sort());
    const runtime = schemaOf(kind === 'topic' ? 'TopicRuntime' : 'Runtime');
    expect(Object.keys(presented.runtime).sort()).toEqual([...(runtime.required as string[])].sort());
    conforms(schemaName, presentEntity(entityItem(kind), undefined));
  });
});
