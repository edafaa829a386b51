/** CLI: how the command line names entities and properties, without a broker. */
import { describe, expect, it } from 'vitest';
import { parseTarget } from '../../infra/cli/entity.js';
import { exitCodes } from '../../infra/cli/errors.js';
import { audienceOf } from '../../infra/cli/http.js';
import { propertiesFrom } from '../../infra/cli/properties.js';
import { resolveConnectionString } from '../../infra/cli/connection.js';

describe('CLI parsing', () => {
  it.each([
    ['orders', { kind: undefined, name: 'orders', deadLetter: false }],
    ['queues/orders', { kind: 'queue', name: 'orders', deadLetter: false }],
    ['topics/events', { kind: 'topic', name: 'events', deadLetter: false }],
    ['events/subscriptions/audit', { kind: 'subscription', topic: 'events', name: 'audit', deadLetter: false }],
    ['topics/events/subscriptions/audit', { kind: 'subscription', topic: 'events', name: 'audit', deadLetter: false }],
    ['events/audit', { kind: 'subscription', topic: 'events', name: 'audit', deadLetter: false }],
    ['orders/$deadletterqueue', { kind: undefined, name: 'orders', deadLetter: true }],
    ['events/audit/%24DeadLetterQueue', { kind: 'subscription', topic: 'events', name: 'audit', deadLetter: true }],
  ])('names %s', (text, expected) => {
    expect(parseTarget(text)).toEqual(expected);
  });

  it.each(['', 'a b', 'a/b/c', '-x', 'a//b'])('refuses %j with exit 2', (text) => {
    expect(() => parseTarget(text)).toThrow(expect.objectContaining({ exitCode: exitCodes.usage }));
  });

  it('B2 property flags are typed and checked with the broker schema, naming the flag', () => {
    expect(
      propertiesFrom('queue', { lockDuration: 'PT30S', maxDeliveryCount: '4', requiresSession: true, defaultMessageTimeToLive: 'none', forwardTo: '123' }),
    ).toEqual({
      lockDuration: 'PT30S',
      maxDeliveryCount: 4,
      requiresSession: true,
      defaultMessageTimeToLive: null,
      forwardTo: '123',
    });
    expect(propertiesFrom('subscription', { deadLetteringOnMessageExpiration: 'false' })).toEqual({ deadLetteringOnMessageExpiration: false });
    expect(() => propertiesFrom('queue', { maxDeliveryCount: 'many' })).toThrow(/^--max-delivery-count: /);
    expect(() => propertiesFrom('topic', { status: 'ReceiveDisabled' })).toThrow(/^--status: /);
  });

  it('A2 signs each request for the entity it is about, so an entity-scoped key works', () => {
    expect(audienceOf('/queues')).toBe('');
    expect(audienceOf('/queues/orders/messages/receive')).toBe('queues/orders');
    expect(audienceOf('/queues/orders/$deadletterqueue/resubmit')).toBe('queues/orders');
    expect(audienceOf('/topics/t/subscriptions/s/rules/r')).toBe('topics/t/subscriptions/s');
    expect(audienceOf('/topics/t/messages')).toBe('topics/t');
  });

  it('the connection string: option, then environment, then the data folder', () => {
    const cs = (key: string) => `Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=n;SharedAccessKey=${key}`;
    expect(resolveConnectionString({ connectionString: cs('o') }, { SLUICE_CONNECTION_STRING: cs('e') }, '/').parsed.sharedAccessKey).toBe('o');
    expect(resolveConnectionString({}, { SLUICE_CONNECTION_STRING: cs('e') }, '/').source).toBe('environment');
    expect(() => resolveConnectionString({ data: '/nonexistent-sluice' }, {}, '/')).toThrow(expect.objectContaining({ exitCode: exitCodes.unauthorized }));
    expect(() => resolveConnectionString({ connectionString: 'Endpoint=x' }, {}, '/')).toThrow(expect.objectContaining({ exitCode: exitCodes.usage }));
  });
});
