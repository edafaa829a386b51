import { parse as parseIso } from 'tinyduration';
import { badRequest } from './errors.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * ISO 8601 duration to milliseconds. Years and months have no fixed length, so they are
 * refused rather than guessed; weeks, days and time parts (with fractional seconds) are fine.
 */
export function parseDuration(text: unknown, field: string): number {
  if (typeof text !== 'string') throw badRequest(field, 'must be an ISO 8601 duration string such as "PT30S"');
  let d;
  try {
    d = parseIso(text);
  } catch {
    throw badRequest(field, `'${text.slice(0, 40)}' is not an ISO 8601 duration (e.g. "PT30S", "P14D")`);
  }
  if (d.negative) throw badRequest(field, 'must not be negative');
  if (d.years || d.months) throw badRequest(field, 'years and months are not allowed; use days (e.g. "P30D")');
  const ms =
    (d.weeks ?? 0) * 7 * DAY +
    (d.days ?? 0) * DAY +
    (d.hours ?? 0) * HOUR +
    (d.minutes ?? 0) * MINUTE +
    Math.round((d.seconds ?? 0) * SECOND);
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
