/** Rule filter and action bodies as the management API takes them (docs/http-api.md, "Management"). */
import * as z from 'zod';
import { MAX_SQL_LENGTH } from './parser.js';
import { ownRecord } from '../validation.js';
import { CORRELATION_SYSTEM_KEYS, type CorrelationSystemKey, type CorrelationSystemProperties } from './correlation-keys.js';

export interface CorrelationFilterSpec extends CorrelationSystemProperties {
  properties?: Record<string, string | number | boolean>;
}

export type FilterSpec = { sql: string } | { correlation: CorrelationFilterSpec } | { true: Record<string, never> } | { false: Record<string, never> };

export interface ActionSpec {
  sql: string;
}

const sqlText = z.string().min(1).max(MAX_SQL_LENGTH);

const systemFields = Object.fromEntries(CORRELATION_SYSTEM_KEYS.map((key) => [key, z.string().optional()])) as Record<
  CorrelationSystemKey,
  z.ZodOptional<z.ZodString>
>;

export const correlationFilterSchema = z
  .strictObject({
    ...systemFields,
    properties: ownRecord(z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))).optional(),
  })
  // An empty correlation filter would silently match everything; that is what {"true": {}} is for.
  .refine((c) => Object.entries(c).some(([key, v]) => key !== 'properties' && v !== undefined) || Object.keys(c.properties ?? {}).length > 0, {
    message: 'A correlation filter needs at least one property to match',
  });

export const filterSpecSchema: z.ZodType<FilterSpec> = z.union([
  z.strictObject({ sql: sqlText }),
  z.strictObject({ correlation: correlationFilterSchema }),
  z.strictObject({ true: z.strictObject({}) }),
  z.strictObject({ false: z.strictObject({}) }),
]);

export const actionSpecSchema: z.ZodType<ActionSpec> = z.strictObject({ sql: sqlText });
