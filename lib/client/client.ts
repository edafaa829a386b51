/** ServiceBusClient: the entry point, as in @azure/service-bus, over HTTP. */
import type { CorrelationRuleFilter, OperationOptions, OperationOptionsBase, RuleProperties, SqlRuleAction, SqlRuleFilter } from './admin-types.js';
import { ServiceBusAdministrationClient } from './admin.js';
import { systemClientClock, type ClientClock } from './clock.js';
import { baseUrlOf, parseServiceBusConnectionString, requestEndpoint, sdkEntityName, subscriptionOf } from './connection-string.js';
import { newIdentifier, throwIfConnectionClosed, type ClientContext } from './context.js';
import { AzureNamedKeyCredential, AzureSASCredential, isNamedKeyCredential, isSASCredential } from './credentials.js';
import type { PagedAsyncIterableIterator } from './paging.js';
import { Receiver, type ServiceBusReceiver, type ServiceBusReceiverOptions } from './receiver.js';
import type { RetryOptions } from './retry.js';
import { Sender, type ServiceBusSender, type ServiceBusSenderOptions } from './sender.js';
import { acceptSession, type ServiceBusSessionReceiver, type ServiceBusSessionReceiverOptions } from './session-receiver.js';
import { HttpTransport } from './transport.js';
import { defaultWaiter, type Waiter } from './waiting.js';

/**
 * Options of a ServiceBusClient: its name, its retries, and (Sluice's own) the `fetch` it calls with.
 * The SDK's AMQP options (`webSocketOptions`, `userAgentOptions`) are accepted and ignored: Sluice
 * speaks HTTP.
 */
export interface ServiceBusClientOptions {
  /** A name for this client in logs and errors; a random unique one when not given. */
  identifier?: string;
  /**
   * An endpoint to call instead of the connection string's (a proxy in front of the deployment), e.g.
   * `https://my.proxy.example:8443/`: every request goes there.
   */
  customEndpointAddress?: string;
  /** How calls that fail with a retryable error are retried (see `RetryOptions` for the defaults). */
  retryOptions?: RetryOptions;
  /** Accepted for compatibility with @azure/service-bus and ignored: Sluice has no AMQP connection to tunnel. */
  webSocketOptions?: unknown;
  /** Accepted for compatibility with @azure/service-bus and ignored. */
  userAgentOptions?: unknown;
  /**
   * Sluice's own: the `fetch` every call goes through (a proxy, a polyfill, a test's fault injector).
   * The platform's `fetch` when not given.
   */
  fetch?: typeof fetch;
  /**
   * Sluice's own: the clock automatic lock renewal reads and waits on, against the broker's lock
   * ends (a test's clock that moves with the broker's). The system clock when not given.
   */
  clock?: ClientClock;
}

/**
 * Manages the rules of one subscription: create, delete, list, as @azure/service-bus's
 * `ServiceBusRuleManager`. Where Sluice differs: rule calls need a key with Manage rights (Service
 * Bus lets Listen do this), since they go through the same management routes as the
 * administration client.
 */
export interface ServiceBusRuleManager {
  /**
   * Adds a rule to the current subscription to filter the messages reaching from topic to the subscription.
   *
   * @param ruleName - the name of the rule
   * @param filter - the filter expression that the rule evaluates.
   * @param options - The options that can be used to abort, trace and control other configurations on the request.
   */
  createRule(ruleName: string, filter: SqlRuleFilter | CorrelationRuleFilter, options?: OperationOptionsBase): Promise<void>;
  /**
   * Adds a rule to the current subscription to filter the messages reaching from topic to the subscription.
   *
   * @param ruleName - the name of the rule
   * @param filter - the filter expression that the rule evaluates.
   * @param ruleAction - The SQL like expression that can be executed on the message should the associated filter apply.
   * @param options - The options that can be used to abort, trace and control other configurations on the request.
   */
  createRule(ruleName: string, filter: SqlRuleFilter | CorrelationRuleFilter, ruleAction?: SqlRuleAction, options?: OperationOptionsBase): Promise<void>;
  /**
   * Deletes a rule.
   *
   * @param ruleName - the name of the rule
   * @param options - Options bag to pass an abort signal.
   */
  deleteRule(ruleName: string, options?: OperationOptionsBase): Promise<void>;
  /**
   * Returns an async iterable iterator to list all the rules
   * under the specified subscription.
   *
   * .byPage() returns an async iterable iterator to list the rules in pages.
   *
   * @param options - An abort signal; page size and continuation go to `byPage()`.
   * @returns An asyncIterableIterator that supports paging.
   */
  listRules(options?: OperationOptions): PagedAsyncIterableIterator<RuleProperties>;
}

/**
 * The entry point of `sluice/client`, as @azure/service-bus's `ServiceBusClient`: it creates senders,
 * receivers, session receivers and rule managers for the entities of one Sluice deployment. Every
 * call is an HTTPS request signed with the connection string's key (a SAS token, as Service Bus
 * uses); there is no connection to open, so creating the client and its senders and receivers
 * does no I/O.
 *
 * Where Sluice differs from @azure/service-bus: the endpoint is an HTTP(S) URL; waiting receivers
 * use availability hints over a WebSocket instead of an AMQP link; Azure AD credentials are not
 * supported. docs/migrating-from-azure-service-bus.md lists the rest.
 */
export class ServiceBusClient {
  /** The host of the deployment's endpoint (e.g. `abc123.execute-api.eu-west-1.amazonaws.com`, or `127.0.0.1:4280`). */
  fullyQualifiedNamespace: string;
  /** The name of this client in logs and errors: `options.identifier`, or a random unique one. */
  identifier: string;
  private readonly ctx: ClientContext;
  private acceptWaiter: Waiter | undefined;
  private readonly admin: ServiceBusAdministrationClient;
  private readonly open = new Set<{ close(): Promise<void> }>();
  /** From the start of close(): nothing new is handed out (ctx.connectionClosed follows once all is closed). */
  private closing = false;
  /** The connection string's EntityPath, if any: the one entity this client may name (as in the SDK). */
  private readonly entityPath: string | undefined;

  /**
   * Creates a client from a connection string, as `npm start` writes it and `sluice` prints it:
   * `Endpoint=https://...;SharedAccessKeyName=...;SharedAccessKey=...` (or `SharedAccessSignature=...`).
   * Where @azure/service-bus opens AMQP to an `sb://` host, Sluice calls HTTPS: an `sb://host/`
   * endpoint means `https://host`, and an `http://` or `https://` endpoint (with a path, such as an
   * API Gateway stage) is used as given. An `EntityPath` limits the client to that one entity, as in
   * the SDK.
   *
   * @param connectionString - The connection string of the namespace, or of one entity.
   * @param options - The client's name, retries and `fetch`.
   * @throws TypeError when the connection string lacks an endpoint or a key.
   */
  constructor(connectionString: string, options?: ServiceBusClientOptions);
  /**
   * Creates a client from the deployment's endpoint and a credential.
   *
   * @param fullyQualifiedNamespace - The deployment's host (called over HTTPS) or its URL, such as
   * `http://127.0.0.1:4280` for `npm start`.
   * @param credential - An `AzureNamedKeyCredential` (the key's name and the key) or an
   * `AzureSASCredential` (a signed token; update it before it expires). Azure AD `TokenCredential`s are
   * not supported.
   * @param options - The client's name, retries and `fetch`.
   */
  constructor(fullyQualifiedNamespace: string, credential: AzureNamedKeyCredential | AzureSASCredential, options?: ServiceBusClientOptions);
  constructor(
    connectionStringOrNamespace: string,
    credentialOrOptions?: AzureNamedKeyCredential | AzureSASCredential | ServiceBusClientOptions,
    maybeOptions?: ServiceBusClientOptions,
  ) {
    let endpoint: string;
    let credential: AzureNamedKeyCredential | AzureSASCredential;
    let options: ServiceBusClientOptions;
    let entityPath: string | undefined;
    if (isNamedKeyCredential(credentialOrOptions) || isSASCredential(credentialOrOptions)) {
      endpoint = connectionStringOrNamespace;
      credential = credentialOrOptions;
      options = maybeOptions ?? {};
    } else {
      const cs = parseServiceBusConnectionString(connectionStringOrNamespace);
      endpoint = requestEndpoint(cs);
      credential = cs.sharedAccessSignature
        ? new AzureSASCredential(cs.sharedAccessSignature)
        : new AzureNamedKeyCredential(cs.sharedAccessKeyName!, cs.sharedAccessKey!);
      options = (credentialOrOptions as ServiceBusClientOptions | undefined) ?? {};
      entityPath = cs.entityPath;
    }
    this.entityPath = entityPath;
    if (options.customEndpointAddress) endpoint = options.customEndpointAddress;
    const transportOptions = { ...(options.retryOptions ? { retryOptions: options.retryOptions } : {}), ...(options.fetch ? { fetch: options.fetch } : {}) };
    const transport = new HttpTransport(endpoint, credential, transportOptions);
    this.fullyQualifiedNamespace = new URL(baseUrlOf(endpoint)).host;
    this.identifier = options.identifier ?? newIdentifier('ServiceBusClient');
    this.ctx = {
      transport,
      fullyQualifiedNamespace: this.fullyQualifiedNamespace,
      sendKinds: new Map(),
      connectionClosed: false,
      acceptWaiter: () => (this.acceptWaiter ??= defaultWaiter(transport)),
      clock: options.clock ?? systemClientClock,
    };
    this.admin = new ServiceBusAdministrationClient(endpoint, credential, transportOptions);
  }

  /**
   * Creates a receiver for a queue. `receiveMode` is `peekLock` (the default: settle each message with `completeMessage`,
   * `abandonMessage`, `deferMessage` or `deadLetterMessage`) or `receiveAndDelete`; `subQueueType:
   * 'deadLetter'` reads the dead-letter subqueue. Makes no call to the broker.
   *
   * @param queueName - The queue to receive from.
   * @param options - Receive mode, subqueue, lock renewal, body parsing and a name for the receiver.
   * @returns A receiver that receives, peeks and settles the queue's messages.
   * @throws Error when the client is closed, or its connection string's `EntityPath` names another entity.
   * @throws TypeError when `receiveMode` is neither `peekLock` nor `receiveAndDelete`.
   */
  createReceiver(queueName: string, options?: ServiceBusReceiverOptions): ServiceBusReceiver;
  /**
   * Creates a receiver for a topic's subscription. `receiveMode` is `peekLock` (the default: settle each message with `completeMessage`,
   * `abandonMessage`, `deferMessage` or `deadLetterMessage`) or `receiveAndDelete`; `subQueueType:
   * 'deadLetter'` reads the dead-letter subqueue. Makes no call to the broker.
   *
   * @param topicName - The topic.
   * @param subscriptionName - The subscription of `topicName` to receive from.
   * @param options - Receive mode, subqueue, lock renewal, body parsing and a name for the receiver.
   * @returns A receiver that receives, peeks and settles the subscription's messages.
   * @throws Error when the client is closed, or its connection string's `EntityPath` names another entity.
   * @throws TypeError when `receiveMode` is neither `peekLock` nor `receiveAndDelete`.
   */
  createReceiver(topicName: string, subscriptionName: string, options?: ServiceBusReceiverOptions): ServiceBusReceiver;
  createReceiver(name: string, subscriptionOrOptions?: string | ServiceBusReceiverOptions, maybeOptions?: ServiceBusReceiverOptions): ServiceBusReceiver {
    this.validateEntityPath(name, typeof subscriptionOrOptions === 'string' ? subscriptionOrOptions : undefined);
    this.throwIfClosed();
    // The SDK addresses a subscription as `t/Subscriptions/s` too (the form an EntityPath has).
    const named = typeof subscriptionOrOptions === 'string' ? { topic: name, subscription: subscriptionOrOptions } : subscriptionOf(name);
    const receiver = named
      ? new Receiver(this.ctx, named, typeof subscriptionOrOptions === 'string' ? maybeOptions : subscriptionOrOptions)
      : new Receiver(this.ctx, { queue: name }, subscriptionOrOptions as ServiceBusReceiverOptions | undefined);
    this.open.add(receiver);
    return receiver;
  }

  /**
   * Creates a sender for a queue or topic. Makes no call to the broker: a missing entity shows on the
   * first send.
   *
   * @param queueOrTopicName - The queue or topic to send to.
   * @param options - `identifier`: a name for the sender in logs and errors (random when not given).
   * @returns A sender.
   * @throws Error when the client is closed, or its connection string's `EntityPath` names another entity.
   */
  createSender(queueOrTopicName: string, options?: ServiceBusSenderOptions): ServiceBusSender {
    this.validateEntityPath(queueOrTopicName);
    this.throwIfClosed();
    const sender = new Sender(this.ctx, queueOrTopicName, options);
    this.open.add(sender);
    return sender;
  }

  /**
   * Creates a rule manager for one subscription. Makes no call to the broker.
   *
   * @param topicName - The topic.
   * @param subscriptionName - The subscription of `topicName` whose rules to manage.
   * @returns A rule manager scoped to that subscription (its calls need Manage rights in Sluice).
   * @throws Error when the client is closed, or its connection string's `EntityPath` names another entity.
   */
  createRuleManager(topicName: string, subscriptionName: string): ServiceBusRuleManager {
    this.validateEntityPath(topicName);
    this.throwIfClosed();
    const admin = this.admin;
    const ctx = this.ctx;
    return {
      async createRule(
        ruleName: string,
        filter: SqlRuleFilter | CorrelationRuleFilter,
        actionOrOptions?: SqlRuleAction | OperationOptionsBase,
        maybeOptions?: OperationOptionsBase,
      ) {
        const isAction = actionOrOptions !== undefined && ('sqlExpression' in actionOrOptions || 'sqlParameters' in actionOrOptions);
        throwIfConnectionClosed(ctx);
        const options = (isAction ? maybeOptions : actionOrOptions) as OperationOptionsBase | undefined;
        await admin.createRule(topicName, subscriptionName, ruleName, filter, isAction ? (actionOrOptions as SqlRuleAction) : {}, options);
      },
      async deleteRule(ruleName: string, options?: OperationOptionsBase) {
        throwIfConnectionClosed(ctx);
        await admin.deleteRule(topicName, subscriptionName, ruleName, options);
      },
      listRules(options?: OperationOptions) {
        throwIfConnectionClosed(ctx);
        return admin.listRules(topicName, subscriptionName, options) as PagedAsyncIterableIterator<RuleProperties>;
      },
    } as ServiceBusRuleManager;
  }

  /**
   * Locks the session `sessionId` of a queue that requires sessions, and returns a receiver for its
   * messages (taken or refused at once).
   *
   * @param queueName - The queue.
   * @param sessionId - The session to lock.
   * @param options - Receive mode, lock renewal, body parsing, a name for the receiver and an abort signal.
   * @returns A receiver holding the session's lock.
   * @throws `ServiceBusError` with code `SessionCannotBeLocked` when another receiver holds the
   * session, `MessagingEntityNotFound`, `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`,
   * `ServiceCommunicationProblem` after the client's retries.
   * @throws Error when the client is closed.
   */
  acceptSession(queueName: string, sessionId: string, options?: ServiceBusSessionReceiverOptions): Promise<ServiceBusSessionReceiver>;
  /**
   * Locks the session `sessionId` of a subscription that requires sessions, and returns a receiver for
   * its messages (taken or refused at once).
   *
   * @param topicName - The topic.
   * @param subscriptionName - The subscription of `topicName`.
   * @param sessionId - The session to lock.
   * @param options - Receive mode, lock renewal, body parsing, a name for the receiver and an abort signal.
   * @returns A receiver holding the session's lock.
   * @throws `ServiceBusError` with code `SessionCannotBeLocked` when another receiver holds the
   * session, `MessagingEntityNotFound`, `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`,
   * `ServiceCommunicationProblem` after the client's retries.
   * @throws Error when the client is closed.
   */
  acceptSession(topicName: string, subscriptionName: string, sessionId: string, options?: ServiceBusSessionReceiverOptions): Promise<ServiceBusSessionReceiver>;
  async acceptSession(
    name: string,
    subscriptionOrSessionId: string,
    sessionIdOrOptions?: string | ServiceBusSessionReceiverOptions,
    maybeOptions?: ServiceBusSessionReceiverOptions,
  ): Promise<ServiceBusSessionReceiver> {
    // As the SDK tells the overloads apart: a third string is the session id of a subscription.
    const isSubscription = typeof sessionIdOrOptions === 'string';
    const subscription = isSubscription ? subscriptionOrSessionId : undefined;
    const sessionId = isSubscription ? sessionIdOrOptions : subscriptionOrSessionId;
    const options = isSubscription ? maybeOptions : sessionIdOrOptions;
    if (typeof name !== 'string' || typeof sessionId !== 'string') throw new Error('Unhandled set of parameters');
    return this.accept(name, subscription, sessionId, options);
  }

  /**
   * Locks the next session that has a message available and no other receiver, and returns a receiver
   * for it. When there is none it waits, as @azure/service-bus does, up to `retryOptions.timeoutInMs`
   * (60 s by default), then throws `ServiceTimeout` (retryable: call again). Sluice waits on
   * availability hints between tries rather than in a request that keeps the broker running.
   *
   * @param queueName - The queue, which requires sessions.
   * @param options - Receive mode, lock renewal, body parsing, a name for the receiver and an abort signal.
   * @returns A receiver holding the session's lock (its `sessionId` says which).
   * @throws `ServiceBusError` with code `ServiceTimeout` when no session became available in time;
   * `MessagingEntityNotFound`, `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`,
   * `ServiceCommunicationProblem` after the client's retries.
   * @throws Error when the client is closed.
   */
  acceptNextSession(queueName: string, options?: ServiceBusSessionReceiverOptions): Promise<ServiceBusSessionReceiver>;
  /**
   * Locks the next session that has a message available and no other receiver, and returns a receiver
   * for it. When there is none it waits, as @azure/service-bus does, up to `retryOptions.timeoutInMs`
   * (60 s by default), then throws `ServiceTimeout` (retryable: call again). Sluice waits on
   * availability hints between tries rather than in a request that keeps the broker running.
   *
   * @param topicName - The topic.
   * @param subscriptionName - The subscription of `topicName`, which requires sessions.
   * @param options - Receive mode, lock renewal, body parsing, a name for the receiver and an abort signal.
   * @returns A receiver holding the session's lock (its `sessionId` says which).
   * @throws `ServiceBusError` with code `ServiceTimeout` when no session became available in time;
   * `MessagingEntityNotFound`, `UnauthorizedAccess` (no Listen rights), or `ServiceBusy`,
   * `ServiceCommunicationProblem` after the client's retries.
   * @throws Error when the client is closed.
   */
  acceptNextSession(topicName: string, subscriptionName: string, options?: ServiceBusSessionReceiverOptions): Promise<ServiceBusSessionReceiver>;
  async acceptNextSession(
    name: string,
    subscriptionOrOptions?: string | ServiceBusSessionReceiverOptions,
    maybeOptions?: ServiceBusSessionReceiverOptions,
  ): Promise<ServiceBusSessionReceiver> {
    const subscription = typeof subscriptionOrOptions === 'string' ? subscriptionOrOptions : undefined;
    return this.accept(name, subscription, undefined, typeof subscriptionOrOptions === 'string' ? maybeOptions : subscriptionOrOptions);
  }

  private async accept(
    name: string,
    subscription: string | undefined,
    sessionId: string | undefined,
    options: ServiceBusSessionReceiverOptions | undefined,
  ): Promise<ServiceBusSessionReceiver> {
    this.validateEntityPath(name, subscription);
    this.throwIfClosed();
    const named = subscription !== undefined ? { topic: name, subscription } : subscriptionOf(name);
    const receiver = await acceptSession(this.ctx, named ?? { queue: name }, sessionId, options);
    if (this.closing) {
      await receiver.close();
      this.throwIfClosed();
    }
    this.open.add(receiver);
    return receiver;
  }

  /**
   * Closes every sender and receiver this client handed out (subscriptions finish their running
   * handlers first, which may still settle), and the availability-hint socket; afterwards they, and
   * this client, throw the SDK's "connection is closed" error.
   */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.open].map((o) => o.close()));
    this.open.clear();
    this.acceptWaiter?.close();
    this.ctx.connectionClosed = true;
  }

  /**
   * As the SDK: with an EntityPath, only that entity may be named (exactly as written there).
   * Tokens are signed for the HTTP path of the entity each request goes to (`queues/q`,
   * `topics/t/subscriptions/s`), which is what a key scoped to that entity covers.
   */
  private validateEntityPath(name: string, subscription?: string): void {
    const entityPath = this.entityPath;
    if (entityPath === undefined || name === entityPath || name === sdkEntityName(entityPath)) return;
    // Sluice's spelling is unknown to the SDK, so nothing is lost by letting it name its subscription either way.
    if (subscription !== undefined && /^\/?topics\//i.test(entityPath) && sdkEntityName(entityPath) === `${name}/Subscriptions/${subscription}`) return;
    throw new Error('The queue or topic name provided does not match the EntityPath in the connection string passed to the ServiceBusClient constructor.');
  }

  private throwIfClosed(): void {
    throwIfConnectionClosed({ connectionClosed: this.closing });
  }
}
