/**
 * How a subscriber waits for messages. Waiting is the expensive part of consuming on a
 * serverless broker: a server long poll keeps a Lambda running for as long as it waits.
 * `subscribe` asks a Waiter instead of polling directly, so a cheaper signal can replace the
 * long poll without touching the receive loop:
 *
 * - `longPollWaiter`: every receive waits on the broker (maxWaitTime), holding a Lambda meanwhile.
 * - `hintsWaiter` (the default): receives return at once; after an empty one the subscriber waits for an
 *   availability hint for its entity (lib/client/notifications.ts, over WebSocket: no Lambda
 *   runs while nothing arrives), or for `fallbackMs` in case a hint was missed.
 */
import { openAvailabilityHints, type AvailabilityHints } from './notifications.js';
import type { HttpTransport } from './transport.js';

/**
 * How `subscribe` waits after an empty receive (Sluice's own, not in @azure/service-bus): a long
 * poll on the broker (`longPollWaiter`), or availability hints with a fallback poll (`hintsWaiter`,
 * the default), which keeps a waiting consumer from holding a Lambda.
 */
export interface Waiter {
  /** maxWaitTime to ask of the broker on each receive, in ms (at most 20 s, docs/http-api.md). */
  readonly pollWaitMs: number;
  /**
   * After an empty receive: resolves when it is worth receiving again, or when `signal` aborts.
   *
   * @param entityPath - The entity's HTTP path (`/queues/q`).
   * @param signal - Ends the wait when the subscription closes.
   */
  idle(entityPath: string, signal: AbortSignal): Promise<void>;
  /** Releases what the waiter holds (the hint socket); called when the subscription closes. */
  close(): void;
}

/**
 * Waits by long polling: every receive waits on the broker for up to `pollWaitMs`. Simple, but each
 * waiting receive keeps a broker function running (and billed) while it waits.
 *
 * @param pollWaitMs - How long each receive waits on the broker, in ms (at most 20,000). Shorter than
 * the broker's ceiling because `close()` waits for the open poll to come back.
 * @returns A waiter for `SubscribeOptions.waiter`.
 */
export function longPollWaiter(pollWaitMs = 5_000): Waiter {
  return { pollWaitMs, idle: async () => {}, close: () => {} };
}

/**
 * How long a subscriber waits without a hint before it polls anyway: the bound on the delay a
 * lost hint can cause. Five minutes keeps a waiting consumer under $0.10 a month (README,
 * "Waiting for messages"; bench/scenarios/waiting.ts measures with this value).
 */
export const DEFAULT_FALLBACK_POLL_MS = 5 * 60_000;

/**
 * Waits on availability hints: receives return at once, and after an empty one the subscriber waits
 * for a hint about its entity, or for `fallbackMs` in case a hint was lost. No broker function runs
 * while nothing arrives. The default of `subscribe`.
 *
 * @param hints - The hints to wait on (`openAvailabilityHints`).
 * @param fallbackMs - The longest wait without a hint, in ms (five minutes by default: the bound on
 * the delay a lost hint can cause).
 * @returns A waiter for `SubscribeOptions.waiter`; closing it closes `hints`.
 */
export function hintsWaiter(hints: AvailabilityHints, fallbackMs = DEFAULT_FALLBACK_POLL_MS): Waiter {
  return {
    pollWaitMs: 0,
    idle: (entityPath, signal) => hints.wait(entityPath, fallbackMs, signal).catch(() => {}),
    close: () => hints.close(),
  };
}

/**
 * What `subscribe` waits with unless told otherwise: availability hints over the deployment's
 * WebSocket (no function runs for a waiting subscriber), with a slow fallback poll for a
 * hint that was lost. One socket per subscription, closed with it.
 */
export function defaultWaiter(transport: Pick<HttpTransport, 'baseUrl' | 'tokenFor'>): Waiter {
  return hintsWaiter(openAvailabilityHints({ endpoint: transport.baseUrl, token: (audience) => transport.tokenFor(audience) }));
}
