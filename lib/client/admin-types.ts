/**
 * The administration types of @azure/service-bus 7.x, property for property (the type test
 * in test/client/types.test.ts keeps them in step). Durations are ISO 8601 strings as the
 * SDK has them; "unlimited" is .NET's TimeSpan.MaxValue, as Service Bus reports it.
 */
import type { AbortSignalLike } from './retry.js';
import type { CorrelationSystemProperties } from '../filters/correlation-keys.js';

/**
 * The base options type for all operations.
 */
export interface OperationOptions {
  /**
   * The signal which can be used to abort requests.
   */
  abortSignal?: AbortSignalLike;
  /** Accepted for compatibility with @azure/service-bus and ignored: Sluice makes its own requests. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  requestOptions?: any;
  /** Accepted for compatibility with @azure/service-bus and ignored: Sluice does not trace. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tracingOptions?: any;
  /** Accepted for compatibility with @azure/service-bus and ignored. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  serializerOptions?: any;
  /** Accepted for compatibility with @azure/service-bus and ignored: the result's `_response` has the response. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  onResponse?: (...args: any[]) => void;
}
/**
 * NOTE: This type is intended to mirror the relevant fields and structure from `@azure/core-client` OperationOptions
 *
 * Options for configuring tracing and the abortSignal.
 */
export type OperationOptionsBase = Pick<OperationOptions, 'abortSignal' | 'tracingOptions'>;

/**
 * Possible values for `status` of the Service Bus messaging entities.
 */
export type EntityStatus = 'Active' | 'Creating' | 'Deleting' | 'ReceiveDisabled' | 'SendDisabled' | 'Disabled' | 'Renaming' | 'Restoring' | 'Unknown';
/**
 * Possible values for `availabilityStatus` of the Service Bus messaging entities.
 */
export type EntityAvailabilityStatus = 'Available' | 'Limited' | 'Renaming' | 'Restoring' | 'Unknown';

/** Minimal stand-in for core-client's HttpResponse: status, headers and the request's URL and method. */
export interface HttpResponse {
  /**
   * The raw request
   */
  request: { url: string; method: string };
  /**
   * The HTTP response status (e.g. 200)
   */
  status: number;
  /**
   * The HTTP response headers.
   */
  headers: { get(name: string): string | undefined };
}
/**
 * Represents the returned response of the operation along with the raw response.
 */
export type WithResponse<T extends object> = T & {
  /** The HTTP response the result was read from: its status, headers and request. */
  _response: HttpResponse;
};
/**
 * Represents the result of list operation on entities which also contains the `continuationToken` to start iterating over from.
 */
export type EntitiesResponse<T extends object> = WithResponse<Array<T>> & {
  /** Pass to `byPage({ continuationToken })` to go on after this page; undefined after the last one. */
  continuationToken?: string;
};

/**
 * Represents type of `AuthorizationRule` in ATOM based management operations.
 */
export interface AuthorizationRule {
  /**
   * The claim type.
   */
  claimType: string;
  /**
   * The list of rights("Manage" | "Send" | "Listen").
   */
  accessRights?: ('Manage' | 'Send' | 'Listen')[];
  /**
   * The authorization rule key name.
   */
  keyName: string;
  /**
   * The primary key for the authorization rule.
   */
  primaryKey?: string;
  /**
   * The secondary key for the authorization rule.
   */
  secondaryKey?: string;
}

/**
 * Represents the correlation filter expression.
 * A CorrelationRuleFilter holds a set of conditions that are matched against user and system properties
 * of incoming messages from a Subscription.
 */
export interface CorrelationRuleFilter extends CorrelationSystemProperties {
  /**
   * Value to be matched with the user properties of the incoming message.
   */
  applicationProperties?: { [key: string]: string | number | boolean | Date };
}
/**
 * Represents all possible fields on SqlRuleFilter
 */
export interface SqlRuleFilter {
  /**
   * SQL expression to use in the rule filter. It is evaluated against the messages'
   * user-defined properties and system properties. All system properties will be prefixed with
   * `sys.` in the condition expression.
   * Defaults to creating a true filter if none specified
   */
  sqlExpression: string;
  /**
   * SQL parameters to the SQL expression in the rule filter.
   */
  sqlParameters?: { [key: string]: string | number | boolean };
}
/**
 * Represents all possible fields on SqlRuleAction
 */
export type SqlRuleAction = {
  /**
   * SQL expression to use in the rule action.
   */
  sqlExpression?: string;
  /**
   * SQL parameters to the SQL expression in the rule action.
   */
  sqlParameters?: { [key: string]: string | number | boolean };
};
/**
 * Represents all the attributes of a rule.
 */
export interface RuleProperties {
  /**
   * Name of the rule
   */
  readonly name: string;
  /**
   * Defines the filter expression that the rule evaluates. For `SqlRuleFilter` input,
   * the expression string is interpreted as a SQL92 expression which must
   * evaluate to True or False. Only one between a `CorrelationRuleFilter` or
   * a `SqlRuleFilter` can be defined.
   */
  filter: SqlRuleFilter | CorrelationRuleFilter;
  /**
   * The SQL like expression that can be executed on the message should the
   * associated filter apply.
   */
  action: SqlRuleAction;
}

/**
 * Represents settable options on a queue
 */
export interface CreateQueueOptions extends OperationOptions {
  /**
   * Determines the amount of time in seconds in which a message should be locked for
   * processing by a receiver. After this period, the message is unlocked and available
   * for consumption by the next receiver.
   * (If sessions are enabled, this lock duration is applicable for sessions and not for messages.)
   *
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  lockDuration?: string;
  /**
   * Specifies the maximum queue size in megabytes. Any attempt to enqueue a message that
   * will cause the queue to exceed this value will fail.
   */
  maxSizeInMegabytes?: number;
  /**
   * The maximum message size in kilobytes for messages sent to this queue.
   *
   * (Configurable only for Premium Tier Service Bus namespace.)
   *
   * Sluice: accepted on create and update but not stored; always reported as `256`.
   */
  maxMessageSizeInKilobytes?: number;
  /**
   * If enabled, the topic will detect duplicate messages within the time
   * span specified by the DuplicateDetectionHistoryTimeWindow property.
   * Settable only at queue creation time.
   */
  requiresDuplicateDetection?: boolean;
  /**
   * If set to true, the queue will be session-aware and only SessionReceiver
   * will be supported. Session-aware queues are not supported through REST.
   * Settable only at queue creation time.
   */
  requiresSession?: boolean;
  /**
   * Depending on whether DeadLettering is enabled, a message is automatically
   * moved to the dead-letter sub-queue or deleted if it has been stored in the
   * queue for longer than the specified time.
   * This value is overwritten by a TTL specified on the message
   * if and only if the message TTL is smaller than the TTL set on the queue.
   * This value is immutable after the Queue has been created.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  defaultMessageTimeToLive?: string;
  /**
   * If it is enabled and a message expires, the Service Bus moves the message
   * from the queue into the queue’s dead-letter sub-queue. If disabled,
   * message will be permanently deleted from the queue.
   * Settable only at queue creation time.
   */
  deadLetteringOnMessageExpiration?: boolean;
  /**
   * Specifies the time span during which the Service Bus detects message duplication.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  duplicateDetectionHistoryTimeWindow?: string;
  /**
   * The maximum delivery count of messages after which if it is still not settled,
   * gets moved to the dead-letter sub-queue.
   */
  maxDeliveryCount?: number;
  /**
   * Specifies if batched operations should be allowed.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  enableBatchedOperations?: boolean;
  /**
   * Authorization rules on the queue
   *
   * Sluice: accepted but not stored here, and reported as `[]`; an entity's own keys are managed
   * through the HTTP API's `authorization-rules` routes.
   */
  authorizationRules?: AuthorizationRule[];
  /**
   * Status of the messaging entity.
   */
  status?: EntityStatus;
  /**
   * Absolute URL or the name of the queue or topic the
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardTo?: string;
  /**
   * The user provided metadata information associated with the queue.
   * Used to specify textual content such as tags, labels, etc.
   * Value must not exceed 1024 bytes encoded in utf-8.
   *
   * Sluice: accepted on create and update but not stored; always reported as `''`.
   */
  userMetadata?: string;
  /**
   * Max idle time before entity is deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  autoDeleteOnIdle?: string;
  /**
   * Specifies whether the queue should be partitioned.
   */
  enablePartitioning?: boolean;
  /**
   * Absolute URL or the name of the queue or topic the dead-lettered
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardDeadLetteredMessagesTo?: string;
  /**
   * Specifies whether express entities are enabled on queue.
   *
   * Sluice: accepted on create and update but not stored; always reported as `false`.
   */
  enableExpress?: boolean;
  /**
   * Availability status of the messaging entity.
   *
   * Sluice: accepted on create and update but not stored; always reported as `'Available'`.
   */
  availabilityStatus?: EntityAvailabilityStatus;
}

/**
 * Represents settable options on a topic
 */
export interface CreateTopicOptions extends OperationOptions {
  /**
   * Determines how long a message lives in the associated subscriptions.
   * Subscriptions inherit the TTL from the topic unless they are created explicitly
   * with a smaller TTL. Based on whether dead-lettering is enabled, a message whose
   * TTL has expired will either be moved to the subscription’s associated dead-letter
   * sub-queue or will be permanently deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  defaultMessageTimeToLive?: string;
  /**
   * Specifies the maximum topic size in megabytes. Any attempt to enqueue a message
   * that will cause the topic to exceed this value will fail. All messages that are
   * stored in the topic or any of its subscriptions count towards this value.
   * Multiple copies of a message that reside in one or multiple subscriptions count
   * as a single messages. For example, if message m exists once in subscription s1
   * and twice in subscription s2, m is counted as a single message.
   */
  maxSizeInMegabytes?: number;
  /**
   * The maximum message size in kilobytes for messages sent to this topic.
   *
   * (Configurable only for Premium Tier Service Bus namespace.)
   *
   * Sluice: accepted on create and update but not stored; always reported as `256`.
   */
  maxMessageSizeInKilobytes?: number;
  /**
   * If enabled, the topic will detect duplicate messages within the time span
   * specified by the DuplicateDetectionHistoryTimeWindow property.
   * Settable only at topic creation time.
   */
  requiresDuplicateDetection?: boolean;
  /**
   * Specifies the time span during which the Service Bus will detect message duplication.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  duplicateDetectionHistoryTimeWindow?: string;
  /**
   * Specifies if batched operations should be allowed.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  enableBatchedOperations?: boolean;
  /**
   * Authorization rules on the topic
   *
   * Sluice: accepted but not stored here, and reported as `[]`; an entity's own keys are managed
   * through the HTTP API's `authorization-rules` routes.
   */
  authorizationRules?: AuthorizationRule[];
  /**
   * Status of the messaging entity.
   */
  status?: EntityStatus;
  /**
   * The user provided metadata information associated with the topic.
   * Used to specify textual content such as tags, labels, etc.
   * Value must not exceed 1024 bytes encoded in utf-8.
   *
   * Sluice: accepted on create and update but not stored; always reported as `''`.
   */
  userMetadata?: string;
  /**
   * Specifies whether the topic supports message ordering.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  supportOrdering?: boolean;
  /**
   * Max idle time before entity is deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  autoDeleteOnIdle?: string;
  /**
   * Specifies whether the topic should be partitioned
   */
  enablePartitioning?: boolean;
  /**
   * Specifies whether express entities are enabled on topic.
   *
   * Sluice: accepted on create and update but not stored; always reported as `false`.
   */
  enableExpress?: boolean;
  /**
   * Availability status of the messaging entity.
   *
   * Sluice: accepted on create and update but not stored; always reported as `'Available'`.
   */
  availabilityStatus?: EntityAvailabilityStatus;
}

/**
 * Represents settable options on a subscription
 */
export interface CreateSubscriptionOptions extends OperationOptions {
  /**
   * The default lock duration is applied to subscriptions that do not define a lock
   * duration.
   * (If sessions are enabled, this lock duration is applicable for sessions and not for messages.)
   *
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  lockDuration?: string;
  /**
   * If set to true, the subscription will be session-aware and only SessionReceiver
   * will be supported. Session-aware subscription are not supported through REST.
   * Settable only at subscription creation time.
   */
  requiresSession?: boolean;
  /**
   * Determines how long a message lives in the subscription. Based on whether
   * dead-lettering is enabled, a message whose TTL has expired will either be moved
   * to the subscription’s associated DeadLtterQueue or permanently deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  defaultMessageTimeToLive?: string;
  /**
   * If it is enabled and a message expires, the Service Bus moves the message from
   * the queue into the subscription’s dead-letter sub-queue. If disabled, message
   * will be permanently deleted from the subscription’s main queue.
   * Settable only at subscription creation time.
   */
  deadLetteringOnMessageExpiration?: boolean;
  /**
   * Determines how the Service Bus handles a message that causes an exception during
   * a subscription’s filter evaluation. If the value is set to true, the message that
   * caused the exception will be moved to the subscription’s dead-letter sub-queue.
   * Otherwise, it will be discarded. By default this parameter is set to true,
   * allowing the user a chance to investigate the cause of the exception.
   * It can occur from a malformed message or some incorrect assumptions being made
   * in the filter about the form of the message. Settable only at topic creation time.
   */
  deadLetteringOnFilterEvaluationExceptions?: boolean;
  /**
   * Represents the options to create the default rule for the subscription.
   */
  defaultRuleOptions?: { name: string; filter?: SqlRuleFilter | CorrelationRuleFilter; action?: SqlRuleAction };
  /**
   * The maximum delivery count of messages after which if it is still not settled,
   * gets moved to the dead-letter sub-queue.
   *
   */
  maxDeliveryCount?: number;
  /**
   * Specifies if batched operations should be allowed.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  enableBatchedOperations?: boolean;
  /**
   * Status of the messaging entity.
   */
  status?: EntityStatus;
  /**
   * Absolute URL or the name of the queue or topic the
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardTo?: string;
  /**
   * The user provided metadata information associated with the subscription.
   * Used to specify textual content such as tags, labels, etc.
   * Value must not exceed 1024 bytes encoded in utf-8.
   *
   * Sluice: accepted on create and update but not stored; always reported as `''`.
   */
  userMetadata?: string;
  /**
   * Absolute URL or the name of the queue or topic the dead-lettered
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardDeadLetteredMessagesTo?: string;
  /**
   * Max idle time before entity is deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  autoDeleteOnIdle?: string;
  /**
   * Availability status of the messaging entity.
   *
   * Sluice: accepted on create and update but not stored; always reported as `'Available'`.
   */
  availabilityStatus?: EntityAvailabilityStatus;
}

/**
 * Represents the input for updateQueue.
 *
 */
export interface QueueProperties {
  /**
   * Name of the queue
   */
  readonly name: string;
  /**
   * Determines the amount of time in seconds in which a message should be locked for
   * processing by a receiver. After this period, the message is unlocked and available
   * for consumption by the next receiver.
   * (If sessions are enabled, this lock duration is applicable for sessions and not for messages.)
   *
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  lockDuration: string;
  /**
   * Specifies the maximum queue size in megabytes. Any attempt to enqueue a message that
   * will cause the queue to exceed this value will fail.
   */
  maxSizeInMegabytes: number;
  /**
   * The maximum message size in kilobytes for messages sent to this queue.
   *
   * Not applicable if service version "2017-04" is chosen when creating the `ServiceBusAdministrationClient`.
   *
   * Sluice: accepted on create and update but not stored; always reported as `256`.
   */
  maxMessageSizeInKilobytes?: number;
  /**
   * If enabled, the topic will detect duplicate messages within the time
   * span specified by the DuplicateDetectionHistoryTimeWindow property.
   * Settable only at queue creation time.
   */
  readonly requiresDuplicateDetection: boolean;
  /**
   * If set to true, the queue will be session-aware and only SessionReceiver
   * will be supported. Session-aware queues are not supported through REST.
   * Settable only at queue creation time.
   */
  readonly requiresSession: boolean;
  /**
   * Depending on whether DeadLettering is enabled, a message is automatically
   * moved to the dead-letter sub-queue or deleted if it has been stored in the
   * queue for longer than the specified time.
   * This value is overwritten by a TTL specified on the message
   * if and only if the message TTL is smaller than the TTL set on the queue.
   * This value is immutable after the Queue has been created.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  defaultMessageTimeToLive: string;
  /**
   * If it is enabled and a message expires, the Service Bus moves the message
   * from the queue into the queue’s dead-letter sub-queue. If disabled,
   * message will be permanently deleted from the queue.
   * Settable only at queue creation time.
   */
  deadLetteringOnMessageExpiration: boolean;
  /**
   * Specifies the time span during which the Service Bus detects message duplication.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  duplicateDetectionHistoryTimeWindow: string;
  /**
   * The maximum delivery count of messages after which if it is still not settled,
   * gets moved to the dead-letter sub-queue.
   */
  maxDeliveryCount: number;
  /**
   * Specifies if batched operations should be allowed.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  enableBatchedOperations: boolean;
  /**
   * Authorization rules on the queue
   *
   * Sluice: accepted but not stored here, and reported as `[]`; an entity's own keys are managed
   * through the HTTP API's `authorization-rules` routes.
   */
  authorizationRules?: AuthorizationRule[];
  /**
   * Status of the messaging entity.
   */
  status: EntityStatus;
  /**
   * Absolute URL or the name of the queue or topic the
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardTo?: string;
  /**
   * The user provided metadata information associated with the queue.
   * Used to specify textual content such as tags, labels, etc.
   * Value must not exceed 1024 bytes encoded in utf-8.
   *
   * Sluice: accepted on create and update but not stored; always reported as `''`.
   */
  userMetadata: string;
  /**
   * Max idle time before entity is deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  autoDeleteOnIdle: string;
  /**
   * Specifies whether the queue should be partitioned.
   */
  readonly enablePartitioning: boolean;
  /**
   * Absolute URL or the name of the queue or topic the dead-lettered
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardDeadLetteredMessagesTo?: string;
  /**
   * Specifies whether express entities are enabled on queue.
   *
   * Sluice: accepted on create and update but not stored; always reported as `false`.
   */
  readonly enableExpress: boolean;
  /**
   * Availability status of the messaging entity.
   *
   * Sluice: accepted on create and update but not stored; always reported as `'Available'`.
   */
  readonly availabilityStatus: EntityAvailabilityStatus;
}

/**
 * Represents the input for updateTopic.
 *
 */
export interface TopicProperties {
  /**
   * Name of the topic
   */
  readonly name: string;
  /**
   * Determines how long a message lives in the associated subscriptions.
   * Subscriptions inherit the TTL from the topic unless they are created explicitly
   * with a smaller TTL. Based on whether dead-lettering is enabled, a message whose
   * TTL has expired will either be moved to the subscription’s associated dead-letter
   * sub-queue or will be permanently deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  defaultMessageTimeToLive: string;
  /**
   * Specifies the maximum topic size in megabytes. Any attempt to enqueue a message
   * that will cause the topic to exceed this value will fail. All messages that are
   * stored in the topic or any of its subscriptions count towards this value.
   * Multiple copies of a message that reside in one or multiple subscriptions count
   * as a single messages. For example, if message m exists once in subscription s1
   * and twice in subscription s2, m is counted as a single message.
   */
  maxSizeInMegabytes: number;
  /**
   * The maximum message size in kilobytes for messages sent to this queue/topic.
   *
   * Not applicable if service version "2017-04" is chosen when creating the `ServiceBusAdministrationClient`.
   *
   * Sluice: accepted on create and update but not stored; always reported as `256`.
   */
  maxMessageSizeInKilobytes?: number;
  /**
   * If enabled, the topic will detect duplicate messages within the time span
   * specified by the DuplicateDetectionHistoryTimeWindow property.
   * Settable only at topic creation time.
   */
  readonly requiresDuplicateDetection: boolean;
  /**
   * Specifies the time span during which the Service Bus will detect message duplication.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  duplicateDetectionHistoryTimeWindow: string;
  /**
   * Specifies if batched operations should be allowed.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  enableBatchedOperations: boolean;
  /**
   * Authorization rules on the topic
   *
   * Sluice: accepted but not stored here, and reported as `[]`; an entity's own keys are managed
   * through the HTTP API's `authorization-rules` routes.
   */
  authorizationRules?: AuthorizationRule[];
  /**
   * Status of the messaging entity.
   */
  status: EntityStatus;
  /**
   * The user provided metadata information associated with the topic.
   * Used to specify textual content such as tags, labels, etc.
   * Value must not exceed 1024 bytes encoded in utf-8.
   *
   * Sluice: accepted on create and update but not stored; always reported as `''`.
   */
  userMetadata: string;
  /**
   * Specifies whether the topic supports message ordering.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  supportOrdering: boolean;
  /**
   * Max idle time before entity is deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  autoDeleteOnIdle: string;
  /**
   * Specifies whether the topic should be partitioned
   */
  readonly enablePartitioning: boolean;
  /**
   * Specifies whether express entities are enabled on topic.
   *
   * Sluice: accepted on create and update but not stored; always reported as `false`.
   */
  readonly enableExpress: boolean;
  /**
   * Availability status of the messaging entity.
   *
   * Sluice: accepted on create and update but not stored; always reported as `'Available'`.
   */
  readonly availabilityStatus: EntityAvailabilityStatus;
}

/**
 * Represents the input for updateSubscription.
 *
 */
export interface SubscriptionProperties {
  /**
   * Name of the subscription
   */
  readonly subscriptionName: string;
  /**
   * Name of the topic
   */
  readonly topicName: string;
  /**
   * The default lock duration is applied to subscriptions that do not define a lock
   * duration.
   * (If sessions are enabled, this lock duration is applicable for sessions and not for messages.)
   *
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  lockDuration: string;
  /**
   * If set to true, the subscription will be session-aware and only SessionReceiver
   * will be supported. Session-aware subscription are not supported through REST.
   * Settable only at subscription creation time.
   */
  readonly requiresSession: boolean;
  /**
   * Determines how long a message lives in the subscription. Based on whether
   * dead-lettering is enabled, a message whose TTL has expired will either be moved
   * to the subscription’s associated DeadLtterQueue or permanently deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  defaultMessageTimeToLive: string;
  /**
   * If it is enabled and a message expires, the Service Bus moves the message from
   * the queue into the subscription’s dead-letter sub-queue. If disabled, message
   * will be permanently deleted from the subscription’s main queue.
   * Settable only at subscription creation time.
   */
  deadLetteringOnMessageExpiration: boolean;
  /**
   * Determines how the Service Bus handles a message that causes an exception during
   * a subscription’s filter evaluation. If the value is set to true, the message that
   * caused the exception will be moved to the subscription’s dead-letter sub-queue.
   * Otherwise, it will be discarded. By default this parameter is set to true,
   * allowing the user a chance to investigate the cause of the exception.
   * It can occur from a malformed message or some incorrect assumptions being made
   * in the filter about the form of the message. Settable only at topic creation time.
   */
  deadLetteringOnFilterEvaluationExceptions: boolean;
  /**
   * The maximum delivery count of messages after which if it is still not settled,
   * gets moved to the dead-letter sub-queue.
   *
   */
  maxDeliveryCount: number;
  /**
   * Specifies if batched operations should be allowed.
   *
   * Sluice: accepted on create and update but not stored; always reported as `true`.
   */
  enableBatchedOperations: boolean;
  /**
   * Status of the messaging entity.
   */
  status: EntityStatus;
  /**
   * Absolute URL or the name of the queue or topic the
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardTo?: string;
  /**
   * The user provided metadata information associated with the subscription.
   * Used to specify textual content such as tags, labels, etc.
   * Value must not exceed 1024 bytes encoded in utf-8.
   *
   * Sluice: accepted on create and update but not stored; always reported as `''`.
   */
  userMetadata?: string;
  /**
   * Absolute URL or the name of the queue or topic the dead-lettered
   * messages are to be forwarded to.
   * For example, an absolute URL input would be of the form
   * `sb://<your-service-bus-namespace-endpoint>/<queue-or-topic-name>`
   */
  forwardDeadLetteredMessagesTo?: string;
  /**
   * Max idle time before entity is deleted.
   * This is to be specified in ISO-8601 duration format
   * such as "PT1M" for 1 minute, "PT5S" for 5 seconds.
   *
   * More on ISO-8601 duration format: https://en.wikipedia.org/wiki/ISO_8601#Durations
   */
  autoDeleteOnIdle: string;
  /**
   * Availability status of the messaging entity.
   *
   * Sluice: accepted on create and update but not stored; always reported as `'Available'`.
   */
  availabilityStatus?: EntityAvailabilityStatus;
}

/**
 * Represents runtime info attributes of a queue entity
 */
export interface QueueRuntimeProperties {
  /**
   * Name of the queue
   */
  name: string;
  /**
   * Created at timestamp
   */
  createdAt: Date;
  /**
   * Updated at timestamp
   */
  modifiedAt: Date;
  /**
   * Accessed at timestamp
   */
  accessedAt: Date;
  /**
   * The entity's message count.
   *
   */
  totalMessageCount?: number;
  /**
   * The number of active messages in the queue.
   */
  activeMessageCount: number;
  /**
   * The number of messages that have been dead lettered.
   */
  deadLetterMessageCount: number;
  /**
   * The number of scheduled messages.
   */
  scheduledMessageCount: number;
  /**
   * The number of messages transferred to another queue, topic, or subscription
   */
  transferMessageCount: number;
  /**
   * The number of messages transferred to the dead letter queue.
   */
  transferDeadLetterMessageCount: number;
  /**
   * The entity's size in bytes.
   *
   */
  sizeInBytes?: number;
}

/**
 * Represents runtime info attributes of a topic entity
 */
export interface TopicRuntimeProperties {
  /**
   * Name of the topic
   */
  name: string;
  /**
   * Specifies the topic size in bytes.
   */
  sizeInBytes?: number;
  /**
   * The subscription count on given topic.
   *
   */
  subscriptionCount?: number;
  /**
   * The number of scheduled messages.
   */
  scheduledMessageCount: number;
  /**
   * Created at timestamp
   */
  createdAt: Date;
  /**
   * Updated at timestamp
   */
  modifiedAt: Date;
  /**
   * Accessed at timestamp
   */
  accessedAt: Date;
}

/**
 * Represents runtime info attributes of a subscription entity
 */
export interface SubscriptionRuntimeProperties {
  /**
   * Name of the subscription
   */
  subscriptionName: string;
  /**
   * Name of the topic
   */
  topicName: string;
  /**
   * The entity's message count.
   *
   */
  totalMessageCount: number;
  /**
   * The number of active messages in the queue.
   */
  activeMessageCount: number;
  /**
   * The number of messages that have been dead lettered.
   */
  deadLetterMessageCount: number;
  /**
   * The number of messages transferred to another queue, topic, or subscription
   */
  transferMessageCount: number;
  /**
   * The number of messages transferred to the dead letter queue.
   */
  transferDeadLetterMessageCount: number;
  /**
   * Created at timestamp
   */
  createdAt: Date;
  /**
   * Updated at timestamp
   */
  modifiedAt: Date;
  /**
   * Accessed at timestamp
   */
  accessedAt: Date;
}

/**
 * Represents the metadata related to a service bus namespace.
 *
 */
export interface NamespaceProperties {
  /**
   * The time at which the namespace was created.
   */
  createdAt: Date;
  /**
   * The SKU/tier of the namespace.
   * "Basic", "Standard" and "Premium"
   */
  messagingSku: 'Basic' | 'Premium' | 'Standard';
  /**
   * The last time at which the namespace was modified.
   */
  modifiedAt: Date;
  /**
   * Name of the namespace.
   */
  name: string;
  /**
   * Number of messaging units allocated for namespace.
   * Valid only for Premium namespaces.
   * messagingUnits would be set to `undefined` for Basic and Standard namespaces.
   */
  messagingUnits: number | undefined;
}

/**
 * Represents the client options of the `ServiceBusAdministrationClient`.
 */
export interface ServiceBusAdministrationClientOptions {
  /**
   * Service version of the ATOM API.
   *
   * Currently supported = "2021-05" | "2017-04"
   *
   * Defaults to "2021-05".
   */
  serviceVersion?: '2021-05' | '2017-04';
  /**
   * Options that control how to retry failed requests.
   */
  retryOptions?: import('./retry.js').RetryOptions;
  /** Sluice: another fetch (a proxy, a polyfill). */
  fetch?: typeof fetch;
}
