/**
 * Application properties as Service Bus's REST data plane carries them: one HTTP header per
 * property, its type told by its spelling ("Message properties" in Microsoft's REST
 * reference). A quoted value is a string, or a DateTime when the quoted text is an RFC 1123
 * date; `true`/`false` (exactly) are booleans; an integer is an Int64, any other decimal
 * number a double; anything else is refused, as Service Bus refuses the message.
 *
 * Sluice keeps string, number, boolean and null values; a DateTime is kept as ISO 8601 text
 * and named in the reserved `$sluice-types` property (`{"dates": [...]}`), as `sluice/client`
 * does for a Date, so the SDK gets a Date back and REST receivers a quoted RFC 1123 date.
 */
import { badRequest } from '../../errors.js';
import type { PropertyValue } from '../../messages/schema.js';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * `Sun, 06 Nov 1994 08:49:37 GMT`. azure-common's RFC1123 formatter writes `GMT+0000` (and
 * azure-sb sends property dates so), which is read as the same instant.
 */
const RFC1123 = /^(Sun|Mon|Tue|Wed|Thu|Fri|Sat), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT(?:[+-]0000)?$/;

/** An RFC 1123 date to epoch ms, or undefined when the text is not one (a date that does not exist included). */
export function parseRfc1123(text: string): number | undefined {
  const m = RFC1123.exec(text.trim());
  if (!m) return undefined;
  const [, day, date, month, year, hh, mm, ss] = m as unknown as string[];
  const monthIndex = MONTHS.indexOf(month!);
  const at = new Date(Date.UTC(Number(year), monthIndex, Number(date), Number(hh), Number(mm), Number(ss)));
  // A day that does not exist (31 Feb) or a weekday that does not match is no date.
  if (at.getUTCMonth() !== monthIndex || at.getUTCDate() !== Number(date) || Number(hh) > 23 || Number(mm) > 59 || Number(ss) > 59) return undefined;
  if (DAYS[at.getUTCDay()] !== day) return undefined;
  return at.getTime();
}

/** Epoch ms as an RFC 1123 date (whole seconds, as Service Bus writes them). */
export const formatRfc1123 = (ms: number): string => new Date(ms).toUTCString();

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A header's value as a property: its type from its spelling. `dated` says it was a DateTime (kept as ISO 8601 text). */
export function parsePropertyValue(value: string, field: string): { value: PropertyValue; dated?: boolean } {
  const v = value.trim();
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) {
    const text = v.slice(1, -1);
    const at = parseRfc1123(text);
    return at === undefined ? { value: text } : { value: new Date(at).toISOString(), dated: true };
  }
  if (v === 'true') return { value: true };
  if (v === 'false') return { value: false };
  if (INTEGER.test(v)) {
    const n = Number(v);
    if (!Number.isSafeInteger(n)) throw badRequest(field, 'is an integer beyond 2^53 that Sluice cannot keep exactly; send it quoted, as a string');
    return { value: n };
  }
  if (DECIMAL.test(v)) {
    const n = Number(v);
    if (!Number.isFinite(n)) throw badRequest(field, 'is a number beyond the range of a double');
    return { value: n };
  }
  throw badRequest(field, 'must be a quoted string ("text"), a quoted RFC 1123 date, a number, true or false');
}

/** A property's value as a header value, or undefined when no header can carry it (null, or text a header cannot hold). */
export function formatPropertyValue(value: PropertyValue, dated: boolean): string | undefined {
  if (value === null) return undefined;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return String(value);
  if (dated) {
    const at = Date.parse(value);
    if (Number.isFinite(at)) return `"${formatRfc1123(at)}"`;
  }
  return isHeaderText(value) ? `"${value}"` : undefined;
}

/** Text an HTTP header value can carry as it is: visible ISO-8859-1 and spaces, no controls. */
export const isHeaderText = (text: string) => /^[\x20-\x7e\xa0-\xff]*$/.test(text);

/** An HTTP token (RFC 9110 §5.6.2): what a header name may be. */
export const isToken = (name: string) => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name);
