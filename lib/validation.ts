import * as z from 'zod/mini';
import { en } from 'zod/locales';
import { BrokerError } from './errors.js';
import { formatDuration, parseDuration } from './durations.js';

// zod/mini (the functional API, small enough for the Lambda bundles) loads no messages of its
// own; the English ones are the words the 400s quote (B2), as the classic API gives them.
// Imported by name: `z.locales.en()` would bundle every language.
z.config(en());

/**
 * A schema only the OpenAPI document and the tests read (what an answer looks like), made on
 * first use and kept. zod's constructors are calls, which a bundler must keep even when
 * nothing reads their result: made at load, these would ride in every Lambda bundle and be
 * made at every cold start. Each use is marked pure, so a bundle that never calls it drops it.
 */
export function docSchema<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

/** Fails a transform (a mini transform is handed the parse payload itself) with `message`. */
function refuse(ctx: z.core.ParsePayload, message: string): never {
  ctx.issues.push({ code: 'custom', message, input: ctx.value });
  return z.NEVER;
}

/** Turns the first zod issue into a 400 that names the field (B2). */
export function parseOrThrow<S extends z.ZodMiniType>(schema: S, input: unknown, prefix = ''): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = [prefix, ...issue.path.map(String)].filter(Boolean).join('.') || prefix || 'body';
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const field = [path === 'body' ? '' : path, key].filter(Boolean).join('.');
    throw new BrokerError('BadRequest', `${field}: unknown field`, { field });
  }
  if (issue.code === 'invalid_type' && /received undefined/.test(message)) message = 'is required';
  throw new BrokerError('BadRequest', `${path}: ${message}`, { field: path });
}

/**
 * Beyond this a duration is "unlimited": Service Bus writes unlimited as TimeSpan.MaxValue
 * (P10675199DT2H48M5.4775807S), and no instant that far ahead can be represented anyway.
 */
export const UNLIMITED_ABOVE_MS = 10_000 * 365 * 24 * 3600 * 1000;

/** A duration where a huge value means unlimited (null): time to live, auto-delete on idle. */
export function unlimitedDurationField(bounds: { min?: number; minText?: string } = {}) {
  return durationField({ ...bounds, allowUnlimited: true });
}

/**
 * How a duration field is documented (docs/openapi.json): JSON Schema has no duration bounds,
 * so they are stated in words and as `x-minimum-duration` / `x-maximum-duration`.
 */
function durationMeta(bounds: { min?: number; max?: number; allowUnlimited?: boolean }) {
  const min = bounds.min === undefined ? undefined : formatDuration(bounds.min);
  const max = bounds.max === undefined ? undefined : formatDuration(bounds.max);
  const parts = ['ISO 8601 duration (e.g. "PT30S"; years and months are refused)'];
  if (min) parts.push(`at least ${min}`);
  if (max) parts.push(`at most ${max}`);
  if (bounds.allowUnlimited) parts.push("a huge value such as Service Bus's TimeSpan.MaxValue means unlimited");
  return {
    format: 'duration',
    description: `${parts.join('; ')}.`,
    ...(min ? { 'x-minimum-duration': min } : {}),
    ...(max ? { 'x-maximum-duration': max } : {}),
    ...(bounds.allowUnlimited ? { 'x-unlimited': true } : {}),
  };
}

type DurationBounds = { min?: number; max?: number; minText?: string; maxText?: string; allowUnlimited?: boolean };

/**
 * Each duration field's text schema and bounds, noted for the document as `ownRecordDocs`
 * notes records: `describeDurations` writes their words (`durationMeta`) into zod's registry
 * when infra/openapi converts the schemas, so the words ride in no Lambda bundle.
 */
const durationDocs = new Map<z.ZodMiniType, DurationBounds>();

/** Registers what the document says of every duration field made so far. */
export function describeDurations(): void {
  for (const [schema, bounds] of durationDocs) z.globalRegistry.add(schema, durationMeta(bounds));
}

/** An ISO 8601 duration within bounds, as milliseconds. */
export function durationField(bounds: DurationBounds = {}) {
  const text = z.string();
  durationDocs.set(text, bounds);
  return z.pipe(
    text,
    z.transform((text: string, ctx): number => {
      let ms: number;
      try {
        ms = parseDuration(text, 'duration');
      } catch (e) {
        return refuse(ctx, e instanceof Error ? e.message.replace(/^duration: /, '') : 'invalid duration');
      }
      if (ms > UNLIMITED_ABOVE_MS) {
        if (bounds.allowUnlimited) return Number.POSITIVE_INFINITY;
        return refuse(ctx, 'is too large');
      }
      if (bounds.min !== undefined && ms < bounds.min) {
        return refuse(ctx, `must be at least ${bounds.minText ?? `${bounds.min} ms`}`);
      }
      if (bounds.max !== undefined && ms > bounds.max) {
        return refuse(ctx, `must be at most ${bounds.maxText ?? `${bounds.max} ms`}`);
      }
      return ms;
    }),
  );
}

/** Decimal string of a non-negative 64-bit integer (S2). */
export const sequenceNumberText = z.string().check(
  z.regex(/^\d{1,19}$/, 'must be a sequence number: a decimal string'),
  z.refine((s) => !/^\d{1,19}$/.test(s) || BigInt(s) <= 9223372036854775807n, 'is out of range for a 64-bit sequence number'),
);

export function parseSequenceNumber(text: string, field = 'sequenceNumber'): bigint {
  return BigInt(parseOrThrow(sequenceNumberText, text, field));
}

const instantShape = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/;
const daysIn = (year: number, month: number) =>
  new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)) ? 1 : 0);

/**
 * An ISO 8601 instant with a zone (`2026-11-20T12:05:00Z`, `...+01:30`) to epoch ms, or
 * undefined. Every part is checked against the calendar: Date.parse rolls "2027-02-30"
 * over to 2 March, and this never does. Fractions beyond milliseconds are truncated.
 */
export function parseInstant(text: string): number | undefined {
  const m = instantShape.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second = 0] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) return undefined;
  const offsetHours = Number(m[9] ?? 0);
  const offsetMinutes = Number(m[10] ?? 0);
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const millis = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'));
  const at = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, millis));
  at.setUTCFullYear(year); // Date.UTC reads years 0-99 as 1900-1999
  return at.getTime() - (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
}

/** The one validator of instants in request bodies: a strict ISO 8601 instant, as epoch ms. */
export const instantField = z.pipe(
  z.string(),
  z.transform((text: string, ctx): number => {
    const ms = parseInstant(text);
    return ms === undefined ? refuse(ctx, 'must be an ISO 8601 instant that exists, such as "2026-11-20T12:05:00Z"') : ms;
  }),
);

/**
 * The records `ownRecord` wraps, by the schema that stands for each in the document:
 * infra/openapi writes each stand-in as the JSON Schema of its record. Converting a schema to
 * JSON Schema is the generator's work, never a Lambda's, so the records are only noted here.
 */
export const ownRecordDocs = new Map<z.ZodMiniType, z.ZodMiniRecord>();

/**
 * A record that keeps every name it is given, `__proto__` included. zod's own z.record
 * skips `__proto__` (to protect the plain object it builds), which silently drops a
 * property a client named so; this validates every entry with the record's key and value
 * schemas and builds a null-prototype object, where `__proto__` is a name like any other and
 * no name reaches Object.prototype. The document (OpenAPI) shows it as the record it wraps
 * (`ownRecordDocs`).
 */
export function ownRecord<K extends z.core.$ZodRecordKey, V extends z.ZodMiniType>(record: z.ZodMiniRecord<K, V>) {
  const { keyType, valueType } = record._zod.def;
  const own = z.transform((input: unknown, ctx) => {
    const parsed = record.safeParse(input);
    const issues = parsed.success ? [] : [...parsed.error.issues];
    const out = Object.create(null) as Record<string, z.output<V>>;
    if (parsed.success) {
      const values = parsed.data as Record<string, z.output<V>>;
      for (const key of Object.keys(input as object)) {
        if (key !== '__proto__') {
          out[key] = values[key]!;
          continue;
        }
        // The one name z.record passed over: checked here with the same schemas.
        const keyResult = z.safeParse(keyType, key);
        if (!keyResult.success) issues.push(...keyResult.error.issues.map((i) => ({ ...i, path: [key, ...i.path] })));
        const valueResult = z.safeParse(valueType, (input as Record<string, unknown>)[key]);
        if (valueResult.success) out[key] = valueResult.data as z.output<V>;
        else issues.push(...valueResult.error.issues.map((i) => ({ ...i, path: [key, ...i.path] })));
      }
    }
    for (const issue of issues) ctx.issues.push({ code: 'custom', message: issue.message, path: issue.path, input: issue.input });
    return issues.length > 0 ? z.NEVER : out;
  });
  const standIn = z.custom<Record<string, z.output<V>>>(() => true);
  ownRecordDocs.set(standIn, record);
  return z.pipe(own, standIn);
}

/**
 * A whole number written in a query string: decimal digits only. Number() and z.coerce also
 * read "0x10", "1e1", " 5" and "" (as 0); a query number is never anything but digits.
 */
export const queryInteger = (min: number, max: number) =>
  z
    .pipe(
      z.transform((text: unknown, ctx): number => {
        if (typeof text !== 'string' || !/^\d+$/.test(text)) {
          return refuse(ctx, `must be a whole number from ${min} to ${max} in decimal digits`);
        }
        return Number(text);
      }),
      z.number().check(z.int(), z.minimum(min), z.maximum(max)),
    )
    .check(z.meta({ type: 'integer', minimum: min, maximum: max })); // a query string: digits in, a number out
