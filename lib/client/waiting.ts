/**
 * How a subscriber waits for messages. Waiting is the expensive part of consuming on a
 * serverless broker: a server long poll keeps a Lambda running for as long as it waits.
 * `subscribe` asks a Waiter instead of polling directly, so a cheaper signal can replace the
 * long poll without touching the receive loop:
 *
 * - `longPollWaiter` (the default for now): every receive waits on the broker (maxWaitTime).
 * - `hintsWaiter`: receives return at once; after an empty one the subscriber waits for an
 *   availability hint for its entity (lib/client/notifications.ts, over WebSocket: no Lambda
 *   runs while nothing arrives), or for `fallbackMs` in case a hint was missed.
 */

/** The shape lib/client/notifications.ts exports (kept structural so either can land first). */
export interface AvailabilityHints {
  wait(entityPath: string, fallbackMs: number, signal?: AbortSignal): Promise<void>;
  close(): void;
}

export interface Waiter {
  /** maxWaitTime to ask of the broker on each receive, in ms (at most 20 s, API.md). */
  readonly pollWaitMs: number;
  /** After an empty receive: resolves when it is worth receiving again (or when `signal` aborts). */
  idle(entityPath: string, signal: AbortSignal): Promise<void>;
  close(): void;
}

/**
 * Server long poll. Shorter than the broker's 20 s ceiling because `close()` waits for the
 * open poll to come back (a message it brings is abandoned at once rather than left locked).
 */
export function longPollWaiter(pollWaitMs = 5_000): Waiter {
  return { pollWaitMs, idle: async () => {}, close: () => {} };
}

export function hintsWaiter(hints: AvailabilityHints, fallbackMs = 60_000): Waiter {
  return {
    pollWaitMs: 0,
    idle: (entityPath, signal) => hints.wait(entityPath, fallbackMs, signal).catch(() => {}),
    close: () => hints.close(),
  };
}

/** What `subscribe` uses unless told otherwise; the lead swaps in hintsWaiter at merge. */
export let defaultWaiter: () => Waiter = () => longPollWaiter();

export function setDefaultWaiter(make: () => Waiter): void {
  defaultWaiter = make;
}
