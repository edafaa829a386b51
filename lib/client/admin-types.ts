/**
 * The administration types of @azure/service-bus 7.x, property for property (the type test
 * in test/client/types.test.ts keeps them in step). Durations are ISO 8601 strings as the
 * SDK has them; "unlimited" is .NET's TimeSpan.MaxValue, as Service Bus reports it.
 */
import type { AbortSignalLike } from './retry.js';
import type { CorrelationSystemProperties } from '../filters/correlation-keys.js';

export interface OperationOptions {
  abortSignal?: AbortSignalLike;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  requestOptions?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tracingOptions?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  serializerOptions?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  onResponse?: (...args: any[]) => void;
}
export type OperationOptionsBase = Pick<OperationOptions, 'abortSignal' | 'tracingOptions'>;

export type EntityStatus = 'Active' | 'Creating' | 'Deleting' | 'ReceiveDisabled' | 'SendDisabled' | 'Disabled' | 'Renaming' | 'Restoring' | 'Unknown';
export type EntityAvailabilityStatus = 'Available' | 'Limited' | 'Renaming' | 'Restoring' | 'Unknown';

/** Minimal stand-in for core-client's HttpResponse: status, headers and the request's URL and method. */
export interface HttpResponse {
  request: { url: string; method: string };
  status: number;
  headers: { get(name: string): string | undefined };
}
export type WithResponse<T extends object> = T & { _response: HttpResponse };
export type EntitiesResponse<T extends object> = WithResponse<Array<T>> & { continuationToken?: string };

export interface AuthorizationRule {
  claimType: string;
  accessRights?: ('Manage' | 'Send' | 'Listen')[];
  keyName: string;
  primaryKey?: string;
  secondaryKey?: string;
}

export interface CorrelationRuleFilter extends CorrelationSystemProperties {
  applicationProperties?: { [key: string]: string | number | boolean | Date };
}
export interface SqlRuleFilter {
  sqlExpression: string;
  sqlParameters?: { [key: string]: string | number | boolean };
}
export type SqlRuleAction = {
  sqlExpression?: string;
  sqlParameters?: { [key: string]: string | number | boolean };
};
export interface RuleProperties {
  readonly name: string;
  filter: SqlRuleFilter | CorrelationRuleFilter;
  action: SqlRuleAction;
}

export interface CreateQueueOptions extends OperationOptions {
  lockDuration?: string;
  maxSizeInMegabytes?: number;
  maxMessageSizeInKilobytes?: number;
  requiresDuplicateDetection?: boolean;
  requiresSession?: boolean;
  defaultMessageTimeToLive?: string;
  deadLetteringOnMessageExpiration?: boolean;
  duplicateDetectionHistoryTimeWindow?: string;
  maxDeliveryCount?: number;
  enableBatchedOperations?: boolean;
  authorizationRules?: AuthorizationRule[];
  status?: EntityStatus;
  forwardTo?: string;
  userMetadata?: string;
  autoDeleteOnIdle?: string;
  enablePartitioning?: boolean;
  forwardDeadLetteredMessagesTo?: string;
  enableExpress?: boolean;
  availabilityStatus?: EntityAvailabilityStatus;
}

export interface CreateTopicOptions extends OperationOptions {
  defaultMessageTimeToLive?: string;
  maxSizeInMegabytes?: number;
  maxMessageSizeInKilobytes?: number;
  requiresDuplicateDetection?: boolean;
  duplicateDetectionHistoryTimeWindow?: string;
  enableBatchedOperations?: boolean;
  authorizationRules?: AuthorizationRule[];
  status?: EntityStatus;
  userMetadata?: string;
  supportOrdering?: boolean;
  autoDeleteOnIdle?: string;
  enablePartitioning?: boolean;
  enableExpress?: boolean;
  availabilityStatus?: EntityAvailabilityStatus;
}

export interface CreateSubscriptionOptions extends OperationOptions {
  lockDuration?: string;
  requiresSession?: boolean;
  defaultMessageTimeToLive?: string;
  deadLetteringOnMessageExpiration?: boolean;
  deadLetteringOnFilterEvaluationExceptions?: boolean;
  defaultRuleOptions?: { name: string; filter?: SqlRuleFilter | CorrelationRuleFilter; action?: SqlRuleAction };
  maxDeliveryCount?: number;
  enableBatchedOperations?: boolean;
  status?: EntityStatus;
  forwardTo?: string;
  userMetadata?: string;
  forwardDeadLetteredMessagesTo?: string;
  autoDeleteOnIdle?: string;
  availabilityStatus?: EntityAvailabilityStatus;
}

export interface QueueProperties {
  readonly name: string;
  lockDuration: string;
  maxSizeInMegabytes: number;
  maxMessageSizeInKilobytes?: number;
  readonly requiresDuplicateDetection: boolean;
  readonly requiresSession: boolean;
  defaultMessageTimeToLive: string;
  deadLetteringOnMessageExpiration: boolean;
  duplicateDetectionHistoryTimeWindow: string;
  maxDeliveryCount: number;
  enableBatchedOperations: boolean;
  authorizationRules?: AuthorizationRule[];
  status: EntityStatus;
  forwardTo?: string;
  userMetadata: string;
  autoDeleteOnIdle: string;
  readonly enablePartitioning: boolean;
  forwardDeadLetteredMessagesTo?: string;
  readonly enableExpress: boolean;
  readonly availabilityStatus: EntityAvailabilityStatus;
}

export interface TopicProperties {
  readonly name: string;
  defaultMessageTimeToLive: string;
  maxSizeInMegabytes: number;
  maxMessageSizeInKilobytes?: number;
  readonly requiresDuplicateDetection: boolean;
  duplicateDetectionHistoryTimeWindow: string;
  enableBatchedOperations: boolean;
  authorizationRules?: AuthorizationRule[];
  status: EntityStatus;
  userMetadata: string;
  supportOrdering: boolean;
  autoDeleteOnIdle: string;
  readonly enablePartitioning: boolean;
  readonly enableExpress: boolean;
  readonly availabilityStatus: EntityAvailabilityStatus;
}

export interface SubscriptionProperties {
  readonly subscriptionName: string;
  readonly topicName: string;
  lockDuration: string;
  readonly requiresSession: boolean;
  defaultMessageTimeToLive: string;
  deadLetteringOnMessageExpiration: boolean;
  deadLetteringOnFilterEvaluationExceptions: boolean;
  maxDeliveryCount: number;
  enableBatchedOperations: boolean;
  status: EntityStatus;
  forwardTo?: string;
  userMetadata?: string;
  forwardDeadLetteredMessagesTo?: string;
  autoDeleteOnIdle: string;
  availabilityStatus?: EntityAvailabilityStatus;
}

export interface QueueRuntimeProperties {
  name: string;
  createdAt: Date;
  modifiedAt: Date;
  accessedAt: Date;
  totalMessageCount?: number;
  activeMessageCount: number;
  deadLetterMessageCount: number;
  scheduledMessageCount: number;
  transferMessageCount: number;
  transferDeadLetterMessageCount: number;
  sizeInBytes?: number;
}

export interface TopicRuntimeProperties {
  name: string;
  sizeInBytes?: number;
  subscriptionCount?: number;
  scheduledMessageCount: number;
  createdAt: Date;
  modifiedAt: Date;
  accessedAt: Date;
}

export interface SubscriptionRuntimeProperties {
  subscriptionName: string;
  topicName: string;
  totalMessageCount: number;
  activeMessageCount: number;
  deadLetterMessageCount: number;
  transferMessageCount: number;
  transferDeadLetterMessageCount: number;
  createdAt: Date;
  modifiedAt: Date;
  accessedAt: Date;
}

export interface NamespaceProperties {
  createdAt: Date;
  messagingSku: 'Basic' | 'Premium' | 'Standard';
  modifiedAt: Date;
  name: string;
  messagingUnits: number | undefined;
}

export interface ServiceBusAdministrationClientOptions {
  serviceVersion?: '2021-05' | '2017-04';
  retryOptions?: import('./retry.js').RetryOptions;
  /** Sluice: another fetch (a proxy, a polyfill). */
  fetch?: typeof fetch;
}
