import { badRequest } from './errors.js';

/** E1: letters, digits, '.', '-', '_', starting and ending with a letter or digit. */
const namePattern = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

export const nameLimits = { queue: 260, topic: 260, subscription: 50, rule: 50, authorizationRule: 256 } as const;
export type NameKind = keyof typeof nameLimits;

export function validateName(kind: NameKind, name: string, field = `${kind}Name`): string {
  const max = nameLimits[kind];
  if (name.length < 1 || name.length > max) throw badRequest(field, `must be 1-${max} characters long`);
  if (!namePattern.test(name)) {
    throw badRequest(field, `'${name.slice(0, 60)}' may hold only letters, digits, '.', '-', '_' and must start and end with a letter or digit`);
  }
  return name;
}

/** Names are case-insensitive (E1): keys use this form, answers keep the first spelling. */
export const nameKey = (name: string) => name.toLowerCase();
