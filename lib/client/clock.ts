/**
 * What lock renewal reads the time from and waits on. A lock's end comes from the broker's
 * clock, so renewal compares it with this clock: the system's in an application, the broker's
 * own in a test that moves the local runtime's clock (N4 without sleeping through lock
 * durations).
 */
import { unrefTimeout } from './retry.js';

/**
 * The clock lock auto-renewal reads and waits on (`ServiceBusClientOptions.clock`): the
 * system's when not given.
 */
export interface ClientClock {
  /**
   * The time now.
   *
   * @returns Milliseconds since the epoch.
   */
  now(): number;
  /**
   * Runs `fn` once `ms` have passed; never holds a Node process open.
   *
   * @param ms - How long to wait, in milliseconds.
   * @param fn - What to run then.
   * @returns A function that cancels the wait.
   */
  after(ms: number, fn: () => void): () => void;
}

export const systemClientClock: ClientClock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = unrefTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};
