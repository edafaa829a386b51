/**
 * The router reads the route table; these are the answers that a plain "matched under
 * another method: 400 method, else 404" reading of the table would change, pinned as the API
 * has always given them.
 */
import { describe, expect, it } from 'vitest';
import { route } from '../../functions/api/router.js';
import { httpStatusOf } from '../../lib/api/errors.js';
import { BrokerError } from '../../lib/errors.js';

function recordingBroker() {
  const calls: string[] = [];
  const broker = new Proxy(
    {},
    {
      get: (_t, prop) =>
        prop === 'then'
          ? undefined
          : async (...args: unknown[]) => {
              calls.push(`${String(prop)} ${JSON.stringify(args.slice(0, 3))}`);
              return {};
            },
    },
  );
  return { broker: broker as never, calls };
}

async function answer(method: string, path: string): Promise<string> {
  const { broker, calls } = recordingBroker();
  try {
    const res = await route(broker, { method, path, query: {}, body: undefined });
    return `${res.status} ${calls.join('; ')}`;
  } catch (e) {
    if (!(e instanceof BrokerError)) throw e;
    return `${httpStatusOf(e.code)} ${e.code} ${e.options.field ?? ''}`.trim();
  }
}

describe('the router keeps its answers to requests no route takes', () => {
  it.each([
    ['GET', '/topics/t/messages/batch', '404 EntityNotFound'], // a topic holds only sends
    ['GET', '/topics/t/messages', '404 EntityNotFound'],
    ['GET', '/queues/q/messages/42', '400 BadRequest method'], // under a queue's messages, all but peek, purge and notifications are POSTs
    ['PUT', '/queues/q/messages/42/complete', '400 BadRequest method'],
    ['POST', '/queues/q/messages/scheduled/42', '404 EntityNotFound'],
    ['POST', '/queues/q/messages/notifications', '400 BadRequest method'],
    ['PATCH', '/queues/q', '400 BadRequest method'],
    ['GET', '/queues/q/$deadletterqueue', '404 EntityNotFound'],
    ['GET', '/topics/t/$deadletterqueue/messages', '404 EntityNotFound'], // D8: a topic has no subqueues
    ['POST', '/queues/q/%24deadletterqueue/messages', '400 BadRequest path'], // D5, said rather than 404
    ['POST', '/topics/t/subscriptions/s/messages/batch', '400 BadRequest path'],
    ['DELETE', '/topics/t/subscriptions/s/messages/scheduled/1', '400 BadRequest path'],
    ['GET', '/queues/bad!/nothing', '400 BadRequest queueName'], // names are validated as the path is parsed
    ['GET', '/topics/t/subscriptions/bad!/messages', '400 BadRequest subscriptionName'],
    ['GET', '/queues/a%ZZ/messages', '400 BadRequest path segment 2'],
  ])('%s %s answers %s', async (method, path, expected) => {
    expect(await answer(method, path)).toBe(expected);
  });

  it('says what is wrong with a malformed sequence number (400 naming it, not 404), before reading the body', async () => {
    expect(await answer('POST', '/queues/q/messages/abc/complete')).toBe('400 BadRequest sequenceNumber');
    expect(await answer('DELETE', '/queues/q/messages/scheduled/abc')).toBe('400 BadRequest sequenceNumber');
  });

  it('reads `$deadletterqueue` sent as %24 or in any case as the same subqueue', async () => {
    for (const spelling of ['$deadletterqueue', '%24deadletterqueue', '$DeadLetterQueue']) {
      expect(await answer('POST', `/queues/q/${spelling}/messages/receive`)).toBe(
        '200 receive [{"kind":"queue","name":"q","subqueue":"deadletter"},{"mode":"peekLock","maxMessages":1,"maxWaitTime":0}]',
      );
    }
  });
});
