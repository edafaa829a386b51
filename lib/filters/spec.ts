/** Rule filter and action bodies as the management API takes them (docs/http-api.md, "Management"). */
import * as z from 'zod/mini';
import { MAX_SQL_LENGTH } from './parser.js';
import { docSchema, ownRecord } from '../validation.js';
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

const sqlText = z.string().check(z.minLength(1), z.maxLength(MAX_SQL_LENGTH));
/** Values for the `@name` references in the SQL text, replaced before it is parsed (Service Bus's SqlFilter.Parameters). */
const sqlParameters = z.optional(
  ownRecord(z.record(z.string().check(z.regex(PARAMETER_NAME, 'a parameter name is @ and an identifier')), z.union([z.string(), z.number(), z.boolean()]))),
);

/** What docs/openapi.json says of the parameters, registered only when it is made (lib/requests/schemas.ts `describeRequests`). */
export const describeFilterSpecs = /* @__PURE__ */ docSchema((): true => {
  z.globalRegistry.add(sqlParameters, { description: 'Values for the `@name` references in `sql`, each replaced by its literal before the text is parsed.' });
  return true;
});

const systemFields = Object.fromEntries(CORRELATION_SYSTEM_KEYS.map((key) => [key, z.optional(z.string())])) as Record<
  CorrelationSystemKey,
  z.ZodMiniOptional<z.ZodMiniString>
>;

export const correlationFilterSchema = z
  .strictObject({
    ...systemFields,
    properties: z.optional(ownRecord(z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])))),
  })
  // An empty correlation filter would silently match everything; that is what {"true": {}} is for.
  .check(
    z.refine((c) => Object.entries(c).some(([key, v]) => key !== 'properties' && v !== undefined) || Object.keys(c.properties ?? {}).length > 0, {
      message: 'A correlation filter needs at least one property to match',
    }),
  );

export const filterSpecSchema: z.ZodMiniType<FilterSpec> = z.union([
  z.strictObject({ sql: sqlText, parameters: sqlParameters }),
  z.strictObject({ correlation: correlationFilterSchema }),
  z.strictObject({ true: z.strictObject({}) }),
  z.strictObject({ false: z.strictObject({}) }),
]);

export const actionSpecSchema: z.ZodMiniType<ActionSpec> = z.strictObject({ sql: sqlText, parameters: sqlParameters });
