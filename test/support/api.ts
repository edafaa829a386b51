import type { Context } from 'aws-lambda';
import { beforeAll } from 'vitest';
import { directApiEvent, eventRefused, resultRefused, withinIntegrationTimeout, type HttpAnswer } from '../../infra/local/http-events.js';
import { createApiHandler } from '../../functions/api/handler.js';
import type { Deps } from '../../lib/deps.js';
import type { Clock } from '../../lib/clock.js';
import { signToken } from '../../lib/auth/index.js';
import { testDeps } from './table.js';

/** The root key every test table gets, so tests sign requests as a client would (A1). */
export const TEST_ROOT_KEY = 'test-root-key-0123456789abcdef0123456789abcdef';

export const rootToken = (resource = 'http://localhost/') =>
  signToken({ resourceUri: resource, keyName: 'RootManageSharedAccessKey', key: TEST_ROOT_KEY, expiresAt: Math.floor(Date.now() / 1000) + 3600 });

/**
 * JSON as the tests read it (a reply's body, a command's input): left untyped on purpose, as
 * the assertions are what check its shape.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Reply {
  status: number;
  body: Json;
  headers: Record<string, string | number | boolean>;
}

const replyOf = (answer: HttpAnswer): Reply => ({
  status: answer.statusCode,
  body: JSON.parse(answer.body.toString('utf8')),
  headers: answer.headers as Reply['headers'],
});

/**
 * Calls the API handler as API Gateway would (payload 2.0), without HTTP, and through Lambda's
 * limits as AWS applies them (an event or a result past 6 MB is refused), so no test passes
 * here that would fail on AWS.
 */
export function apiClient(deps: Deps, options: { token?: string | null } = {}) {
  const handler = createApiHandler(deps, { rootKey: TEST_ROOT_KEY });
  const token = options.token === undefined ? rootToken() : options.token;
  return async (method: string, path: string, body?: unknown, rawBody?: string, headers: Record<string, string> = {}): Promise<Reply> => {
    const event = directApiEvent(method, path, {
      headers: { ...(token ? { authorization: token } : {}), ...headers },
      body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
      userAgent: 'test',
    });
    const refused = eventRefused(event, event.requestContext.requestId);
    if (refused) return replyOf(refused);
    const outcome = await withinIntegrationTimeout(handler(event, {} as Context), event.requestContext.requestId);
    if ('timedOut' in outcome) return replyOf(outcome.timedOut);
    const res = outcome.result;
    const tooLarge = resultRefused(res, event.requestContext.requestId);
    if (tooLarge) return replyOf(tooLarge);
    const text = res.body ?? '';
    const headersOut = (res.headers ?? {}) as Reply['headers'];
    // Service Bus's own protocols (lib/protocols) answer XML: kept as text.
    const xml = /xml/i.test(String(headersOut['content-type'] ?? ''));
    return { status: res.statusCode ?? 200, body: text ? (xml ? text : JSON.parse(text)) : undefined, headers: headersOut };
  };
}

/**
 * The file's API client on a table of its own, made in `beforeAll`, as most integration files
 * open. The client answers only once `beforeAll` has run.
 */
export function apiOnTable(clock: Clock, prefix: string): ReturnType<typeof apiClient> {
  let api: ReturnType<typeof apiClient> | undefined;
  beforeAll(async () => {
    api = apiClient(await testDeps(clock, prefix));
  });
  return (...args) => {
    if (!api) throw new Error(`apiOnTable(${prefix}): called before beforeAll`);
    return api(...args);
  };
}
