/**
 * SQL filter and action parameters (`@name`), as Service Bus's SqlFilter and SqlRuleAction
 * carry them beside their expression: each reference outside a string literal or a bracketed
 * name is replaced by the parameter's value written as a literal, before the text is parsed.
 * Pure.
 */
import { FilterSyntaxError, positionAt } from './errors.js';

export type ParameterValue = string | number | boolean;

/** Service Bus parameter names: `@` and an identifier. */
export const PARAMETER_NAME = /^@[A-Za-z_][A-Za-z0-9_]*$/;

function literal(value: ParameterValue): string {
  if (typeof value === 'string') return `'${value.replace(/'/g, "''")}'`;
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  return String(value);
}

/**
 * The text with every `@name` replaced. Names match case-insensitively. A reference to a
 * parameter that is not given is refused (FilterSyntaxError), as Service Bus refuses it.
 * Without parameters the text is returned as it is.
 */
export function bindParameters(sql: string, parameters: Readonly<Record<string, ParameterValue>> | undefined): string {
  if (parameters === undefined || Object.keys(parameters).length === 0) return sql;
  const byName = new Map(Object.entries(parameters).map(([k, v]) => [k.toLowerCase(), v]));
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '[') {
      const close = c === "'" ? "'" : ']';
      let j = i + 1;
      while (j < sql.length) {
        if (sql[j] === close) {
          if (close === "'" && sql[j + 1] === "'") {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    const name = c === '@' ? /^@[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i))?.[0] : undefined;
    if (name !== undefined) {
      const value = byName.get(name.toLowerCase());
      if (value === undefined) throw new FilterSyntaxError(`parameter ${name} is not given`, positionAt(sql, i));
      out += literal(value);
      i += name.length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}
