import { parseIsoDuration } from '../../lib/durations.js';

const msPer = {
  weeks: 7 * 24 * 3600_000,
  days: 24 * 3600_000,
  hours: 3600_000,
  minutes: 60_000,
  seconds: 1000,
} as const;

/**
 * How many milliseconds an ISO 8601 duration (`PT6M`, `P1DT2H`, `PT0.5S`) moves a clock
 * forward from `fromMs`, read by the API's one duration parser. Years and months are
 * calendar units (UTC) here and must be whole. Throws a RangeError, with a message fit for a
 * 400, on anything else or a negative one.
 */
export function durationToMs(text: string, fromMs: number): number {
  let d;
  try {
    d = parseIsoDuration(text);
  } catch (error) {
    throw new RangeError(
      /negative/.test((error as Error).message) ? 'the clock only moves forward; the duration must not be negative' : (error as Error).message,
    );
  }
  if (!Number.isInteger(d.years) || !Number.isInteger(d.months)) {
    throw new RangeError('years and months must be whole numbers');
  }
  let ms = 0;
  if (d.years || d.months) {
    const from = new Date(fromMs);
    const to = new Date(fromMs);
    to.setUTCFullYear(from.getUTCFullYear() + d.years, from.getUTCMonth() + d.months);
    ms += to.getTime() - fromMs;
  }
  ms += d.weeks * msPer.weeks;
  ms += d.days * msPer.days;
  ms += d.hours * msPer.hours;
  ms += d.minutes * msPer.minutes;
  ms += d.seconds * msPer.seconds;
  ms = Math.round(ms);
  if (!Number.isSafeInteger(ms)) throw new RangeError(`"${text.slice(0, 40)}" is too long`);
  return ms;
}
