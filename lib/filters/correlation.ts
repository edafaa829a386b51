/**
 * Correlation filter: equality on the named system properties and application properties,
 * all of which must hold. A missing property never matches, and values match only when of
 * the same kind: the string '2' does not match the number 2 (Service Bus behaves so, see
 * Azure/azure-service-bus#401). No type errors are possible, so this never throws.
 */
import type { FilterMessage, PropertyValue } from './message.js';
import { resolveKey } from './properties.js';
import type { CorrelationFilterSpec } from './spec.js';
import { CORRELATION_SYSTEM_KEYS } from './correlation-keys.js';

export function correlationMatcher(spec: CorrelationFilterSpec): (msg: FilterMessage) => boolean {
  const system = CORRELATION_SYSTEM_KEYS.flatMap((key) => {
    const expected = spec[key];
    return expected === undefined ? [] : [[key, expected] as const];
  });
  const properties = Object.entries(spec.properties ?? {});
  return (msg) =>
    system.every(([key, expected]) => msg.system[key] === expected) &&
    properties.every(([name, expected]) => {
      // Names are case-insensitive here as in SQL filters, so both filter kinds agree.
      const key = resolveKey(msg.properties, name);
      const actual: PropertyValue | undefined = key === undefined ? undefined : msg.properties[key];
      return typeof actual === typeof expected && actual === expected;
    });
}
