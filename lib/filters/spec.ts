/** Rule filter and action bodies as the management API takes them (docs/http-api.md, "Management"). */
import * as z from 'zod';
import { MAX_SQL_LENGTH } from './parser.js';
import { ownRecord } from '../validation.js';
import { PARAMETER_NAME, type ParameterValue } from './parameters.js';
import { CORRELATION_SYSTEM_KEYS, type CorrelationSystemKey, type CorrelationSystemProperties } from './correlation-keys.js';

export interface CorrelationFilterSpec extends CorrelationSystemProperties {
  properties?: Record<string, string | number | boolean>;
}

export type FilterSpec =
  | { sql: string; parameters?: Record<string, ParameterValue> }
  | { correlation: CorrelationFilterSpec }
  | { true: Record<string, never> }
  | { false: Record<string, never> };

export interface ActionSpec {
  sql: string;
  parameters?: Record<string, ParameterValue>;
}

const sqlText = z.string().min(1).max(MAX_SQL_LENGTH);
/** Values for the `@name` references in the SQL text, replaced before it is parsed (Service Bus's SqlFilter.Parameters). */
const sqlParameters = ownRecord(
  z.record(z.string().regex(PARAMETER_NAME, 'a parameter name is @ and an identifier'), z.union([z.string(), z.number(), z.boolean()])),
)
  .optional()
  .meta({ description: 'Values for the `@name` references in `sql`, each replaced by its literal before the text is parsed.' });

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
  z.strictObject({ sql: sqlText, parameters: sqlParameters }),
  z.strictObject({ correlation: correlationFilterSchema }),
  z.strictObject({ true: z.strictObject({}) }),
  z.strictObject({ false: z.strictObject({}) }),
]);

export const actionSpecSchema: z.ZodType<ActionSpec> = z.strictObject({ sql: sqlText, parameters: sqlParameters });
