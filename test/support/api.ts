import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createApiHandler } from '../../functions/api/handler.js';
import type { Deps } from '../../lib/deps.js';

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: Record<string, string | number | boolean>;
}

/** Calls the API handler as API Gateway would (payload 2.0), without HTTP. */
export function apiClient(deps: Deps) {
  const handler = createApiHandler(deps);
  return async (method: string, path: string, body?: unknown, rawBody?: string): Promise<Reply> => {
    const [rawPath, rawQueryString = ''] = path.split('?');
    const query = Object.fromEntries(new URLSearchParams(rawQueryString));
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: rawPath!,
      rawQueryString,
      headers: { 'content-type': 'application/json' },
      queryStringParameters: Object.keys(query).length ? query : undefined,
      requestContext: { requestId: randomUUID(), http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' } },
      body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    const res = await handler(event, {} as Context);
    const text = res.body ?? '';
    return { status: res.statusCode ?? 200, body: text ? JSON.parse(text) : undefined, headers: (res.headers ?? {}) as Reply['headers'] };
  };
}
