import * as z from 'zod';
import { BrokerError } from './errors.js';
import { parseDuration } from './durations.js';

/** Turns the first zod issue into a 400 that names the field (B2). */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, prefix = ''): z.output<S> {
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

/** An ISO 8601 duration within bounds, as milliseconds. */
export function durationField(bounds: { min?: number; max?: number; minText?: string; maxText?: string; allowUnlimited?: boolean } = {}) {
  return z.string().transform((text, ctx): number => {
    let ms: number;
    try {
      ms = parseDuration(text, 'duration');
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message.replace(/^duration: /, '') : 'invalid duration' });
      return z.NEVER;
    }
    if (ms > UNLIMITED_ABOVE_MS) {
      if (bounds.allowUnlimited) return Number.POSITIVE_INFINITY;
      ctx.addIssue({ code: 'custom', message: 'is too large' });
      return z.NEVER;
    }
    if (bounds.min !== undefined && ms < bounds.min) {
      ctx.addIssue({ code: 'custom', message: `must be at least ${bounds.minText ?? `${bounds.min} ms`}` });
      return z.NEVER;
    }
    if (bounds.max !== undefined && ms > bounds.max) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${bounds.maxText ?? `${bounds.max} ms`}` });
      return z.NEVER;
    }
    return ms;
  });
}

/** Decimal string of a non-negative 64-bit integer (S2). */
export const sequenceNumberText = z
  .string()
  .regex(/^\d{1,19}$/, 'must be a sequence number: a decimal string')
  .refine((s) => !/^\d{1,19}$/.test(s) || BigInt(s) <= 9223372036854775807n, 'is out of range for a 64-bit sequence number');

export function parseSequenceNumber(text: string, field = 'sequenceNumber'): bigint {
  return BigInt(parseOrThrow(sequenceNumberText, text, field));
}
