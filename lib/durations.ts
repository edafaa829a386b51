import { badRequest } from './errors.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The parts of an ISO 8601 duration as written; absent parts are 0. */
export interface DurationParts {
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

const part = (unit: string) => `(?:(\\d+(?:[.,]\\d+)?)${unit})?`;
/**
 * The whole string is one ISO 8601 duration (`P[nY][nM][nW][nD][T[nH][nM][nS]]`) with
 * unsigned parts, at least one of them, and a `T` only before a time part. Anchored at both
 * ends: "PT30Sbanana", "xPT30S" or "P1DT-23H" are not durations with something around them
 * but not durations at all. A leading minus is recognised so it can be refused by name.
 */
const shape = new RegExp(`^(-)?P(?!$)${part('Y')}${part('M')}${part('W')}${part('D')}(?:T(?=\\d)${part('H')}${part('M')}${part('S')})?$`);

/**
 * The one ISO 8601 duration parser (the API's durations and the local clock's advance).
 * Throws a RangeError whose message is fit for a 400.
 */
export function parseIsoDuration(text: string): DurationParts {
  const m = shape.exec(text);
  if (!m) throw new RangeError(`'${text.slice(0, 40)}' is not an ISO 8601 duration (e.g. "PT30S", "P14D")`);
  if (m[1]) throw new RangeError('must not be negative');
  const n = (i: number) => (m[i] === undefined ? 0 : Number(m[i]!.replace(',', '.')));
  return { years: n(2), months: n(3), weeks: n(4), days: n(5), hours: n(6), minutes: n(7), seconds: n(8) };
}

/**
 * ISO 8601 duration to milliseconds. Years and months have no fixed length, so they are
 * refused rather than guessed; weeks, days and time parts (with fractions) are fine.
 */
export function parseDuration(text: unknown, field: string): number {
  if (typeof text !== 'string') throw badRequest(field, 'must be an ISO 8601 duration string such as "PT30S"');
  let d: DurationParts;
  try {
    d = parseIsoDuration(text);
  } catch (e) {
    throw badRequest(field, (e as Error).message);
  }
  if (d.years || d.months) throw badRequest(field, 'years and months are not allowed; use days (e.g. "P30D")');
  const ms = d.weeks * 7 * DAY + d.days * DAY + d.hours * HOUR + d.minutes * MINUTE + Math.round(d.seconds * SECOND);
  if (!Number.isFinite(ms)) throw badRequest(field, 'is too large');
  return ms;
}

/** Milliseconds to the shortest ISO 8601 duration: 90000 -> "PT1M30S", 86400000 -> "P1D". */
export function formatDuration(ms: number): string {
  if (ms === 0) return 'PT0S';
  let rest = ms;
  const days = Math.floor(rest / DAY);
  rest -= days * DAY;
  const hours = Math.floor(rest / HOUR);
  rest -= hours * HOUR;
  const minutes = Math.floor(rest / MINUTE);
  rest -= minutes * MINUTE;
  const seconds = rest / SECOND;
  let out = 'P';
  if (days) out += `${days}D`;
  if (hours || minutes || seconds) {
    out += 'T';
    if (hours) out += `${hours}H`;
    if (minutes) out += `${minutes}M`;
    if (seconds) out += `${Number(seconds.toFixed(3))}S`;
  }
  return out;
}

export const durations = { SECOND, MINUTE, HOUR, DAY };
