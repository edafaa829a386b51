import { parse } from 'tinyduration';

const msPer = {
  weeks: 7 * 24 * 3600_000,
  days: 24 * 3600_000,
  hours: 3600_000,
  minutes: 60_000,
  seconds: 1000,
} as const;

// tinyduration's pattern is unanchored and lets each component carry its own sign; this one
// is the whole of an ISO 8601 duration, optionally negative as a whole (refused below).
const shape = /^-?P(?!$)(\d+(?:[.,]\d+)?Y)?(\d+(?:[.,]\d+)?M)?(\d+(?:[.,]\d+)?W)?(\d+(?:[.,]\d+)?D)?(T(?=\d)(\d+(?:[.,]\d+)?H)?(\d+(?:[.,]\d+)?M)?(\d+(?:[.,]\d+)?S)?)?$/;

/**
 * How many milliseconds an ISO 8601 duration (`PT6M`, `P1DT2H`, `PT0.5S`) moves a clock
 * forward from `fromMs`. Years and months are calendar units (UTC) and must be whole.
 * Throws a RangeError, with a message fit for a 400, on anything else or a negative one.
 */
export function durationToMs(text: string, fromMs: number): number {
  if (!shape.test(text)) throw new RangeError(`"${text}" is not an ISO 8601 duration such as PT6M`);
  const d = parse(text);
  if (d.negative) throw new RangeError('the clock only moves forward; the duration must not be negative');
  const parts = [d.years, d.months, d.weeks, d.days, d.hours, d.minutes, d.seconds];
  if (parts.some((v) => v !== undefined && (!Number.isFinite(v) || v < 0))) {
    throw new RangeError(`"${text}" is not a valid duration`);
  }
  if (!Number.isInteger(d.years ?? 0) || !Number.isInteger(d.months ?? 0)) {
    throw new RangeError('years and months must be whole numbers');
  }
  let ms = 0;
  if (d.years || d.months) {
    const from = new Date(fromMs);
    const to = new Date(fromMs);
    to.setUTCFullYear(from.getUTCFullYear() + (d.years ?? 0), from.getUTCMonth() + (d.months ?? 0));
    ms += to.getTime() - fromMs;
  }
  ms += (d.weeks ?? 0) * msPer.weeks;
  ms += (d.days ?? 0) * msPer.days;
  ms += (d.hours ?? 0) * msPer.hours;
  ms += (d.minutes ?? 0) * msPer.minutes;
  ms += (d.seconds ?? 0) * msPer.seconds;
  ms = Math.round(ms);
  if (!Number.isSafeInteger(ms)) throw new RangeError(`"${text}" is too long`);
  return ms;
}
