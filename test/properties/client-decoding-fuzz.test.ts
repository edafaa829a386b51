/**
 * The client's decoding under hostile property values. Anyone with Send can write any
 * application property over plain HTTP, `$sluice-types` (the client's type marker) included.
 * Whatever arrives, `sluice/client` receivers never throw while decoding, as the SDK never
 * does, and every message of the batch arrives: a marker that does not fit the message is
 * treated as absent and the message keeps its raw values. Innocent messages received in the
 * same batch keep their types.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient, type ServiceBusReceivedMessage } from '../../lib/client/index.js';
import { connectionStringToken } from '../support/runtime.js';
import { connectionStringFor, startRuntime } from '../client/support.js';

const MARKER = '$sluice-types';

let runtime: LocalRuntime;
let client: ServiceBusClient;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  runtime = await startRuntime('decoding-fuzz');
  client = new ServiceBusClient(connectionStringFor(runtime));
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

type Value = string | number | boolean | null;

// ---- the grammar ------------------------------------------------------------------------

/** JSON the broker takes as it is: no integer beyond 2^53 (B2 refuses it), no -0 (JSON has none). */
const carried = (v: unknown): boolean =>
  typeof v === 'number'
    ? !Object.is(v, -0) && (!Number.isInteger(v) || Number.isSafeInteger(v))
    : v !== null && typeof v === 'object'
      ? Object.values(v).every(carried)
      : true;
const names = fc.oneof(
  fc.constantFrom('when', 'n', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'dates', 'body'),
  fc.string({ minLength: 1, maxLength: 12 }),
);
const values: fc.Arbitrary<Value> = fc.oneof(
  fc.constantFrom<Value>(null, true, false, 0, -1, 1.5, '', 'not a date', '2026-11-20T12:00:00.000Z', '2026-13-45', 'AAEC/w==', '%%%', '[]', '{}', 'null'),
  fc.string({ maxLength: 20 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter(carried),
);
/** What a forger writes as the marker: the shapes the client reads, with every part wrong in turn. */
const markers: fc.Arbitrary<Value> = fc.oneof(
  fc.constantFrom<Value>(
    'null',
    '5',
    '"bytes"',
    '[]',
    '{',
    '',
    '{"dates":5}',
    '{"dates":"when"}',
    '{"dates":[5]}',
    '{"dates":[null]}',
    '{"dates":["when"]}',
    '{"dates":["missing"]}',
    '{"dates":["__proto__"]}',
    '{"dates":["constructor"]}',
    '{"body":"bytes"}',
    '{"body":"date"}',
    '{"body":5}',
    '{"body":"other"}',
    '{"body":null,"dates":null}',
    '{"__proto__":{"body":"bytes"}}',
    '{}',
  ),
  fc.json({ maxDepth: 2 }),
  fc
    .record(
      { body: fc.oneof(fc.constantFrom('bytes', 'date'), fc.jsonValue()), dates: fc.oneof(fc.array(names, { maxLength: 3 }), fc.jsonValue()) },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc.string({ maxLength: 20 }),
  fc.constantFrom<Value>(null, true, 0, 7),
);
const bodies = fc.oneof(
  fc.constantFrom('AAEC/w==', 'not base64 at all!', '', '2026-11-20T12:00:00.000Z', 'yesterday', null),
  fc.jsonValue({ maxDepth: 2 }).filter(carried),
);
const hostileMessage = fc.record({
  body: bodies,
  marker: markers,
  properties: fc.dictionary(names, values, { maxKeys: 4 }),
});

// ---- the run ----------------------------------------------------------------------------

let queues = 0;
let ids = 0;

/** Plain HTTP, as any holder of a Send key can write. */
async function sendRaw(queue: string, messages: { messageId: string; body: unknown; applicationProperties: Record<string, Value> }[]) {
  const res = await fetch(`${runtime.url}/queues/${queue}/messages/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: connectionStringToken(runtime) },
    body: JSON.stringify({ messages }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

/** Every message the receiver gets until `count` arrived (or the queue stays empty). */
async function drain(queue: string, mode: 'peekLock' | 'receiveAndDelete', count: number): Promise<ServiceBusReceivedMessage[]> {
  const receiver = client.createReceiver(queue, { receiveMode: mode });
  const got: ServiceBusReceivedMessage[] = [];
  try {
    for (let empty = 0; got.length < count && empty < 3;) {
      const batch = await receiver.receiveMessages(count - got.length, { maxWaitTimeInMs: 200 });
      if (!batch.length) empty++;
      for (const m of batch) if (mode === 'peekLock') await receiver.completeMessage(m);
      got.push(...batch);
    }
  } finally {
    await receiver.close();
  }
  return got;
}

describe('the client decodes whatever properties a sender forged', () => {
  it.each(['receiveAndDelete', 'peekLock'] as const)(
    'R1/R10: in %s, a receiver never throws and every message of the batch arrives, the innocent ones with their types',
    async (mode) => {
      await fc.assert(
        fc.asyncProperty(fc.array(hostileMessage, { minLength: 1, maxLength: 4 }), async (hostile) => {
          // prepare: an innocent message on each side of the forged ones, in one receive
          const queue = `fuzz-${mode.toLowerCase()}-${++queues}`;
          await admin.createQueue(queue);
          const when = new Date('2026-11-20T12:00:00.123Z');
          const innocent = () => ({ body: Buffer.from([0, 1, 255]), messageId: `ok-${++ids}`, applicationProperties: { when, n: 1 } });
          const before = innocent();
          const after = innocent();
          const forged = hostile.map((h) => ({
            messageId: `forged-${++ids}`,
            body: h.body,
            applicationProperties: { ...h.properties, [MARKER]: h.marker } as Record<string, Value>,
          }));
          const sender = client.createSender(queue);
          await sender.sendMessages(before);
          await sendRaw(queue, forged);
          await sender.sendMessages(after);
          await sender.close();

          // act
          const got = await drain(queue, mode, forged.length + 2);

          // assess: all arrived, once each
          expect(got.map((m) => m.messageId).sort()).toEqual([before.messageId, after.messageId, ...forged.map((f) => f.messageId)].sort());
          for (const m of got) {
            const sent = forged.find((f) => f.messageId === m.messageId);
            if (!sent) {
              // innocent: types restored
              expect(Buffer.isBuffer(m.body)).toBe(true);
              expect([...m.body]).toEqual([0, 1, 255]);
              expect(m.applicationProperties).toEqual({ when, n: 1 });
              continue;
            }
            const props = m.applicationProperties!;
            if (Object.hasOwn(props, MARKER)) {
              // the marker did not fit: everything as it was sent
              expect(props).toEqual(sent.applicationProperties);
              expect(m.body).toEqual(sent.body);
            } else {
              // the marker fit: the same properties, any Date a real one
              expect(Object.keys(props).sort()).toEqual(
                Object.keys(sent.applicationProperties)
                  .filter((k) => k !== MARKER)
                  .sort(),
              );
              for (const [k, v] of Object.entries(props)) {
                if (v instanceof Date) expect(Number.isNaN(v.getTime())).toBe(false);
                else expect(v).toEqual(sent.applicationProperties[k]);
              }
              if (m.body instanceof Date) expect(Number.isNaN(m.body.getTime())).toBe(false);
            }
          }
          await admin.deleteQueue(queue);
        }),
        {
          numRuns: 15,
          // The forgeries the issue names, first.
          examples: [
            [[{ body: 'x', marker: 'null', properties: {} }]],
            [[{ body: 'x', marker: '{"dates":5}', properties: { when: 'x' } }]],
            [[{ body: 'not base64 at all!', marker: '{"body":"bytes"}', properties: {} }]],
          ],
        },
      );
    },
    120_000,
  );
});
