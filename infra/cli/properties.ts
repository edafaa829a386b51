/**
 * `create` and `update` options, derived from the broker's own entity schemas
 * (lib/entities/properties.ts): one flag per property, named in kebab-case
 * (`--lock-duration PT1M`, `--requires-session`), checked with the same schema before
 * anything is sent, so a bad value fails with the flag's name and changes nothing.
 */
import { Option, type Command } from 'commander';
import type * as z from 'zod/mini';
import { queueSchema, subscriptionSchema, topicSchema, type EntityKind } from '../../lib/entities/properties.js';
import { usageError } from './errors.js';

const schemas: Record<EntityKind, z.ZodMiniObject> = { queue: queueSchema, topic: topicSchema, subscription: subscriptionSchema };

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const accepts = (field: z.ZodMiniType, value: unknown) => field.safeParse(value).success;

/** Adds one option per property of `kind`; booleans may be given bare (`--requires-session`). */
export function addPropertyOptions(command: Command, kind: EntityKind): Command {
  for (const [key, field] of Object.entries(schemas[kind].shape)) {
    const isBoolean = accepts(field as z.ZodMiniType, true);
    const flag = `--${kebab(key)} ${isBoolean ? '[true|false]' : '<value>'}`;
    command.addOption(new Option(flag, `${key}${isBoolean ? '' : ` (e.g. ${example(key)})`}`).argParser((v: string) => v));
  }
  return command;
}

function example(key: string): string {
  if (/Duration|TimeToLive|Window|OnIdle/.test(key)) return 'PT1M, or none for unlimited where allowed';
  if (key === 'status') return 'Active, Disabled, SendDisabled, ReceiveDisabled';
  if (/forward/i.test(key)) return 'queues/other';
  return '10';
}

/** A command-line string as the JSON value the schema wants: the string itself when it fits. */
function valueFor(field: z.ZodMiniType, raw: string | true): unknown {
  if (raw === true) return true;
  if (accepts(field, raw)) return raw;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
  if (/^(none|null|unlimited)$/i.test(raw)) return null;
  return raw;
}

/** The options given, as the body of PUT {entity}; validated with the broker's schema. */
export function propertiesFrom(kind: EntityKind, options: Record<string, unknown>): Record<string, unknown> {
  const shape = schemas[kind].shape as Record<string, z.ZodMiniType>;
  const body: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(shape)) {
    const raw = options[key];
    if (raw === undefined) continue;
    const value = valueFor(field, raw as string | true);
    const checked = field.safeParse(value);
    if (!checked.success) {
      const reason = checked.error.issues[0]?.message ?? 'is not valid';
      throw usageError(`--${kebab(key)}: ${reason}`, `see sluice ${kind} create --help`);
    }
    body[key] = value;
  }
  return body;
}
