/** The Atom management plane's vocabulary: namespaces, and the description elements Sluice keeps (one table for reading and writing). */
import { durations } from '../../durations.js';

export type DescriptionKind = 'Queue' | 'Topic' | 'Subscription' | 'Rule';

export const ATOM_NS = 'http://www.w3.org/2005/Atom';
export const SB_NS = 'http://schemas.microsoft.com/netservices/2010/10/servicebus/connect';
export const XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance';
export const XSD_NS = 'http://www.w3.org/2001/XMLSchema';
export const COUNT_NS = 'http://schemas.microsoft.com/netservices/2011/06/servicebus';
export const API_VERSION = '2021-05';

/** TimeSpan.MaxValue, Service Bus's "unlimited"; .NET cannot read anything larger. */
export const UNLIMITED_DURATION = 'P10675199DT2H48M5.4775807S';
/** Any duration this long or longer reads as unlimited. */
export const UNLIMITED_MS = 10_675_199 * durations.DAY;

export type ElementType = 'bool' | 'int' | 'duration' | 'unlimited' | 'status' | 'forward';

/** Element name → the Sluice property it carries, its type, and the kinds that have it. */
export const ENTITY_ELEMENTS: Record<string, { key: string; type: ElementType; kinds: readonly DescriptionKind[] }> = {
  LockDuration: { key: 'lockDuration', type: 'duration', kinds: ['Queue', 'Subscription'] },
  MaxSizeInMegabytes: { key: 'maxSizeInMegabytes', type: 'int', kinds: ['Queue', 'Topic'] },
  RequiresDuplicateDetection: { key: 'requiresDuplicateDetection', type: 'bool', kinds: ['Queue', 'Topic'] },
  RequiresSession: { key: 'requiresSession', type: 'bool', kinds: ['Queue', 'Subscription'] },
  DefaultMessageTimeToLive: { key: 'defaultMessageTimeToLive', type: 'unlimited', kinds: ['Queue', 'Topic', 'Subscription'] },
  DeadLetteringOnMessageExpiration: { key: 'deadLetteringOnMessageExpiration', type: 'bool', kinds: ['Queue', 'Subscription'] },
  DeadLetteringOnFilterEvaluationExceptions: { key: 'deadLetteringOnFilterEvaluationExceptions', type: 'bool', kinds: ['Subscription'] },
  DuplicateDetectionHistoryTimeWindow: { key: 'duplicateDetectionHistoryTimeWindow', type: 'duration', kinds: ['Queue', 'Topic'] },
  MaxDeliveryCount: { key: 'maxDeliveryCount', type: 'int', kinds: ['Queue', 'Subscription'] },
  Status: { key: 'status', type: 'status', kinds: ['Queue', 'Topic', 'Subscription'] },
  ForwardTo: { key: 'forwardTo', type: 'forward', kinds: ['Queue', 'Subscription'] },
  AutoDeleteOnIdle: { key: 'autoDeleteOnIdle', type: 'unlimited', kinds: ['Queue', 'Topic', 'Subscription'] },
  EnablePartitioning: { key: 'enablePartitioning', type: 'bool', kinds: ['Queue', 'Topic'] },
  ForwardDeadLetteredMessagesTo: { key: 'forwardDeadLetteredMessagesTo', type: 'forward', kinds: ['Queue', 'Subscription'] },
};

/** Entity names as the Atom paths spell their collections. */
export const SUBSCRIPTIONS = 'Subscriptions';
export const RULES = 'Rules';
