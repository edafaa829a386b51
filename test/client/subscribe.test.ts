/**
 * Subscribe: concurrency and exactly-once over 1,000 messages, lock auto-renewal past
 * three lock durations (on the broker's clock, moved), autoComplete/abandon, processError sources, close() draining.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { ServiceBusAdministrationClient, ServiceBusClient, type ProcessErrorArgs, type ServiceBusReceivedMessage } from '../../lib/client/index.js';
import { BrokerTimeClock, connectionStringFor, localClock, startRuntime, until } from './support.js';

let runtime: LocalRuntime;
let client: ServiceBusClient;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  runtime = await startRuntime('subscribe');
  client = new ServiceBusClient(connectionStringFor(runtime));
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

describe('subscribe', () => {
  it('8 concurrent calls over 1,000 messages: each processed exactly once, never more than 8 at a time', async () => {
    await admin.createQueue('many');
    const sender = client.createSender('many');
    const all = Array.from({ length: 1000 }, (_, i) => ({ body: i }));
    for (let i = 0; i < all.length; i += 100) await sender.sendMessages(all.slice(i, i + 100));
    const seen = new Map<number, number>();
    let active = 0;
    let peak = 0;
    const errors: ProcessErrorArgs[] = [];
    const receiver = client.createReceiver('many');
    const sub = receiver.subscribe(
      {
        async processMessage(m) {
          active++;
          peak = Math.max(peak, active);
          seen.set(m.body as number, (seen.get(m.body as number) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 5));
          active--;
        },
        async processError(args) {
          errors.push(args);
        },
      },
      { maxConcurrentCalls: 8 },
    );
    await until(() => seen.size === 1000, 240_000);
    await sub.close();
    expect(errors).toEqual([]);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(peak).toBeLessThanOrEqual(8);
    expect(peak).toBeGreaterThan(1);
    // All completed: nothing comes back.
    expect(await client.createReceiver('many').peekMessages(10)).toEqual([]);
  }, 300_000);

  it('N4: renews the lock while the handler runs: held past three 5-second lock durations on the broker clock, then completed once', async () => {
    // The client times its renewals on the broker's clock, which the test moves: no sleeping
    // through lock durations.
    const clock = new BrokerTimeClock(runtime.clock);
    const timed = new ServiceBusClient(connectionStringFor(runtime), { clock });
    try {
      await admin.createQueue('slow', { lockDuration: 'PT5S' });
      await timed.createSender('slow').sendMessages({ body: 'long job' });
      const errors: ProcessErrorArgs[] = [];
      let message: ServiceBusReceivedMessage | undefined;
      let finish!: () => void;
      const handlerMayEnd = new Promise<void>((resolve) => (finish = resolve));
      let done = false;
      const sub = timed.createReceiver('slow').subscribe({
        async processMessage(m) {
          message = m;
          await handlerMayEnd;
          done = true;
        },
        async processError(args) {
          errors.push(args);
        },
      });
      await until(() => message !== undefined, 30_000);
      const firstLock = message!.lockedUntilUtc!.getTime();
      // Steps shorter than a lock duration: each makes a renewal due (a third of the lock
      // before its end), which lands before the next step.
      let lock = firstLock;
      for (let step = 0; step < 4; step++) {
        clock.advance(4_000);
        await until(() => message!.lockedUntilUtc!.getTime() > lock, 10_000);
        lock = message!.lockedUntilUtc!.getTime();
      }
      finish();
      await until(() => done, 30_000);
      await sub.close();
      expect(errors).toEqual([]);
      expect(lock).toBeGreaterThan(firstLock + 15_000);
      expect(message!.deliveryCount).toBe(1);
      // Completed under its renewed lock: the queue is empty, nothing was redelivered.
      expect(await client.createReceiver('slow').peekMessages(5)).toEqual([]);
    } finally {
      await timed.close();
    }
  });

  it('with maxAutoLockRenewalDurationInMs 0 the lock lapses and completing reports errorSource "complete"', async () => {
    await admin.createQueue('norenew', { lockDuration: 'PT5S' });
    await client.createSender('norenew').sendMessages({ body: 'x' });
    const errors: ProcessErrorArgs[] = [];
    const receiver = client.createReceiver('norenew', { maxAutoLockRenewalDurationInMs: 0 });
    let handled = 0;
    const sub = receiver.subscribe({
      async processMessage() {
        handled++;
        await localClock(runtime, 'PT6S');
      },
      async processError(args) {
        errors.push(args);
      },
    });
    await until(() => errors.length > 0, 20_000);
    await sub.close();
    expect(handled).toBeGreaterThanOrEqual(1);
    expect(errors[0]).toMatchObject({
      errorSource: 'complete',
      entityPath: 'norenew',
      fullyQualifiedNamespace: new URL(runtime.url).host,
      error: { code: 'MessageLockLost' },
    });
  });

  it('a throwing handler: processError with processMessageCallback, the message abandoned; a missing entity: errorSource receive', async () => {
    await admin.createQueue('throws');
    await client.createSender('throws').sendMessages({ body: 'bad' });
    const errors: ProcessErrorArgs[] = [];
    const deliveries: number[] = [];
    const receiver = client.createReceiver('throws');
    const sub = receiver.subscribe({
      async processMessage(m) {
        deliveries.push(m.deliveryCount!);
        if (deliveries.length === 1) throw new Error('handler failed');
      },
      async processError(args) {
        errors.push(args);
      },
    });
    await until(() => deliveries.length === 2);
    await sub.close();
    expect(deliveries).toEqual([1, 2]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      errorSource: 'processMessageCallback',
      entityPath: 'throws',
      identifier: receiver.identifier,
      error: { message: 'handler failed' },
    });

    const missing: ProcessErrorArgs[] = [];
    const sub2 = client.createReceiver('no-such-queue').subscribe({ processMessage: async () => {}, processError: async (a) => void missing.push(a) });
    await until(() => missing.length > 0);
    await sub2.close();
    expect(missing[0]).toMatchObject({ errorSource: 'receive', entityPath: 'no-such-queue', error: { code: 'MessagingEntityNotFound' } });
  });

  it('autoCompleteMessages false leaves settling to the handler', async () => {
    await admin.createQueue('manual');
    await client.createSender('manual').sendMessages({ body: 'x' });
    const receiver = client.createReceiver('manual');
    let settled = false;
    const sub = receiver.subscribe(
      {
        async processMessage(m) {
          await receiver.deadLetterMessage(m, { deadLetterReason: 'manual', deadLetterErrorDescription: 'by the handler' });
          settled = true;
        },
        async processError() {},
      },
      { autoCompleteMessages: false },
    );
    await until(() => settled);
    await sub.close();
    const [dead] = await client.createReceiver('manual', { subQueueType: 'deadLetter' }).peekMessages(1);
    expect(dead).toMatchObject({ deadLetterReason: 'manual' });
  });

  it('close() waits for running handlers, takes nothing new, and gives back at once what an open poll brings', async () => {
    await admin.createQueue('drain');
    const sender = client.createSender('drain');
    await sender.sendMessages({ body: 'first' });
    let finished = false;
    let started = 0;
    const receiver = client.createReceiver('drain');
    const sub = receiver.subscribe({
      async processMessage() {
        started++;
        await new Promise((r) => setTimeout(r, 1000));
        finished = true;
      },
      async processError() {},
    });
    await until(() => started === 1);
    // The subscriber's next poll is open (it waits on the broker); close, then a message arrives.
    await new Promise((r) => setTimeout(r, 200));
    const closing = sub.close();
    await sender.sendMessages({ body: 'late' });
    await closing;
    expect(finished).toBe(true);
    expect(started).toBe(1);
    // 'first' was completed by the drain; 'late' is free to take right away (not locked for a lock duration).
    const [late] = await client.createReceiver('drain').receiveMessages(1, { maxWaitTimeInMs: 3000 });
    expect(late?.body).toBe('late');
  });
});
