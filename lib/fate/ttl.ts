/** Time-to-live arithmetic (T1-T3). Pure: times are epoch milliseconds. */

/** T1: the smallest of the message's, the entity's and (for a subscription) the topic's TTL. */
export function effectiveTimeToLive(...ttls: (number | null | undefined)[]): number | null {
  const given = ttls.filter((t): t is number => typeof t === 'number');
  return given.length === 0 ? null : Math.min(...given);
}

/**
 * T3: a scheduled message is enqueued at its scheduled time; a schedule in the past means now.
 */
export function enqueueTime(now: number, scheduledEnqueueTime: number | null | undefined): number {
  return scheduledEnqueueTime !== undefined && scheduledEnqueueTime !== null && scheduledEnqueueTime > now ? scheduledEnqueueTime : now;
}

/** T2: enqueued time + effective TTL; unlimited gives none. */
export function expiresAt(enqueuedAt: number, timeToLive: number | null): number | null {
  return timeToLive === null ? null : enqueuedAt + timeToLive;
}

/** T4: a message is expired from its `expiresAt` on. */
export const isExpired = (expires: number | null | undefined, now: number) => expires !== undefined && expires !== null && expires <= now;
