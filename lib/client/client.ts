/** ServiceBusClient: the entry point, as in @azure/service-bus, over HTTP. */
import type { CorrelationRuleFilter, OperationOptions, OperationOptionsBase, RuleProperties, SqlRuleAction, SqlRuleFilter } from './admin-types.js';
import { ServiceBusAdministrationClient } from './admin.js';
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

export interface ServiceBusClientOptions {
  identifier?: string;
  customEndpointAddress?: string;
  retryOptions?: RetryOptions;
  webSocketOptions?: unknown;
  userAgentOptions?: unknown;
  /** Sluice: another fetch (a proxy, a polyfill, tests). */
  fetch?: typeof fetch;
}

export interface ServiceBusRuleManager {
  createRule(ruleName: string, filter: SqlRuleFilter | CorrelationRuleFilter, options?: OperationOptionsBase): Promise<void>;
  createRule(ruleName: string, filter: SqlRuleFilter | CorrelationRuleFilter, ruleAction?: SqlRuleAction, options?: OperationOptionsBase): Promise<void>;
  deleteRule(ruleName: string, options?: OperationOptionsBase): Promise<void>;
  listRules(options?: OperationOptions): PagedAsyncIterableIterator<RuleProperties>;
}

export class ServiceBusClient {
  fullyQualifiedNamespace: string;
  identifier: string;
  private readonly ctx: ClientContext;
  private acceptWaiter: Waiter | undefined;
  private readonly admin: ServiceBusAdministrationClient;
  private readonly open = new Set<{ close(): Promise<void> }>();
  /** From the start of close(): nothing new is handed out (ctx.connectionClosed follows once all is closed). */
  private closing = false;
  /** The connection string's EntityPath, if any: the one entity this client may name (as in the SDK). */
  private readonly entityPath: string | undefined;

  constructor(connectionString: string, options?: ServiceBusClientOptions);
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
    };
    this.admin = new ServiceBusAdministrationClient(endpoint, credential, transportOptions);
  }

  createReceiver(queueName: string, options?: ServiceBusReceiverOptions): ServiceBusReceiver;
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

  createSender(queueOrTopicName: string, options?: ServiceBusSenderOptions): ServiceBusSender {
    this.validateEntityPath(queueOrTopicName);
    this.throwIfClosed();
    const sender = new Sender(this.ctx, queueOrTopicName, options);
    this.open.add(sender);
    return sender;
  }

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

  acceptSession(queueName: string, sessionId: string, options?: ServiceBusSessionReceiverOptions): Promise<ServiceBusSessionReceiver>;
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

  acceptNextSession(queueName: string, options?: ServiceBusSessionReceiverOptions): Promise<ServiceBusSessionReceiver>;
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
   * handlers first, which may still settle); afterwards they, and this client, throw the SDK's
   * "connection is closed" error.
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
