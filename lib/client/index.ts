/**
 * sluice/client: the @azure/service-bus 7.x API over Sluice's HTTP API. fetch and Web Crypto
 * only: runs in Node 20+ and in browsers. Changing an app's import from '@azure/service-bus'
 * to 'sluice/client' (and its connection string) is the whole migration for this surface;
 * docs/migrating-from-azure-service-bus.md lists what differs.
 *
 * Every exported class, method and option carries a doc comment, so an editor shows help on hover
 * (test/client/doc-comments.test.ts holds that). Where the behaviour is the SDK's, the text
 * follows @azure/service-bus's own doc comments (MIT License, Copyright (c) Microsoft
 * Corporation); where Sluice differs, the comment says so.
 */
export { ServiceBusClient } from './client.js';
export type { ServiceBusClientOptions, ServiceBusRuleManager } from './client.js';
export type { ServiceBusSessionReceiver, ServiceBusSessionReceiverOptions } from './session-receiver.js';
export { ServiceBusAdministrationClient, RestError } from './admin.js';
export type * from './admin-types.js';
export { AzureNamedKeyCredential, AzureSASCredential, isNamedKeyCredential, isSASCredential } from './credentials.js';
export { parseServiceBusConnectionString } from './connection-string.js';
export type { ServiceBusConnectionStringProperties } from './connection-string.js';
export { ServiceBusError, MessagingError, isServiceBusError } from './errors.js';
export type { ServiceBusErrorCode } from './errors.js';
export { RetryMode, delay } from './retry.js';
export type { RetryOptions, AbortSignalLike } from './retry.js';
export type { ClientClock } from './clock.js';
export type { ServiceBusMessage, ServiceBusReceivedMessage, AmqpAnnotatedMessage } from './message.js';
export type { ServiceBusMessageBatch, TryAddOptions } from './batch.js';
export type { ServiceBusSender, ServiceBusSenderOptions, CreateMessageBatchOptions } from './sender.js';
export type {
  ServiceBusReceiver,
  ServiceBusReceiverOptions,
  ReceiveMessagesOptions,
  PeekMessagesOptions,
  GetMessageIteratorOptions,
  DeadLetterOptions,
  DeleteMessagesOptions,
  PurgeMessagesOptions,
} from './receiver.js';
export type { MessageHandlers, ProcessErrorArgs, SubscribeOptions } from './subscribe.js';
export type { PagedAsyncIterableIterator, PageSettings } from './paging.js';
export type { Waiter } from './waiting.js';
export { longPollWaiter, hintsWaiter } from './waiting.js';
export type { AvailabilityHints, AvailabilityHintsOptions } from './notifications.js';
export { openAvailabilityHints } from './notifications.js';
