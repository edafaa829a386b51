import { describe, expect, it } from 'vitest';
import {
  apiGatewayTime,
  errorAnswer,
  isTextContentType,
  lambdaContext,
  parseQueryString,
  toApiGatewayEvent,
  toHttpAnswer,
  type RawRequest,
} from '../../infra/local/http-events.js';

function request(overrides: Partial<RawRequest> = {}): RawRequest {
  return {
    method: 'POST',
    url: '/queues/orders/%24deadletterqueue/messages/receive?maxMessages=5&tag=a&tag=b&q=a%20b+c',
    httpVersion: '1.1',
    rawHeaders: [
      'Host',
      '127.0.0.1:4280',
      'Content-Type',
      'application/json; charset=utf-8',
      'User-Agent',
      'test-agent/1.0',
      'X-Custom',
      'one',
      'x-custom',
      'two',
      'Cookie',
      'a=1; b=2',
      'cookie',
      'c=3',
    ],
    remoteAddress: '::ffff:127.0.0.1',
    body: Buffer.from('{"mode":"peekLock"}'),
    ...overrides,
  };
}

describe('request -> API Gateway payload 2.0 event', () => {
  it('builds the event Lambda would get', () => {
    // prepare
    const now = Date.UTC(2026, 10, 20, 12, 3, 58, 123);
    // act
    const event = toApiGatewayEvent(request(), { requestId: 'req-1', now, localPort: 4280 });
    // assess
    expect(event).toEqual({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/queues/orders/%24deadletterqueue/messages/receive',
      rawQueryString: 'maxMessages=5&tag=a&tag=b&q=a%20b+c',
      cookies: ['a=1', 'b=2', 'c=3'],
      headers: {
        host: '127.0.0.1:4280',
        'content-type': 'application/json; charset=utf-8',
        'user-agent': 'test-agent/1.0',
        'x-custom': 'one,two',
        'x-forwarded-for': '127.0.0.1',
        'x-forwarded-proto': 'http',
        'x-forwarded-port': '4280',
      },
      queryStringParameters: { maxMessages: '5', tag: 'a,b', q: 'a b+c' },
      requestContext: {
        accountId: 'local',
        apiId: 'local',
        domainName: '127.0.0.1:4280',
        domainPrefix: '127',
        http: {
          method: 'POST',
          path: '/queues/orders/%24deadletterqueue/messages/receive',
          protocol: 'HTTP/1.1',
          sourceIp: '127.0.0.1',
          userAgent: 'test-agent/1.0',
        },
        requestId: 'req-1',
        routeKey: '$default',
        stage: '$default',
        time: '20/Nov/2026:12:03:58 +0000',
        timeEpoch: now,
      },
      body: '{"mode":"peekLock"}',
      isBase64Encoded: false,
    });
  });

  it('leaves out what the request does not have', () => {
    const event = toApiGatewayEvent(request({ method: 'get', url: '/queues', rawHeaders: ['Host', 'localhost:1'], body: Buffer.alloc(0) }));
    expect(event.rawQueryString).toBe('');
    expect(event.requestContext.http.method).toBe('GET');
    expect(event).not.toHaveProperty('body');
    expect(event).not.toHaveProperty('cookies');
    expect(event).not.toHaveProperty('queryStringParameters');
    expect(event.isBase64Encoded).toBe(false);
    expect(event.requestContext.http.userAgent).toBe('');
    expect(event.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('base64-encodes binary bodies and text that is not UTF-8', () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    const binary = toApiGatewayEvent(request({ rawHeaders: ['Content-Type', 'application/octet-stream'], body: bytes }));
    expect(binary).toMatchObject({ body: bytes.toString('base64'), isBase64Encoded: true });

    const badUtf8 = toApiGatewayEvent(request({ rawHeaders: ['Content-Type', 'application/json'], body: bytes }));
    expect(badUtf8).toMatchObject({ body: bytes.toString('base64'), isBase64Encoded: true });

    const text = toApiGatewayEvent(request({ rawHeaders: ['Content-Type', 'text/plain'], body: Buffer.from('héllo') }));
    expect(text).toMatchObject({ body: 'héllo', isBase64Encoded: false });
  });

  it('splits the request target without decoding it', () => {
    const event = toApiGatewayEvent(request({ url: '/topics/t/subscriptions/s%2Fx?a=%ZZ&b&=c' }));
    expect(event.rawPath).toBe('/topics/t/subscriptions/s%2Fx');
    expect(event.requestContext.http.path).toBe('/topics/t/subscriptions/s%2Fx');
    expect(event.queryStringParameters).toEqual({ a: '%ZZ', b: '', '': 'c' });
  });

  it('knows which content types are text', () => {
    for (const t of [
      undefined,
      '',
      'application/json',
      'application/json; charset=utf-8',
      'text/html',
      'application/problem+json',
      'application/xml',
      'application/x-www-form-urlencoded',
    ]) {
      expect(isTextContentType(t), String(t)).toBe(true);
    }
    for (const t of ['application/octet-stream', 'image/png', 'application/pdf']) {
      expect(isTextContentType(t), t).toBe(false);
    }
  });

  it('parses query strings as API Gateway does', () => {
    expect(parseQueryString('')).toBeUndefined();
    expect(parseQueryString('a=1&a=2&b=%24x')).toEqual({ a: '1,2', b: '$x' });
  });

  it('formats requestContext.time', () => {
    expect(apiGatewayTime(Date.UTC(2020, 2, 12, 19, 3, 58))).toBe('12/Mar/2020:19:03:58 +0000');
  });
});

describe('handler result -> HTTP answer', () => {
  it('writes a structured result', () => {
    const answer = toHttpAnswer(
      {
        statusCode: 201,
        headers: { 'Content-Type': 'application/json', 'X-Count': 3, 'X-Ok': true },
        cookies: ['a=1; Path=/', 'b=2'],
        body: '{"ok":true}',
      },
      'req-1',
    );
    expect(answer.statusCode).toBe(201);
    expect(answer.headers).toEqual({
      'content-type': 'application/json',
      'x-count': '3',
      'x-ok': 'true',
      'set-cookie': ['a=1; Path=/', 'b=2'],
      'apigw-requestid': 'req-1',
    });
    expect(answer.body.toString()).toBe('{"ok":true}');
  });

  it('decodes base64 bodies and merges multi-value headers', () => {
    const bytes = Buffer.from([1, 2, 3, 250]);
    const answer = toHttpAnswer(
      {
        statusCode: 200,
        headers: { vary: 'a' },
        multiValueHeaders: { Vary: ['b', 'c'] },
        body: bytes.toString('base64'),
        isBase64Encoded: true,
      },
      'r',
    );
    expect(answer.body.equals(bytes)).toBe(true);
    expect(answer.headers.vary).toEqual(['a', 'b', 'c']);
  });

  it('answers an empty body for 204', () => {
    const answer = toHttpAnswer({ statusCode: 204 }, 'r');
    expect(answer.statusCode).toBe(204);
    expect(answer.body.length).toBe(0);
  });

  it('infers 200 JSON for a result without statusCode, as payload 2.0 does', () => {
    const answer = toHttpAnswer({ hello: 'world' }, 'r');
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(JSON.parse(answer.body.toString())).toEqual({ hello: 'world' });
  });

  it('builds error answers in the error shape', () => {
    const answer = errorAnswer(413, 'MessageSizeExceeded', 'too big', 'req-9');
    expect(answer.statusCode).toBe(413);
    expect(JSON.parse(answer.body.toString())).toEqual({
      error: { code: 'MessageSizeExceeded', message: 'too big', retryable: false, requestId: 'req-9' },
    });
  });
});

describe('Lambda context', () => {
  it('counts down the remaining time', () => {
    const context = lambdaContext('sluice-api', { requestId: 'abc', timeoutMs: 1000 });
    expect(context).toMatchObject({ functionName: 'sluice-api', awsRequestId: 'abc', functionVersion: '$LATEST' });
    const remaining = context.getRemainingTimeInMillis();
    expect(remaining).toBeGreaterThan(900);
    expect(remaining).toBeLessThanOrEqual(1000);
  });
});
