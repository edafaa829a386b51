/**
 * Every rule about time reads a Clock. Lambda uses the system clock; the local runtime and
 * the tests use a ManualClock they can move forward, so no test sleeps for minutes.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Waits in real time (long polling); a test clock may resolve at once. */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Real time plus an offset that only grows. Never behind real time, so DynamoDB's own TTL
 * (which reads the real clock) can only remove items this clock also sees as expired.
 */
export class OffsetClock implements Clock {
  constructor(private offsetMs = 0) {}

  now(): number {
    return Date.now() + this.offsetMs;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  get offset(): number {
    return this.offsetMs;
  }

  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError('the clock only moves forward');
    this.offsetMs += ms;
    return this.now();
  }
}
