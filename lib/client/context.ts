/** What a ServiceBusClient shares with its senders and receivers. */
import type { HttpTransport } from './transport.js';
import { segment } from './transport.js';
import { isServiceBusError } from './errors.js';
import type { Waiter } from './waiting.js';
import type { ClientClock } from './clock.js';

export interface ClientContext {
  transport: HttpTransport;
  fullyQualifiedNamespace: string;
  /** Queue or topic, by name, learnt on first send (the SDK's createSender takes either). */
  sendKinds: Map<string, 'queues' | 'topics'>;
  /** Set once ServiceBusClient.close() has closed everything it handed out. */
  connectionClosed: boolean;
  /**
   * How acceptNextSession waits for a session: one waiter per client, opened on first
   * use (availability hints over one WebSocket), closed with the client.
   */
  acceptWaiter: () => Waiter;
  /** What lock renewal times itself by (`ServiceBusClientOptions.clock`). */
  clock: ClientClock;
}

/** What the SDK throws (a plain Error, no code) for anything used after its client was closed. */
export function throwIfConnectionClosed(ctx: Pick<ClientContext, 'connectionClosed'>): void {
  if (ctx.connectionClosed) throw new Error('The underlying AMQP connection is closed.');
}

let counter = 0;
export const newIdentifier = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`;

/** `queues/x` and `topics/x` name the kind explicitly (a Sluice extension); a bare name is looked up. */
export function explicitSendPath(name: string): string | undefined {
  const m = /^(queues|topics)\/([^/]+)$/i.exec(name);
  return m ? `${m[1]!.toLowerCase()}/${segment(m[2]!)}` : undefined;
}

/**
 * Runs `attempt` against the queue of that name, and against the topic when there is no such
 * queue (404, or 401 for a key scoped to the topic). The answer is remembered per client.
 */
export async function withSendPath<T>(ctx: ClientContext, name: string, attempt: (path: string) => Promise<T>): Promise<T> {
  const explicit = explicitSendPath(name);
  if (explicit) return attempt(explicit);
  const known = ctx.sendKinds.get(name);
  if (known) return attempt(`${known}/${segment(name)}`);
  try {
    const out = await attempt(`queues/${segment(name)}`);
    ctx.sendKinds.set(name, 'queues');
    return out;
  } catch (queueError) {
    if (!isServiceBusError(queueError) || (queueError.code !== 'MessagingEntityNotFound' && queueError.code !== 'UnauthorizedAccess')) throw queueError;
    try {
      const out = await attempt(`topics/${segment(name)}`);
      ctx.sendKinds.set(name, 'topics');
      return out;
    } catch (topicError) {
      if (isServiceBusError(topicError) && topicError.code === 'MessagingEntityNotFound' && queueError.code === 'UnauthorizedAccess') throw queueError;
      throw topicError;
    }
  }
}
