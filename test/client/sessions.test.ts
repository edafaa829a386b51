/**
 * The client's session API end to end over the local runtime: acceptSession (named,
 * queue and subscription), acceptNextSession, session state in the SDK's encoding, lock
 * renewal, settlement inside a session, SessionLockLost after the lock lapses (the broker's
 * clock moved), SessionCannotBeLocked, ServiceTimeout, subscribe in order, close releasing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import {
  ServiceBusAdministrationClient,
  ServiceBusClient,
  isServiceBusError,
  type ProcessErrorArgs,
  type ServiceBusReceivedMessage,
  type ServiceBusSessionReceiver,
} from '../../lib/client/index.js';
import { BrokerTimeClock, connectionStringFor, localClock, startRuntime, until } from './support.js';

let runtime: LocalRuntime;
let client: ServiceBusClient;
let admin: ServiceBusAdministrationClient;

beforeAll(async () => {
  runtime = await startRuntime('sessions');
  client = new ServiceBusClient(connectionStringFor(runtime));
  admin = new ServiceBusAdministrationClient(connectionStringFor(runtime));
});
afterAll(async () => {
  await client?.close();
  await runtime?.stop();
});

/** The SDK error code a promise rejects with. */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return isServiceBusError(error) ? error.code : `not a ServiceBusError: ${String(error)}`;
  }
  return 'resolved';
}

const bodies = (messages: ServiceBusReceivedMessage[]) => messages.map((m) => m.body);

async function sessionQueue(name: string, options: { lockDuration?: string } = {}) {
  await admin.createQueue(name, { requiresSession: true, ...options });
  return client.createSender(name);
}

describe('N2: acceptSession / acceptNextSession', () => {
  it('N2: a named session is accepted even with no messages; a second receiver is refused with SessionCannotBeLocked until close releases it (N4)', async () => {
    await sessionQueue('named');
    const first = await client.acceptSession('named', 'empty-one');
    expect(first.sessionId).toBe('empty-one');
    expect(first.sessionLockedUntilUtc).toBeInstanceOf(Date);
    expect(first.sessionLockedUntilUtc.getTime()).toBeGreaterThan((await localClock(runtime)).getTime());
    expect(first.entityPath).toBe('named');
    expect(await codeOf(client.acceptSession('named', 'empty-one'))).toBe('SessionCannotBeLocked');
    await first.close();
    expect(first.isClosed).toBe(true);
    const second = await client.acceptSession('named', 'empty-one');
    expect(second.sessionId).toBe('empty-one');
    await second.close();
  });

  it('N2: acceptNextSession takes the session whose oldest message is oldest, skips locked ones, and times out with ServiceTimeout when none is left', async () => {
    const sender = await sessionQueue('next');
    await sender.sendMessages([
      { body: 'b1', sessionId: 'b' },
      { body: 'a1', sessionId: 'a' },
      { body: 'b2', sessionId: 'b' },
    ]);
    const first = await client.acceptNextSession('next');
    expect(first.sessionId).toBe('b');
    const second = await client.acceptNextSession('next');
    expect(second.sessionId).toBe('a');
    const quick = new ServiceBusClient(connectionStringFor(runtime), { retryOptions: { timeoutInMs: 1500 } });
    const error = await quick.acceptNextSession('next').catch((e: unknown) => e);
    expect(isServiceBusError(error) && [error.code, error.retryable]).toEqual(['ServiceTimeout', true]);
    await quick.close();
    await first.close();
    await second.close();
  }, 60_000);

  it("N4: ServiceBusClient.close() releases the sessions it accepted; afterwards its receivers throw the SDK's closed-connection error", async () => {
    await sessionQueue('client-close');
    const other = new ServiceBusClient(connectionStringFor(runtime));
    const held = await other.acceptSession('client-close', 'c');
    await other.close();
    await expect(held.receiveMessages(1, { maxWaitTimeInMs: 0 })).rejects.toThrow('The underlying AMQP connection is closed.');
    await expect(other.acceptNextSession('client-close')).rejects.toThrow('The underlying AMQP connection is closed.');
    const taken = await client.acceptSession('client-close', 'c');
    expect(taken.sessionId).toBe('c');
    await taken.close();
    await expect(taken.getSessionState()).rejects.toThrow('The receiver for session "c" in "client-close" has been closed and can no longer be used.');
  });

  it('subscriptions: both overloads reach a session-enabled subscription', async () => {
    await admin.createTopic('sess-topic');
    await admin.createSubscription('sess-topic', 'sub', { requiresSession: true });
    await client.createSender('sess-topic').sendMessages({ body: 'hello', sessionId: 'S-1' });
    const named = await client.acceptSession('sess-topic', 'sub', 'S-1');
    expect(named.entityPath).toBe('sess-topic/Subscriptions/sub');
    expect(bodies(await named.receiveMessages(5, { maxWaitTimeInMs: 2000 }))).toEqual(['hello']);
    await named.close();
    const next = await client.acceptNextSession('sess-topic', 'sub');
    expect(next.sessionId).toBe('S-1');
    const [again] = await next.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(again).toMatchObject({ body: 'hello', sessionId: 'S-1', deliveryCount: 2 });
    await next.completeMessage(again!);
    await next.close();
  });

  it('N1: a plain receiver on a session queue is refused; a session id keeps its case and characters', async () => {
    const sender = await sessionQueue('plain-refused');
    await sender.sendMessages({ body: 'x', sessionId: 'Ørder/7 ✓' });
    expect(await codeOf(client.createReceiver('plain-refused').receiveMessages(1, { maxWaitTimeInMs: 0 }))).toBe('GeneralError');
    const receiver = await client.acceptNextSession('plain-refused');
    expect(receiver.sessionId).toBe('Ørder/7 ✓');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m?.sessionId).toBe('Ørder/7 ✓');
    await receiver.completeMessage(m!);
    await receiver.close();
  });
});

describe('inside a session', () => {
  it('N3/R4: messages in sequence order; abandon brings the message back first with its delivery count up; defer + receiveDeferredMessages; dead letters read without a session (N6)', async () => {
    const sender = await sessionQueue('inside');
    await sender.sendMessages(Array.from({ length: 5 }, (_, i) => ({ body: i, sessionId: 'one' })));
    await sender.sendMessages({ body: 'other', sessionId: 'two' });
    const receiver = await client.acceptSession('inside', 'one');
    const [m0, m1] = await receiver.receiveMessages(2, { maxWaitTimeInMs: 2000 });
    expect(bodies([m0!, m1!])).toEqual([0, 1]);
    expect(m0!.lockedUntilUtc?.getTime()).toBe(receiver.sessionLockedUntilUtc.getTime());
    await receiver.completeMessage(m0!);
    await receiver.abandonMessage(m1!);
    const [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(again).toMatchObject({ body: 1, deliveryCount: 2 });
    await receiver.deferMessage(again!);
    const [m2] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(m2!.body).toBe(2);
    await receiver.deadLetterMessage(m2!, { deadLetterReason: 'bad', deadLetterErrorDescription: 'for the test' });
    const [deferred] = await receiver.receiveDeferredMessages(again!.sequenceNumber!);
    expect(deferred).toMatchObject({ body: 1, sessionId: 'one' });
    await receiver.completeMessage(deferred!);
    // Peek shows this session's messages only.
    expect(bodies(await receiver.peekMessages(10, { fromSequenceNumber: m0!.sequenceNumber! }))).toEqual([3, 4]);
    const rest = await receiver.receiveMessages(10, { maxWaitTimeInMs: 2000 });
    expect(bodies(rest)).toEqual([3, 4]);
    for (const m of rest) await receiver.completeMessage(m);
    await expect(receiver.renewMessageLock(rest[0]!)).rejects.toThrow('Renewing message lock is an invalid operation when working with sessions.');
    await receiver.close();
    const dlq = client.createReceiver('inside', { subQueueType: 'deadLetter' });
    const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(dead).toMatchObject({ body: 2, deadLetterReason: 'bad', sessionId: 'one' });
    await dlq.completeMessage(dead!);
    await dlq.close();
  });

  it('getMessageIterator and receiveAndDelete work within the session', async () => {
    const sender = await sessionQueue('iterate');
    await sender.sendMessages([1, 2, 3].map((body) => ({ body, sessionId: 'it' })));
    const receiver = await client.acceptSession('iterate', 'it', { receiveMode: 'receiveAndDelete' });
    const got: number[] = [];
    for await (const m of receiver.getMessageIterator()) {
      got.push(m.body as number);
      if (got.length === 3) break;
    }
    expect(got).toEqual([1, 2, 3]);
    await receiver.close();
    const after = await client.acceptSession('iterate', 'it');
    expect(await after.receiveMessages(1, { maxWaitTimeInMs: 0 })).toEqual([]);
    await after.close();
  });

  it('N4: renewSessionLock extends the lock by lockDuration on the broker clock', async () => {
    await sessionQueue('renew', { lockDuration: 'PT30S' });
    const receiver = await client.acceptSession('renew', 'r');
    const before = receiver.sessionLockedUntilUtc;
    await localClock(runtime, 'PT20S');
    const renewed = await receiver.renewSessionLock();
    expect(renewed.getTime() - before.getTime()).toBeGreaterThanOrEqual(20_000);
    expect(receiver.sessionLockedUntilUtc).toEqual(renewed);
    await receiver.close();
  });

  it('N4/N3: after the session lock lapses settlement fails with SessionLockLost and the receiver is done; the next holder gets the in-flight message first, delivery count up by one', async () => {
    const sender = await sessionQueue('lapse', { lockDuration: 'PT5S' });
    await sender.sendMessages([
      { body: 'first', sessionId: 'L' },
      { body: 'second', sessionId: 'L' },
    ]);
    const receiver = await client.acceptSession('lapse', 'L', { maxAutoLockRenewalDurationInMs: 0 });
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    await localClock(runtime, 'PT6S');
    expect(await codeOf(receiver.completeMessage(m!))).toBe('SessionLockLost');
    expect(receiver.isClosed).toBe(true);
    expect(await codeOf(receiver.receiveMessages(1, { maxWaitTimeInMs: 0 }))).toBe('SessionLockLost');
    await receiver.close();
    const next = await client.acceptSession('lapse', 'L');
    const [again] = await next.receiveMessages(1, { maxWaitTimeInMs: 2000 });
    expect(again).toMatchObject({ body: 'first', deliveryCount: 2 });
    await next.completeMessage(again!);
    await next.close();
  });
});

describe('session state (N5)', () => {
  it('encodes as the SDK does: JSON values round-trip, other bytes come back as a Buffer, none is null', async () => {
    await sessionQueue('state');
    const receiver = await client.acceptSession('state', 'st');
    expect(await receiver.getSessionState()).toBeNull();
    await receiver.setSessionState({ step: 2, items: ['a'] });
    expect(await receiver.getSessionState()).toEqual({ step: 2, items: ['a'] });
    await receiver.setSessionState('text');
    expect(await receiver.getSessionState()).toBe('text');
    const bytes = Buffer.from([0xff, 0x00, 0x01]);
    await receiver.setSessionState(bytes);
    const back = await receiver.getSessionState();
    expect(Buffer.isBuffer(back)).toBe(true);
    expect(Buffer.compare(back as Buffer, bytes)).toBe(0);
    // A Buffer holding JSON text decodes (tryToJsonDecode), as the SDK's does.
    await receiver.setSessionState(Buffer.from('[1,2]'));
    expect(await receiver.getSessionState()).toEqual([1, 2]);
    await receiver.close();
    // The state outlives the receiver and is listed with the session (N8).
    const later = await client.acceptSession('state', 'st');
    expect(await later.getSessionState()).toEqual([1, 2]);
    await later.close();
  });

  it('256 KB of state round-trips; one byte more is refused with MessageSizeExceeded and changes nothing', async () => {
    await sessionQueue('big-state');
    const receiver = await client.acceptSession('big-state', 'big');
    const max = Buffer.alloc(256 * 1024, 0xfe);
    await receiver.setSessionState(max);
    expect(Buffer.compare((await receiver.getSessionState()) as Buffer, max)).toBe(0);
    expect(await codeOf(receiver.setSessionState(Buffer.alloc(256 * 1024 + 1, 0xfe)))).toBe('MessageSizeExceeded');
    expect(Buffer.compare((await receiver.getSessionState()) as Buffer, max)).toBe(0);
    await receiver.close();
  });

  it('only the lock holder reads or writes state: after the lock lapses, SessionLockLost', async () => {
    await sessionQueue('state-lapse', { lockDuration: 'PT5S' });
    const receiver = await client.acceptSession('state-lapse', 's', { maxAutoLockRenewalDurationInMs: 0 });
    await receiver.setSessionState('kept');
    await localClock(runtime, 'PT6S');
    expect(await codeOf(receiver.setSessionState('lost'))).toBe('SessionLockLost');
    const next = await client.acceptSession('state-lapse', 's');
    expect(await next.getSessionState()).toBe('kept');
    await next.close();
  });
});

describe('session lock auto-renewal', () => {
  it('N4: the session lock is renewed in the background while a handler runs past two 5-second lock durations on the broker clock; the message then completes', async () => {
    // The client times its renewals on the broker's clock, which the test moves: no sleeping
    // through lock durations.
    const clock = new BrokerTimeClock(runtime.clock);
    const timed = new ServiceBusClient(connectionStringFor(runtime), { clock });
    try {
      await admin.createQueue('renewed', { requiresSession: true, lockDuration: 'PT5S' });
      await timed.createSender('renewed').sendMessages({ body: 'long job', sessionId: 'slow' });
      const receiver = await timed.acceptSession('renewed', 'slow');
      const firstLock = receiver.sessionLockedUntilUtc.getTime();
      const errors: ProcessErrorArgs[] = [];
      let handling = false;
      let done = false;
      let finish!: () => void;
      const handlerMayEnd = new Promise<void>((resolve) => (finish = resolve));
      const sub = receiver.subscribe({
        async processMessage() {
          handling = true;
          await handlerMayEnd;
          done = true;
        },
        async processError(args) {
          errors.push(args);
        },
      });
      await until(() => handling, 30_000);
      // Steps shorter than a lock duration: each makes a renewal due (half the lock before its
      // end), which lands before the next step.
      let lock = firstLock;
      for (let step = 0; step < 4; step++) {
        clock.advance(3_000);
        await until(() => receiver.sessionLockedUntilUtc.getTime() > lock, 10_000);
        lock = receiver.sessionLockedUntilUtc.getTime();
      }
      finish();
      await until(() => done, 30_000);
      await sub.close();
      expect(errors).toEqual([]);
      expect(lock).toBeGreaterThan(firstLock + 10_000);
      await receiver.close();
      const after = await timed.acceptSession('renewed', 'slow');
      expect(await after.receiveMessages(1, { maxWaitTimeInMs: 0 })).toEqual([]);
      await after.close();
    } finally {
      await timed.close();
    }
  });
});

describe('subscribe on a session receiver', () => {
  it("N3: handlers see the session's messages in order, auto-completed; close() releases the session", async () => {
    const sender = await sessionQueue('streamed');
    const sent = Array.from({ length: 20 }, (_, i) => ({ body: i, sessionId: 'ordered' }));
    await sender.sendMessages(sent);
    await sender.sendMessages({ body: 'elsewhere', sessionId: 'other' });
    const receiver: ServiceBusSessionReceiver = await client.acceptSession('streamed', 'ordered');
    const seen: unknown[] = [];
    const errors: ProcessErrorArgs[] = [];
    const sub = receiver.subscribe(
      {
        async processMessage(m) {
          seen.push(m.body);
        },
        async processError(args) {
          errors.push(args);
        },
      },
      { maxConcurrentCalls: 1 },
    );
    const end = Date.now() + 60_000;
    while (seen.length < 20 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    await sub.close();
    expect(errors).toEqual([]);
    expect(seen).toEqual(sent.map((m) => m.body));
    await receiver.close();
    // Released and drained: the next accept-next finds the other session, this one is empty.
    const other = await client.acceptNextSession('streamed');
    expect(other.sessionId).toBe('other');
    await other.close();
    const again = await client.acceptSession('streamed', 'ordered');
    expect(await again.receiveMessages(1, { maxWaitTimeInMs: 0 })).toEqual([]);
    await again.close();
  }, 90_000);

  it('a lost session lock ends the subscription with one SessionLockLost error (errorSource receive)', async () => {
    const sender = await sessionQueue('sub-lapse', { lockDuration: 'PT5S' });
    const receiver = await client.acceptSession('sub-lapse', 'x', { maxAutoLockRenewalDurationInMs: 0 });
    await localClock(runtime, 'PT6S');
    await sender.sendMessages({ body: 'late', sessionId: 'x' });
    const errors: ProcessErrorArgs[] = [];
    const sub = receiver.subscribe({ processMessage: async () => {}, processError: async (args) => void errors.push(args) });
    const end = Date.now() + 30_000;
    while (errors.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    await sub.close();
    expect(errors.map((e) => [e.errorSource, isServiceBusError(e.error) && e.error.code])).toEqual([['receive', 'SessionLockLost']]);
    await receiver.close();
  });
});
