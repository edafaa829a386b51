/**
 * The REST data plane on API Gateway's terms (HTTP API, payload 2.0): the event's bytes in,
 * the structured result out. A body API Gateway base64-encoded is decoded; an answer's bytes
 * go back base64 with `isBase64Encoded`, text as it is. A failure the broker names answers
 * as Service Bus's REST plane does (`restStatusOf`), with its XML `Error` body.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { BrokerError } from '../../errors.js';
import type { Grant } from '../../auth/authorize.js';
import type { Broker } from '../../broker/index.js';
import { restStatusOf, serveRest } from './serve.js';

const xmlText = (text: string) => text.replace(/[<>&]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&amp;'));

/** Service Bus's error body: `<Error><Code>status</Code><Detail>…</Detail></Error>`. */
export function restErrorAnswer(error: BrokerError, requestId: string): APIGatewayProxyStructuredResultV2 {
  const status = restStatusOf(error);
  return {
    statusCode: status,
    headers: {
      'content-type': 'application/xml; charset=utf-8',
      ...(error.code === 'Throttled' ? { 'retry-after': String(error.options.retryAfterSeconds ?? 1) } : {}),
    },
    body: `<Error><Code>${status}</Code><Detail>${xmlText(error.message)} TrackingId:${xmlText(requestId)}</Detail></Error>`,
  };
}

export async function restEventAnswer(broker: Broker, event: APIGatewayProxyEventV2, grant: Grant): Promise<APIGatewayProxyStructuredResultV2> {
  const raw = event.body ?? '';
  const body = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  try {
    const answer = await serveRest(broker, {
      method: event.requestContext.http.method,
      path: event.rawPath,
      query: { ...(event.queryStringParameters ?? {}) },
      headers: event.headers ?? {},
      body,
      grant,
      domainName: event.requestContext.domainName,
    });
    if (Buffer.isBuffer(answer.body)) {
      return { statusCode: answer.status, headers: answer.headers, body: answer.body.toString('base64'), isBase64Encoded: true };
    }
    return { statusCode: answer.status, headers: answer.headers, body: answer.body };
  } catch (e) {
    if (e instanceof BrokerError) return restErrorAnswer(e, event.requestContext.requestId);
    throw e;
  }
}
