import { describe, expect, it } from 'vitest';
import { httpStatusOf } from '../../lib/api/errors.js';
import { BrokerError } from '../../lib/errors.js';
import { brokerPropertiesOf, messageFromRequest, messagesFromBatch, restMessageOf, bodyFromBytes } from '../../lib/protocols/rest/messages.js';
import { formatPropertyValue, parsePropertyValue, parseRfc1123 } from '../../lib/protocols/rest/properties.js';
import type { ReceivedMessage } from '../../lib/messages/item.js';
import { fromWire, storedBodyKind } from '../../lib/client/message.js';

const send = (headers: Record<string, string>, body: string | Uint8Array = 'hello') =>
  messageFromRequest({ headers, body: typeof body === 'string' ? new TextEncoder().encode(body) : body });

function refusal(fn: () => unknown): BrokerError {
  try {
    fn();
  } catch (e) {
    if (e instanceof BrokerError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

const received = (more: Partial<ReceivedMessage> = {}): ReceivedMessage => ({
  body: { a: 1 },
  messageId: 'm1',
  applicationProperties: {},
  sequenceNumber: '9007199254740993',
  enqueuedTime: '2026-11-25T10:00:00.000Z',
  expiresAt: null,
  timeToLive: null,
  deliveryCount: 1,
  state: 'Active',
  ...more,
});

describe('REST data plane: application properties typed by their spelling', () => {
  it('reads quoted strings, RFC 1123 dates, integers, doubles and booleans', () => {
    expect(parsePropertyValue('"High"', 'p')).toEqual({ value: 'High' });
    expect(parsePropertyValue('"12345,ABC"', 'p')).toEqual({ value: '12345,ABC' });
    expect(parsePropertyValue('"Sun, 06 Nov 1994 08:49:37 GMT"', 'p')).toEqual({ value: '1994-11-06T08:49:37.000Z', dated: true });
    // azure-common's formatter appends +0000.
    expect(parsePropertyValue('"Tue, 02 Jan 2024 03:04:05 GMT+0000"', 'p')).toEqual({ value: '2024-01-02T03:04:05.000Z', dated: true });
    expect(parsePropertyValue('42', 'p')).toEqual({ value: 42 });
    expect(parsePropertyValue('-1.5e3', 'p')).toEqual({ value: -1500 });
    expect(parsePropertyValue('true', 'p')).toEqual({ value: true });
    expect(parsePropertyValue('false', 'p')).toEqual({ value: false });
  });

  it('B2: refuses anything else with a 400 naming the header', () => {
    for (const bad of ['High', 'True', '', 'NaN', '1e400', '9007199254740993', '"unterminated']) {
      const e = refusal(() => send({ priority: bad }));
      expect(httpStatusOf(e.code)).toBe(400);
      expect(e.options.field).toBe('priority');
    }
  });

  it('a date that does not exist, or with the wrong weekday, is a string', () => {
    expect(parseRfc1123('Mon, 06 Nov 1994 08:49:37 GMT')).toBeUndefined();
    expect(parseRfc1123('Thu, 31 Feb 2024 08:49:37 GMT')).toBeUndefined();
    expect(parsePropertyValue('"Mon, 06 Nov 1994 08:49:37 GMT"', 'p')).toEqual({ value: 'Mon, 06 Nov 1994 08:49:37 GMT' });
  });

  it('writes them back with the same spelling', () => {
    expect(formatPropertyValue('High', false)).toBe('"High"');
    expect(formatPropertyValue(42, false)).toBe('42');
    expect(formatPropertyValue(1.5, false)).toBe('1.5');
    expect(formatPropertyValue(true, false)).toBe('true');
    expect(formatPropertyValue('1994-11-06T08:49:37.000Z', true)).toBe('"Sun, 06 Nov 1994 08:49:37 GMT"');
    expect(formatPropertyValue(null, false)).toBeUndefined();
    expect(formatPropertyValue('\u4e2d', false)).toBeUndefined();
  });
});

describe('REST data plane: a send as a Sluice message', () => {
  it('maps BrokerProperties, Content-Type and property headers; gateway and HTTP headers are no properties', () => {
    const wire = send({
      'content-type': 'text/plain',
      brokerproperties: JSON.stringify({
        MessageId: 'id-1',
        CorrelationId: 'c',
        SessionId: 's',
        PartitionKey: 's',
        Label: 'M1',
        ReplyTo: 'r',
        To: 't',
        ReplyToSessionId: 'rs',
        TimeToLive: 90.5,
        ScheduledEnqueueTimeUtc: 'Sun, 06 Nov 2044 08:49:37 GMT',
        SequenceNumber: 12,
        ForcePersistence: true,
      }),
      priority: '"High"',
      count: '3',
      when: '"Sun, 06 Nov 1994 08:49:37 GMT"',
      'user-agent': 'curl/8',
      'x-amzn-trace-id': 'Root=1',
      'x-forwarded-for': '1.2.3.4',
      'x-ms-retrypolicy': 'NoRetry',
      authorization: 'SharedAccessSignature x',
    });
    expect(wire).toEqual({
      body: 'hello',
      messageId: 'id-1',
      correlationId: 'c',
      sessionId: 's',
      partitionKey: 's',
      subject: 'M1',
      replyTo: 'r',
      to: 't',
      replyToSessionId: 'rs',
      timeToLive: 'PT90.5S',
      scheduledEnqueueTime: '2044-11-06T08:49:37.000Z',
      contentType: 'text/plain',
      applicationProperties: {
        priority: 'High',
        count: 3,
        when: '1994-11-06T08:49:37.000Z',
        '$sluice-types': JSON.stringify({ body: 'text', dates: ['when'] }),
      },
    });
  });

  it('keeps property names as Sluice-Property-Names spells them', () => {
    const wire = send({ priority: '"High"', customer: '"12345,ABC"', 'sluice-property-names': '"Priority, Customer"' });
    expect(Object.keys(wire.applicationProperties!)).toEqual(['Priority', 'Customer', '$sluice-types']);
    expect(refusal(() => send({ priority: '"High"', 'sluice-property-names': 'Priority, Colour' })).options.field).toBe('Sluice-Property-Names');
  });

  it('B2: refuses bad BrokerProperties naming the field, and the reserved property', () => {
    expect(refusal(() => send({ brokerproperties: '{' })).options.field).toBe('BrokerProperties');
    expect(refusal(() => send({ brokerproperties: '{"MessageId": 5}' })).options.field).toBe('BrokerProperties.MessageId');
    expect(refusal(() => send({ brokerproperties: '{"TimeToLive": -1}' })).options.field).toBe('BrokerProperties.TimeToLive');
    expect(refusal(() => send({ brokerproperties: '{"ScheduledEnqueueTimeUtc": "tomorrow"}' })).options.field).toBe('BrokerProperties.ScheduledEnqueueTimeUtc');
    expect(refusal(() => send({ brokerproperties: '{"SessionId": "a", "PartitionKey": "b"}' })).options.field).toBe('BrokerProperties.PartitionKey');
    expect(refusal(() => send({ brokerproperties: JSON.stringify({ MessageId: 'x'.repeat(129) }) })).options.field).toBe('BrokerProperties.MessageId');
    expect(refusal(() => send({ '$sluice-types': '"{}"' })).options.field).toBe('$sluice-types');
  });

  it('TimeSpan.MaxValue seconds means no time to live of its own', () => {
    expect(send({ brokerproperties: '{"TimeToLive": 922337203685.47754}' }).timeToLive).toBeUndefined();
  });

  it('stores JSON written as Sluice writes it as the value, other text marked text, other bytes as base64', () => {
    expect(bodyFromBytes(new TextEncoder().encode('{"a":1}'))).toEqual({ body: { a: 1 } });
    expect(bodyFromBytes(new TextEncoder().encode('"hi"'))).toEqual({ body: 'hi' });
    expect(bodyFromBytes(new TextEncoder().encode('{ "a": 1 }'))).toEqual({ body: '{ "a": 1 }', kind: 'text' });
    expect(bodyFromBytes(new TextEncoder().encode('12345678901234567890'))).toEqual({ body: '12345678901234567890', kind: 'text' });
    expect(bodyFromBytes(new Uint8Array([0xff, 0, 1]))).toEqual({ body: '/wAB', kind: 'bytes' });
  });
});

describe('REST data plane: batches', () => {
  it('reads Body, BrokerProperties and UserProperties, names keeping their case', () => {
    const [a, b] = messagesFromBatch(
      JSON.stringify([
        { Body: 'This is the first message', UserProperties: { Color: 'Red', N: 2 }, BrokerProperties: { Label: 'M1', TimeToLiveTimeSpan: '0.00:00:40' } },
        { Body: '{"a":1}', BrokerProperties: { MessageId: 'two' } },
      ]),
    );
    expect(a).toEqual({
      body: 'This is the first message',
      subject: 'M1',
      timeToLive: 'PT40S',
      applicationProperties: { Color: 'Red', N: 2, '$sluice-types': '{"body":"text"}' },
    });
    expect(b).toEqual({ body: { a: 1 }, messageId: 'two' });
  });

  it('B2/S4: refuses a bad entry naming it', () => {
    expect(refusal(() => messagesFromBatch('{}')).options.field).toBe('body');
    expect(refusal(() => messagesFromBatch('[{"Body": "a"}, {"Body": 1}]')).options.field).toBe('[1].Body');
    expect(refusal(() => messagesFromBatch('[{"Body": "a", "UserProperties": {"x": {}}}]')).options.field).toBe('[0].UserProperties.x');
    expect(refusal(() => messagesFromBatch('[{"Body": "a", "BrokerProperties": {"TimeToLiveTimeSpan": "forever"}}]')).options.field).toBe(
      '[0].BrokerProperties.TimeToLiveTimeSpan',
    );
  });
});

describe('REST data plane: a received message as the answer', () => {
  it('writes BrokerProperties with exact bare sequence numbers and RFC 1123 times', () => {
    const text = brokerPropertiesOf(
      received({
        subject: 'M1',
        lockToken: '00000000-0000-0001-aaaa-bbbbbbbbbbbb',
        lockedUntil: '2026-11-25T10:01:00.000Z',
        timeToLive: 'PT10S',
        deadLetterSource: 'q',
        enqueuedSequenceNumber: '12',
      }),
    );
    expect(text).toContain('"SequenceNumber":9007199254740993');
    expect(text).toContain('"EnqueuedSequenceNumber":12');
    expect(JSON.parse(text)).toMatchObject({
      DeliveryCount: 1,
      EnqueuedTimeUtc: 'Wed, 25 Nov 2026 10:00:00 GMT',
      Label: 'M1',
      LockToken: '00000000-0000-0001-aaaa-bbbbbbbbbbbb',
      LockedUntilUtc: 'Wed, 25 Nov 2026 10:01:00 GMT',
      MessageId: 'm1',
      State: 'Active',
      TimeToLive: 10,
      DeadLetterSource: 'q',
    });
    expect(brokerPropertiesOf(received())).toContain('"TimeToLive":922337203685.47754');
    // Headers carry ISO-8859-1 only: the JSON escapes the rest.
    expect(brokerPropertiesOf(received({ subject: 'f\u00fcr \u4e2d' }))).toContain('"Label":"f\\u00fcr \\u4e2d"');
  });

  it('gives the bytes back as sent, and the properties as typed headers without the reserved one', () => {
    const bytes = restMessageOf(received({ body: '/wAB', applicationProperties: { '$sluice-types': '{"body":"bytes"}' } }));
    expect(bytes.body).toEqual(Buffer.from([0xff, 0, 1]));
    expect(bytes.headers['Content-Type']).toBe('application/octet-stream');
    const text = restMessageOf(
      received({
        body: '{ "a": 1 }',
        contentType: 'application/json',
        applicationProperties: {
          Priority: 'High',
          n: 3,
          ok: true,
          when: '1994-11-06T08:49:37.000Z',
          nil: null,
          Location: 'x',
          '$sluice-types': '{"body":"text","dates":["when"]}',
        },
        deadLetterReason: 'why',
      }),
      'https://h/q/messages/1/t',
    );
    expect(text.body).toBe('{ "a": 1 }');
    expect(text.headers).toMatchObject({
      'Content-Type': 'application/json',
      Location: 'https://h/q/messages/1/t',
      Priority: '"High"',
      n: '3',
      ok: 'true',
      when: '"Sun, 06 Nov 1994 08:49:37 GMT"',
      DeadLetterReason: '"why"',
    });
    expect(text.headers['$sluice-types']).toBeUndefined();
    expect(text.skipped).toEqual(['nil', 'Location']);
    expect(restMessageOf(received()).body).toBe('{"a":1}');
  });
});

describe('sluice/client reads a REST-sent text body as the SDK reads a data body', () => {
  const wire = (body: string) => ({ body, messageId: 'm', sequenceNumber: '1', applicationProperties: { '$sluice-types': '{"body":"text"}', p: 1 } });
  it('JSON text gives its value, other text its bytes; the marker stays hidden', () => {
    const json = fromWire(wire('{ "a": 1 }'));
    expect(json.body).toEqual({ a: 1 });
    expect(json.applicationProperties).toEqual({ p: 1 });
    expect(json._rawAmqpMessage.bodyType).toBe('data');
    expect(storedBodyKind(json)).toBe('text');
    const text = fromWire(wire('hello'));
    expect(Buffer.isBuffer(text.body)).toBe(true);
    expect(Buffer.from(text.body as Uint8Array).toString()).toBe('hello');
  });
});
