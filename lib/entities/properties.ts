import * as z from 'zod/mini';
import { durations, formatDuration } from '../durations.js';
import { docSchema, durationField, parseOrThrow } from '../validation.js';
import { badRequest } from '../errors.js';
import type { EntityKind } from './kinds.js';
import { entityPathKey, parseEntityTarget, type EntityRef } from './paths.js';

export type { EntityKind } from './kinds.js';

const { SECOND, MINUTE, DAY } = durations;

export const entityStatuses = ['Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled'] as const;
export type EntityStatus = (typeof entityStatuses)[number];

/** Stored form: durations in milliseconds, `null` for unlimited. */
export interface EntityProperties {
  lockDuration: number;
  maxDeliveryCount: number;
  defaultMessageTimeToLive: number | null;
  deadLetteringOnMessageExpiration: boolean;
  deadLetteringOnFilterEvaluationExceptions: boolean;
  autoDeleteOnIdle: number | null;
  requiresSession: boolean;
  forwardTo: string | null;
  forwardDeadLetteredMessagesTo: string | null;
  status: EntityStatus;
  requiresDuplicateDetection: boolean;
  duplicateDetectionHistoryTimeWindow: number;
  maxSizeInMegabytes: number;
  enablePartitioning: boolean;
}

/** E2 defaults. */
export const defaults: EntityProperties = {
  lockDuration: MINUTE,
  maxDeliveryCount: 10,
  defaultMessageTimeToLive: null,
  deadLetteringOnMessageExpiration: false,
  deadLetteringOnFilterEvaluationExceptions: false,
  autoDeleteOnIdle: null,
  requiresSession: false,
  forwardTo: null,
  forwardDeadLetteredMessagesTo: null,
  status: 'Active',
  requiresDuplicateDetection: false,
  duplicateDetectionHistoryTimeWindow: 10 * MINUTE,
  maxSizeInMegabytes: 1024,
  enablePartitioning: false,
};

// Unlimited may be written as null or as a huge duration (Service Bus's TimeSpan.MaxValue).
const nullableDuration = (bounds: Parameters<typeof durationField>[0]) =>
  z.pipe(
    z.nullable(durationField({ ...bounds, allowUnlimited: true })),
    z.transform((ms: number | null) => (ms === null || ms === Number.POSITIVE_INFINITY ? null : ms)),
  );
const entityPath = z.nullable(
  z.string().check(z.regex(/^(?:(?:queues|topics)\/)?[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/, 'must name a queue or topic, e.g. "queues/orders"')),
);

const fields = {
  lockDuration: durationField({ min: 5 * SECOND, max: 5 * MINUTE, minText: 'PT5S', maxText: 'PT5M' }),
  maxDeliveryCount: z.number().check(z.int(), z.minimum(1), z.maximum(2_147_483_647)),
  defaultMessageTimeToLive: nullableDuration({ min: SECOND, minText: 'PT1S' }),
  deadLetteringOnMessageExpiration: z.boolean(),
  deadLetteringOnFilterEvaluationExceptions: z.boolean(),
  autoDeleteOnIdle: nullableDuration({ min: 5 * MINUTE, minText: 'PT5M' }),
  requiresSession: z.boolean(),
  // Clones of their own (`check()` copies), each described apart (`describeProperties`).
  forwardTo: entityPath.check(),
  forwardDeadLetteredMessagesTo: entityPath.check(),
  status: z.enum(entityStatuses),
  topicStatus: z.enum(['Active', 'Disabled', 'SendDisabled']),
  requiresDuplicateDetection: z.boolean(),
  duplicateDetectionHistoryTimeWindow: durationField({ min: 20 * SECOND, max: 7 * DAY, minText: 'PT20S', maxText: 'P7D' }),
  maxSizeInMegabytes: z.number().check(z.int(), z.minimum(1), z.maximum(81920)),
  enablePartitioning: z.boolean(),
};

export const queueSchema = z.partial(
  z.strictObject({
    lockDuration: fields.lockDuration,
    maxDeliveryCount: fields.maxDeliveryCount,
    defaultMessageTimeToLive: fields.defaultMessageTimeToLive,
    deadLetteringOnMessageExpiration: fields.deadLetteringOnMessageExpiration,
    autoDeleteOnIdle: fields.autoDeleteOnIdle,
    requiresSession: fields.requiresSession,
    forwardTo: fields.forwardTo,
    forwardDeadLetteredMessagesTo: fields.forwardDeadLetteredMessagesTo,
    status: fields.status,
    requiresDuplicateDetection: fields.requiresDuplicateDetection,
    duplicateDetectionHistoryTimeWindow: fields.duplicateDetectionHistoryTimeWindow,
    maxSizeInMegabytes: fields.maxSizeInMegabytes,
    enablePartitioning: fields.enablePartitioning,
  }),
);

export const topicSchema = z.partial(
  z.strictObject({
    defaultMessageTimeToLive: fields.defaultMessageTimeToLive,
    autoDeleteOnIdle: fields.autoDeleteOnIdle,
    status: fields.topicStatus,
    requiresDuplicateDetection: fields.requiresDuplicateDetection,
    duplicateDetectionHistoryTimeWindow: fields.duplicateDetectionHistoryTimeWindow,
    maxSizeInMegabytes: fields.maxSizeInMegabytes,
    enablePartitioning: fields.enablePartitioning,
  }),
);

export const subscriptionSchema = z.partial(
  z.strictObject({
    lockDuration: fields.lockDuration,
    maxDeliveryCount: fields.maxDeliveryCount,
    defaultMessageTimeToLive: fields.defaultMessageTimeToLive,
    deadLetteringOnMessageExpiration: fields.deadLetteringOnMessageExpiration,
    deadLetteringOnFilterEvaluationExceptions: fields.deadLetteringOnFilterEvaluationExceptions,
    autoDeleteOnIdle: fields.autoDeleteOnIdle,
    requiresSession: fields.requiresSession,
    forwardTo: fields.forwardTo,
    forwardDeadLetteredMessagesTo: fields.forwardDeadLetteredMessagesTo,
    status: fields.status,
  }),
);

const schemas = { queue: queueSchema, topic: topicSchema, subscription: subscriptionSchema };

/** Validates a PUT body: only the given properties, each checked (B2). */
export function parseEntityProperties(kind: EntityKind, body: unknown): Partial<EntityProperties> {
  if (body === undefined || body === null) return {};
  return parseOrThrow(schemas[kind], body) as Partial<EntityProperties>;
}

/** Which properties a kind shows; the rest are stored defaults that do not apply to it. */
export const visibleProperties: Record<EntityKind, (keyof EntityProperties)[]> = {
  queue: Object.keys(queueSchema.shape) as (keyof EntityProperties)[],
  topic: Object.keys(topicSchema.shape) as (keyof EntityProperties)[],
  subscription: Object.keys(subscriptionSchema.shape) as (keyof EntityProperties)[],
};

/** What docs/openapi.json says of the forwarding targets, registered only when it is made (lib/requests/schemas.ts `describeRequests`). */
export const describeProperties = /* @__PURE__ */ docSchema((): true => {
  z.globalRegistry.add(fields.forwardTo, {
    description: 'Auto-forwarding target: "queues/q", "topics/t" or a bare name (a queue or topic); null for none (F2).',
  });
  z.globalRegistry.add(fields.forwardDeadLetteredMessagesTo, { description: 'Where dead-lettered messages are forwarded; null for none (F2).' });
  return true;
});

const durationProps = new Set<keyof EntityProperties>(['lockDuration', 'defaultMessageTimeToLive', 'autoDeleteOnIdle', 'duplicateDetectionHistoryTimeWindow']);

/** How an entity shows a duration (E2): ISO 8601, and null where unlimited. */
const shownDurations = /* @__PURE__ */ docSchema(() => {
  const shownDuration = z.string().check(z.meta({ format: 'duration', description: 'ISO 8601 duration.' }));
  const shownUnlimited = z.nullable(z.string().check(z.meta({ format: 'duration', description: 'ISO 8601 duration; null when unlimited.' })));
  return {
    lockDuration: shownDuration,
    defaultMessageTimeToLive: shownUnlimited,
    autoDeleteOnIdle: shownUnlimited,
    duplicateDetectionHistoryTimeWindow: shownDuration,
  };
});

/**
 * The properties as GET shows them (`presentProperties`): every one a PUT takes, all present,
 * durations in their ISO form.
 */
export const shownPropertiesSchemas = /* @__PURE__ */ docSchema(() => {
  const shown = shownDurations();
  return {
    queue: z.object({ ...z.required(queueSchema).shape, ...shown }),
    topic: z.object({
      ...z.required(topicSchema).shape,
      defaultMessageTimeToLive: shown.defaultMessageTimeToLive,
      autoDeleteOnIdle: shown.autoDeleteOnIdle,
      duplicateDetectionHistoryTimeWindow: shown.duplicateDetectionHistoryTimeWindow,
    }),
    subscription: z.object({
      ...z.required(subscriptionSchema).shape,
      lockDuration: shown.lockDuration,
      defaultMessageTimeToLive: shown.defaultMessageTimeToLive,
      autoDeleteOnIdle: shown.autoDeleteOnIdle,
    }),
  };
});

export type ShownProperties = { [K in EntityKind]: z.input<ReturnType<typeof shownPropertiesSchemas>[K]> };

/** Stored properties in the API's form (ISO durations, null for unlimited). */
export function presentProperties<K extends EntityKind>(kind: K, props: EntityProperties): ShownProperties[K] {
  const out: Record<string, unknown> = {};
  for (const key of visibleProperties[kind]) {
    const value = props[key];
    out[key] = durationProps.has(key) && typeof value === 'number' ? formatDuration(value) : value;
  }
  // The keys are the kind's schema's (visibleProperties); the values are checked by the tests.
  return out as ShownProperties[K];
}

/**
 * Service Bus refuses an entity whose forwardTo or forwardDeadLetteredMessagesTo names the
 * entity itself ("has an auto-forwarding policy to itself"): every message would circle
 * until the hop limit. A bare name means the queue of that name, as when forwarding.
 */
export function assertNotForwardingToItself(ref: EntityRef, given: Partial<EntityProperties>): void {
  for (const field of ['forwardTo', 'forwardDeadLetteredMessagesTo'] as const) {
    const named = given[field];
    if (!named) continue;
    const target: EntityRef = named.includes('/') ? parseEntityTarget(named, field) : { kind: 'queue', name: named };
    if (entityPathKey(target) === entityPathKey(ref)) throw badRequest(field, 'must not name the entity itself');
  }
}
