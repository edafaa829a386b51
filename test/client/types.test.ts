/**
 * Type-level test: sluice/client against the real @azure/service-bus 7.x types. `tsc
 * --noEmit -p .` (part of `npm test`) fails when a name, a parameter or a return type of this
 * surface drifts: every SDK member must exist in ours, ours must accept every argument list
 * the SDK accepts, and what ours returns must be usable where the SDK's result is.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type * as Sdk from '@azure/service-bus';
import type * as Ours from '../../lib/client/index.js';
import * as sluice from '../../lib/client/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fn = (...args: any[]) => any;
/** Members of the SDK's type missing from ours (must be never). */
type Missing<TSdk, TOurs> = Exclude<keyof TSdk, keyof TOurs>;
/** For each method: SDK arguments are accepted by ours, and our result fits the SDK's. */
type MethodsCompatible<TSdk, TOurs, K extends keyof TSdk & keyof TOurs> = {
  [M in K]: TSdk[M] extends Fn
    ? TOurs[M] extends Fn
      ? Parameters<TSdk[M]> extends Parameters<TOurs[M]>
        ? Result<ReturnType<TOurs[M]>> extends Result<ReturnType<TSdk[M]>>
          ? true
          : ['return type drifts', M]
        : ['parameters drift', M]
      : ['not a method', M]
    : true;
};
/**
 * What a program uses of a result: the value, or a paged list's elements. The admin client's
 * `_response` (core-client's raw HTTP response) is left out: Sluice gives a smaller one.
 */
type Result<R> =
  Awaited<R> extends { byPage: unknown; next(): Promise<IteratorResult<infer E>> }
    ? Omit<E, '_response'>
    : Awaited<R> extends object
      ? Omit<Awaited<R>, '_response'>
      : Awaited<R>;
type AllTrue<T> = { [K in keyof T]: T[K] extends true ? true : T[K] };
const ok = <T>(_: T) => true;

type SenderMethods = 'sendMessages' | 'createMessageBatch' | 'scheduleMessages' | 'cancelScheduledMessages' | 'close';
type ReceiverMethods =
  | 'subscribe'
  | 'receiveMessages'
  | 'receiveDeferredMessages'
  | 'peekMessages'
  | 'close'
  | 'completeMessage'
  | 'abandonMessage'
  | 'deferMessage'
  | 'deadLetterMessage'
  | 'renewMessageLock';
type AdminMethods = Exclude<keyof Sdk.ServiceBusAdministrationClient, 'sendRequest' | 'pipeline' | 'sendOperationRequest'>;

describe('sluice/client has the @azure/service-bus surface', () => {
  it('names: every SDK member of the covered types exists', () => {
    expectTypeOf<Missing<Sdk.ServiceBusSender, Ours.ServiceBusSender>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusReceiver, Ours.ServiceBusReceiver>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusClient, sluice.ServiceBusClient>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<AdminMethods extends infer K ? Record<K & string, 1> : never, sluice.ServiceBusAdministrationClient>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusMessage, Ours.ServiceBusMessage>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusReceivedMessage, Ours.ServiceBusReceivedMessage>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusMessageBatch, Ours.ServiceBusMessageBatch>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ProcessErrorArgs, Ours.ProcessErrorArgs>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.SubscribeOptions, Ours.SubscribeOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusReceiverOptions, Ours.ServiceBusReceiverOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusClientOptions, Ours.ServiceBusClientOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.RetryOptions, Ours.RetryOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.QueueProperties, Ours.QueueProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.QueueRuntimeProperties, Ours.QueueRuntimeProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.TopicProperties, Ours.TopicProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.TopicRuntimeProperties, Ours.TopicRuntimeProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.SubscriptionProperties, Ours.SubscriptionProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.SubscriptionRuntimeProperties, Ours.SubscriptionRuntimeProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.RuleProperties, Ours.RuleProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.NamespaceProperties, Ours.NamespaceProperties>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.CreateQueueOptions, Ours.CreateQueueOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.CreateTopicOptions, Ours.CreateTopicOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.CreateSubscriptionOptions, Ours.CreateSubscriptionOptions>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusConnectionStringProperties, Ours.ServiceBusConnectionStringProperties>>().toEqualTypeOf<never>();
    // Sessions (N1-N8).
    expectTypeOf<Missing<Sdk.ServiceBusSessionReceiver, Ours.ServiceBusSessionReceiver>>().toEqualTypeOf<never>();
    expectTypeOf<Missing<Sdk.ServiceBusSessionReceiverOptions, Ours.ServiceBusSessionReceiverOptions>>().toEqualTypeOf<never>();
  });

  it('sessions: acceptSession / acceptNextSession (both overloads) and the session receiver match the SDK', () => {
    type SessionMethods = ReceiverMethods | 'renewSessionLock' | 'getSessionState' | 'setSessionState' | 'getMessageIterator';
    expectTypeOf<AllTrue<MethodsCompatible<Sdk.ServiceBusSessionReceiver, Ours.ServiceBusSessionReceiver, SessionMethods>>>().toEqualTypeOf<
      Record<SessionMethods, true>
    >();
    type ClientSessionMethods = 'acceptSession' | 'acceptNextSession';
    expectTypeOf<AllTrue<MethodsCompatible<Sdk.ServiceBusClient, sluice.ServiceBusClient, ClientSessionMethods>>>().toEqualTypeOf<
      Record<ClientSessionMethods, true>
    >();
    // Each overload on its own (Parameters<> sees only the last one).
    const c = null as unknown as sluice.ServiceBusClient;
    const o: Sdk.ServiceBusSessionReceiverOptions = { receiveMode: 'peekLock', maxAutoLockRenewalDurationInMs: 0 };
    expectTypeOf(() => c.acceptSession('q', 's', o)).returns.resolves.toMatchTypeOf<Sdk.ServiceBusSessionReceiver>();
    expectTypeOf(() => c.acceptSession('t', 'sub', 's', o)).returns.resolves.toMatchTypeOf<Sdk.ServiceBusSessionReceiver>();
    expectTypeOf(() => c.acceptNextSession('q', o)).returns.resolves.toMatchTypeOf<Sdk.ServiceBusSessionReceiver>();
    expectTypeOf(() => c.acceptNextSession('t', 'sub', o)).returns.resolves.toMatchTypeOf<Sdk.ServiceBusSessionReceiver>();
    expectTypeOf<Ours.ServiceBusSessionReceiver['sessionLockedUntilUtc']>().toEqualTypeOf<Sdk.ServiceBusSessionReceiver['sessionLockedUntilUtc']>();
    expectTypeOf<Ours.ServiceBusSessionReceiver['sessionId']>().toEqualTypeOf<Sdk.ServiceBusSessionReceiver['sessionId']>();
    expect(ok(0)).toBe(true);
  });

  it('signatures: SDK arguments fit ours and our results fit the SDK (methods, options, values)', () => {
    expectTypeOf<AllTrue<MethodsCompatible<Sdk.ServiceBusSender, Ours.ServiceBusSender, SenderMethods>>>().toEqualTypeOf<Record<SenderMethods, true>>();
    expectTypeOf<AllTrue<MethodsCompatible<Sdk.ServiceBusReceiver, Ours.ServiceBusReceiver, ReceiverMethods>>>().toEqualTypeOf<Record<ReceiverMethods, true>>();
    type ClientMethods = 'createSender' | 'createReceiver' | 'close';
    expectTypeOf<AllTrue<MethodsCompatible<Sdk.ServiceBusClient, sluice.ServiceBusClient, ClientMethods>>>().toEqualTypeOf<Record<ClientMethods, true>>();
    type AdminChecked = Exclude<AdminMethods, 'createRule' | 'getNamespaceProperties'> & keyof sluice.ServiceBusAdministrationClient;
    expectTypeOf<AllTrue<MethodsCompatible<Sdk.ServiceBusAdministrationClient, sluice.ServiceBusAdministrationClient, AdminChecked>>>().toEqualTypeOf<
      Record<AdminChecked, true>
    >();
    // Values a program hands over or gets back.
    expectTypeOf<Sdk.ServiceBusMessage>().toMatchTypeOf<Ours.ServiceBusMessage>();
    expectTypeOf<Ours.ProcessErrorArgs>().toEqualTypeOf<
      Sdk.ProcessErrorArgs extends infer T ? { [K in keyof T]: K extends 'error' ? Error | Ours.ServiceBusError : T[K] } : never
    >();
    expectTypeOf<Ours.ServiceBusErrorCode>().toEqualTypeOf<Sdk.ServiceBusErrorCode>();
    expectTypeOf<Ours.ServiceBusReceivedMessage['sequenceNumber']>().toEqualTypeOf<Sdk.ServiceBusReceivedMessage['sequenceNumber']>();
    expectTypeOf<Ours.ServiceBusReceivedMessage['enqueuedSequenceNumber']>().toEqualTypeOf<Sdk.ServiceBusReceivedMessage['enqueuedSequenceNumber']>();
    expectTypeOf<Omit<Ours.RetryOptions, 'mode'>>().toEqualTypeOf<Omit<Sdk.RetryOptions, 'mode'>>();
    expectTypeOf<`${Sdk.RetryMode}`>().toEqualTypeOf<`${Ours.RetryMode}`>();
    expectTypeOf<Ours.QueueRuntimeProperties>().toEqualTypeOf<Sdk.QueueRuntimeProperties>();
    expectTypeOf<Ours.SubscriptionRuntimeProperties>().toEqualTypeOf<Sdk.SubscriptionRuntimeProperties>();
    expectTypeOf<Ours.TopicRuntimeProperties>().toEqualTypeOf<Sdk.TopicRuntimeProperties>();
    expectTypeOf<Ours.NamespaceProperties>().toEqualTypeOf<Sdk.NamespaceProperties>();
    expectTypeOf<Ours.QueueProperties>().toMatchTypeOf<Sdk.QueueProperties>();
    expectTypeOf<Ours.SubscribeOptions>().toMatchTypeOf<Sdk.SubscribeOptions>();
    expectTypeOf<typeof sluice.isServiceBusError>().parameters.toEqualTypeOf<[unknown]>();
    expectTypeOf<Parameters<typeof Sdk.delay>>().toMatchTypeOf<Parameters<typeof sluice.delay>>();
    expectTypeOf<typeof sluice.RetryMode.Exponential>().toMatchTypeOf<number>();
    expect(ok(0)).toBe(true);
  });

  it('runtime names exist with the SDK values', () => {
    expect(sluice.RetryMode).toMatchObject({ Exponential: 0, Fixed: 1 });
    expect(new sluice.ServiceBusError('x', 'ServiceBusy')).toMatchObject({ code: 'ServiceBusy', retryable: true, name: 'ServiceBusError' });
    expect(sluice.isServiceBusError(new sluice.ServiceBusError('x', 'GeneralError'))).toBe(true);
    expect(new sluice.AzureNamedKeyCredential('n', 'k')).toMatchObject({ name: 'n', key: 'k' });
    expect(new sluice.AzureSASCredential('s').signature).toBe('s');
  });
});
