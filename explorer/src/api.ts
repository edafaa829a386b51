/**
 * The public HTTP API (docs/http-api.md) as the page uses it: same origin, one SAS token per request,
 * B1 errors turned into ApiError with the field they name. Nothing here needs more rights
 * than the route it calls.
 */
import type { Credentials } from './connection.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface RuntimeCounts {
  activeMessageCount: number;
  scheduledMessageCount: number;
  deferredMessageCount?: number;
  deadLetterMessageCount?: number;
  transferDeadLetterMessageCount?: number;
  totalMessageCount: number;
  sizeInBytes: number;
  createdAt: string;
  updatedAt: string;
  accessedAt: string;
}

export interface Entity {
  name: string;
  topicName?: string;
  /** Absent when the key may not read the entity (a Send or Listen key scoped to it). */
  runtime?: RuntimeCounts;
  [property: string]: Json | RuntimeCounts | undefined;
}

export interface Message {
  body: Json;
  sequenceNumber: string;
  messageId?: string;
  state?: string;
  enqueuedTime?: string;
  expiresAt?: string | null;
  deliveryCount?: number;
  contentType?: string;
  subject?: string;
  applicationProperties?: Record<string, Json>;
  deadLetterReason?: string;
  deadLetterErrorDescription?: string;
  deadLetterSource?: string;
  [property: string]: Json | undefined;
}

export interface Rule {
  name: string;
  filter: Record<string, Json>;
  action: { sql: string } | null;
  createdAt?: string;
}

export interface AuthorizationRule {
  keyName: string;
  rights: string[];
  primaryKey?: string;
  secondaryKey?: string;
}

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  /** The field a 400 names: its message starts `field: ...` (B2). */
  get field(): string | null {
    return /^([\w.[\]$]+): /.exec(this.message)?.[1] ?? null;
  }
  /** What the message says after the field name. */
  get detail(): string {
    const f = this.field;
    return f ? this.message.slice(f.length + 2) : this.message;
  }
  /** `at line L, column C` in a SQL filter or action error. */
  get position(): { line: number; column: number } | null {
    const m = /line (\d+), column (\d+)/.exec(this.message);
    return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
  }
}

/** Sentences for people; the code stays visible for searching. */
export function explain(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) {
      return `The broker refused the key (401 ${error.code}): check the SharedAccessKeyName and SharedAccessKey in the connection string, or that the token has not expired.`;
    }
    if (error.status === 403) return `This key may not do that (403 ${error.code}): ${error.message}`;
    return `${error.message} (${error.status} ${error.code})`;
  }
  if (error instanceof TypeError) return `The broker could not be reached (${error.message}). Is it running?`;
  return error instanceof Error ? error.message : String(error);
}

export type EntityKind = 'queue' | 'topic' | 'subscription';
export type SubQueue = '' | '$deadletterqueue' | '$transferdeadletterqueue';

/** `queues/a`, `topics/t`, `topics/t/subscriptions/s`: the API's own paths. */
export function entityPath(kind: EntityKind, name: string, topic?: string): string {
  const e = encodeURIComponent;
  if (kind === 'queue') return `queues/${e(name)}`;
  if (kind === 'topic') return `topics/${e(name)}`;
  return `topics/${e(topic ?? '')}/subscriptions/${e(name)}`;
}

export class Sluice {
  constructor(
    private readonly credentials: Credentials,
    private readonly base = `${location.origin}/`,
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: await this.credentials.authorization() };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(this.base + path, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      credentials: 'omit',
      cache: 'no-store',
    });
    const text = await response.text();
    const parsed = text === '' ? undefined : (JSON.parse(text) as unknown);
    if (!response.ok) {
      const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ApiError(response.status, error?.code ?? 'Error', error?.message ?? `HTTP ${response.status}`);
    }
    return parsed as T;
  }

  private async all<T>(path: string): Promise<T[]> {
    const items: T[] = [];
    let next: string | null = null;
    do {
      const page: { items: T[]; next: string | null } = await this.call('GET', next ? `${path}?next=${encodeURIComponent(next)}` : path);
      items.push(...page.items);
      next = page.next;
    } while (next);
    return items;
  }

  queues = () => this.all<Entity>('queues');
  topics = () => this.all<Entity>('topics');
  subscriptions = (topic: string) => this.all<Entity>(`topics/${encodeURIComponent(topic)}/subscriptions`);
  rules = (subscriptionPath: string) => this.all<Rule>(`${subscriptionPath}/rules`);
  get = (path: string) => this.call<Entity>('GET', path);
  put = (path: string, properties: Record<string, Json>) => this.call<Entity>('PUT', path, properties);
  remove = (path: string) => this.call<void>('DELETE', path);

  authorizationRules = (path: string) => this.all<AuthorizationRule>(path ? `${path}/authorization-rules` : 'authorization-rules');
  putAuthorizationRule = (path: string, name: string, rights: string[]) =>
    this.call<AuthorizationRule>('PUT', `${path ? `${path}/` : ''}authorization-rules/${encodeURIComponent(name)}`, { rights });
  regenerateKey = (path: string, name: string, key: 'primary' | 'secondary') =>
    this.call<AuthorizationRule>('POST', `${path ? `${path}/` : ''}authorization-rules/${encodeURIComponent(name)}/regenerate`, { key });
  removeAuthorizationRule = (path: string, name: string) =>
    this.call<void>('DELETE', `${path ? `${path}/` : ''}authorization-rules/${encodeURIComponent(name)}`);

  /** A page of `maxMessages`: an answer stops short where more would pass Lambda's 6 MB (R10), so the rest is asked for until the entity has no more. */
  peek = async (receivePath: string, fromSequenceNumber: string, maxMessages: number) => {
    const out: Message[] = [];
    let from = fromSequenceNumber;
    while (out.length < maxMessages) {
      const { messages } = await this.call<{ messages: Message[] }>(
        'GET',
        `${receivePath}/messages?fromSequenceNumber=${encodeURIComponent(from)}&maxMessages=${maxMessages - out.length}`,
      );
      out.push(...messages);
      const last = messages[messages.length - 1];
      if (!last) break;
      from = (BigInt(last.sequenceNumber) + 1n).toString();
    }
    return out;
  };
  send = (sendPath: string, message: Record<string, Json>) => this.call<Record<string, Json>>('POST', `${sendPath}/messages`, message);
  cancelScheduled = (sendPath: string, sequenceNumber: string) =>
    this.call<void>('DELETE', `${sendPath}/messages/scheduled/${encodeURIComponent(sequenceNumber)}`);
  receiveAndDelete = async (receivePath: string) =>
    (await this.call<{ messages: Message[] }>('POST', `${receivePath}/messages/receive`, { mode: 'receiveAndDelete', maxMessages: 1 })).messages[0] ?? null;
  resubmit = async (entity: string, sequenceNumbers?: string[]) =>
    (await this.call<{ resubmitted: number }>('POST', `${entity}/$deadletterqueue/resubmit`, sequenceNumbers ? { sequenceNumbers } : {})).resubmitted;
  purge = async (receivePath: string) => (await this.call<{ purged: number }>('DELETE', `${receivePath}/messages`)).purged;
}
