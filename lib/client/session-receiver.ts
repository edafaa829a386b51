/**
 * ServiceBusSessionReceiver as @azure/service-bus 7.x has it, over the session routes of
 * docs/http-api.md: a Receiver whose receives go to one locked session (`{R}/sessions/{id}/...`,
 * carrying the session lock token), whose messages settle through the ordinary settlement
 * routes (the broker checks the session lock too, N4), and which keeps the session lock
 * renewed from acceptance on, up to maxAutoLockRenewalDurationInMs, as the SDK's
 * MessageSession does. `close()` releases the session so the next receiver can take it at
 * once (N4).
 */
import type { OperationOptionsBase } from './admin-types.js';
import { throwIfConnectionClosed, type ClientContext } from './context.js';
import { AbortError, isServiceBusError, ServiceBusError } from './errors.js';
import { bytesOut, fromBase64, toBase64, type ServiceBusReceivedMessage } from './message.js';
import { Receiver, receivePaths, type ServiceBusReceiver } from './receiver.js';
import type { AbortSignalLike } from './retry.js';
import type { Waiter } from './waiting.js';

/**
 * Describes the options passed to the `acceptSession` and `acceptNextSession` methods
 * when using a Queue/Subscription that has sessions enabled.
 */
export interface ServiceBusSessionReceiverOptions extends OperationOptionsBase {
  /**
   * How received messages are settled: `peekLock` (the default) locks each message for the
   * entity's `lockDuration` until the receiver completes, abandons, defers or dead-letters it (an
   * unsettled message comes back when its lock expires, and goes to the dead-letter subqueue after
   * `maxDeliveryCount` deliveries); `receiveAndDelete` deletes each message as it is received.
   */
  receiveMode?: 'peekLock' | 'receiveAndDelete';
  /**
   * The maximum duration, in milliseconds, that the lock on the session will be renewed automatically by the client.
   *
   * - **Default**: `300000` milliseconds (5 minutes).
   * - **To disable autolock renewal**, set this to `0`.
   *
   * **Example:**
   *
   *    If the lock expires in 2 minutes and your processing time is 8 minutes...
   *
   *    Set maxAutoLockRenewalDurationInMs to 10 minutes, and the lock will be automatically renewed about 4 times
   *    (equivalent to having the session locked for 4 times its lock duration by leveraging the lock renewals).
   */
  maxAutoLockRenewalDurationInMs?: number;
  /**
   * Option to disable the client from running JSON.parse() on the message body when receiving the message.
   * Not applicable if the message was sent with AMQP body type value or sequence. Use this option when you
   * prefer to work directly with the bytes present in the message body than have the client attempt to parse it.
   */
  skipParsingBodyAsJson?: boolean;
  /**
   * Whether to skip converting Date type on properties of message annotations
   * or application properties into numbers when receiving the message. By
   * default, properties of Date type is converted into UNIX epoch number for
   * compatibility.
   */
  skipConvertingDate?: boolean;
  /**
   * Sets the name to identify the session receiver. This can be used to correlate logs and exceptions.
   * If not specified or empty, a random unique one will be used.
   */
  identifier?: string;
}

/**
 * A receiver that holds the lock on one session of a queue or subscription that requires sessions:
 * it receives that session's messages in order, and keeps the session's state. Get one with
 * `ServiceBusClient.acceptSession` or `acceptNextSession`; the session's lock is renewed while the
 * receiver is open, up to `maxAutoLockRenewalDurationInMs`. As @azure/service-bus's, except that
 * `deleteMessages` and `purgeMessages` throw: use a receiver on the entity.
 */
export interface ServiceBusSessionReceiver extends ServiceBusReceiver {
  /**
   * The session ID.
   */
  readonly sessionId: string;
  /**
   * When the session's lock expires; `renewSessionLock()` (or the automatic renewal) moves it to
   * now plus the entity's `lockDuration`.
   */
  readonly sessionLockedUntilUtc: Date;
  /**
   * Renews the lock on the session.
   * @param options - Options bag to pass an abort signal.
   * @returns When the renewed session lock expires (also `sessionLockedUntilUtc`).
   */
  renewSessionLock(options?: OperationOptionsBase): Promise<Date>;
  /**
   * Gets the state of the Session. For more on session states, see
   * {@link https://docs.microsoft.com/azure/service-bus-messaging/message-sessions#message-session-state | Session State}
   * @param options - Options bag to pass an abort signal or tracing options.
   * @returns The state of that session
   * @throws Error if the underlying connection or receiver is closed.
   * @throws `ServiceBusError` if the service returns an error while retrieving session state.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  getSessionState(options?: OperationOptionsBase): Promise<any>;
  /**
   * Sets the state on the Session. For more on session states, see
   * {@link https://docs.microsoft.com/azure/service-bus-messaging/message-sessions#message-session-state | Session State}
   * @param state - The state that needs to be set.
   * @param options - Options bag to pass an abort signal or tracing options.
   * @throws Error if the underlying connection or receiver is closed.
   * @throws `ServiceBusError` if the service returns an error while setting the session state.
   *
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  setSessionState(state: any, options?: OperationOptionsBase): Promise<void>;
}

type Entity = { queue: string } | { topic: string; subscription: string };

/** What `POST {R}/sessions/accept` answers. */
interface Accepted {
  sessionId: string;
  sessionLockToken: string;
  lockedUntil: string;
}

/** The broker waits at most 20 s per accept (docs/http-api.md); a longer wait is several requests. */
const MAX_ACCEPT_WAIT_MS = 20_000;

/**
 * Accepts `sessionId`, or the next session with an available message when it is undefined
 * (N2). A named session is taken or refused (`SessionCannotBeLocked`) at once; the next one
 * is waited for up to the retry options' timeoutInMs (the SDK's bound on opening a session
 * link, 60 s by default), 20 s per request, then `ServiceTimeout`.
 */
export async function acceptSession(
  ctx: ClientContext,
  entity: Entity,
  sessionId: string | undefined,
  options: ServiceBusSessionReceiverOptions = {},
): Promise<SessionReceiver> {
  const { path, audience } = receivePaths(entity);
  const deadline = Date.now() + ctx.transport.retry.timeoutInMs;
  // H1: accepting the next session waits for a hint, not in a server long poll that keeps a Lambda running.
  const waiter = sessionId === undefined ? ctx.acceptWaiter() : undefined;
  for (;;) {
    if (options.abortSignal?.aborted) throw new AbortError();
    const waitMs = waiter ? Math.min(waiter.pollWaitMs, MAX_ACCEPT_WAIT_MS, Math.max(0, deadline - Date.now())) : 0;
    try {
      const res = await ctx.transport.request<Accepted>({
        method: 'POST',
        path: `${path}/sessions/accept`,
        body: sessionId === undefined ? { maxWaitTime: `PT${waitMs / 1000}S` } : { sessionId },
        audience,
        idempotent: false,
        waitMs,
        abortSignal: options.abortSignal,
      });
      return new SessionReceiver(ctx, entity, options, res.body);
    } catch (error) {
      const timedOut =
        isServiceBusError(error) && error.code === 'ServiceTimeout' && (error.info as { brokerCode?: string } | undefined)?.brokerCode === 'ServiceTimeout';
      if (!timedOut) throw error;
      // The SDK's ServiceTimeout is retryable (worth trying again later), whatever one request says.
      error.retryable = true;
      if (!waiter || Date.now() >= deadline) throw error;
      await idleUntil(waiter, path, deadline, options.abortSignal);
      // Waited out without a hint: the caller's next accept polls at once anyway.
      if (Date.now() >= deadline) throw error;
    }
  }
}

/**
 * Waits for the waiter's word on `path`, at most until `deadline` or until `abortSignal` aborts.
 * The deadline's timer is not unref'd: the hint comes on an unref'd socket, and a pending
 * acceptNextSession is the program's own work, which must not end in the middle of the await.
 */
async function idleUntil(waiter: Waiter, path: string, deadline: number, abortSignal: AbortSignalLike | undefined): Promise<void> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), Math.max(0, deadline - Date.now()));
  const onAbort = () => stop.abort();
  abortSignal?.addEventListener('abort', onAbort);
  try {
    await waiter.idle(path, stop.signal);
  } finally {
    clearTimeout(timer);
    abortSignal?.removeEventListener('abort', onAbort);
  }
}

export class SessionReceiver extends Receiver implements ServiceBusSessionReceiver {
  readonly sessionId: string;
  private lockToken: string;
  private lockedUntil: Date;
  /** Set once the broker said the session lock is gone: the receiver is then unusable, as the SDK's closed link is. */
  private lockLost = false;
  private released = false;
  private cancelRenewal: (() => void) | undefined;
  private readonly renewUntil: number;

  constructor(ctx: ClientContext, entity: Entity, options: ServiceBusSessionReceiverOptions, accepted: Accepted) {
    super(ctx, entity, options);
    this.sessionId = accepted.sessionId;
    this.lockToken = accepted.sessionLockToken;
    this.lockedUntil = new Date(accepted.lockedUntil);
    this.renewUntil = ctx.clock.now() + this.maxAutoLockRenewalDurationInMs;
    this.scheduleRenewal();
  }

  get sessionLockedUntilUtc(): Date {
    return this.lockedUntil;
  }

  override get isClosed(): boolean {
    return super.isClosed || this.lockLost;
  }

  protected override readonly peekFilter = (message: ServiceBusReceivedMessage) => message.sessionId === this.sessionId;

  private get sessionPath(): string {
    return `${this.path}/sessions/${encodeURIComponent(this.sessionId)}`;
  }

  protected override receiveRoute(action: 'receive' | 'deferred'): { path: string; body: Record<string, unknown> } {
    return { path: `${this.sessionPath}/${action}`, body: { sessionLockToken: this.lockToken } };
  }

  override throwIfClosed(): void {
    throwIfConnectionClosed(this.ctx);
    if (super.isClosed) {
      throw new Error(
        `The receiver for session "${this.sessionId}" in "${this.entityPath}" has been closed and can no longer be used. ` +
          'Please create a new receiver using the "acceptSession" or "acceptNextSession" method on the ServiceBusClient.',
      );
    }
    if (this.lockLost) throw new ServiceBusError(`The session lock has expired on the session with id ${this.sessionId}`, 'SessionLockLost');
  }

  /** Every session request: a SessionLockLost answer marks the receiver unusable. */
  private async session<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (isServiceBusError(error) && error.code === 'SessionLockLost') this.lockLost = true;
      throw error;
    }
  }

  protected override async poll(maxMessages: number, waitMs: number, abortSignal?: AbortSignalLike): Promise<ServiceBusReceivedMessage[]> {
    return this.session(() => super.poll(maxMessages, waitMs, abortSignal));
  }

  override async receiveDeferredMessages(...args: Parameters<Receiver['receiveDeferredMessages']>): Promise<ServiceBusReceivedMessage[]> {
    return this.session(() => super.receiveDeferredMessages(...args));
  }

  override async completeMessage(message: ServiceBusReceivedMessage): Promise<void> {
    return this.session(() => super.completeMessage(message));
  }

  override async abandonMessage(...args: Parameters<Receiver['abandonMessage']>): Promise<void> {
    return this.session(() => super.abandonMessage(...args));
  }

  override async deferMessage(...args: Parameters<Receiver['deferMessage']>): Promise<void> {
    return this.session(() => super.deferMessage(...args));
  }

  override async deadLetterMessage(...args: Parameters<Receiver['deadLetterMessage']>): Promise<void> {
    return this.session(() => super.deadLetterMessage(...args));
  }

  /** As the SDK: a session's messages are covered by the session lock. */
  override async renewMessageLock(): Promise<Date> {
    throw new Error('Renewing message lock is an invalid operation when working with sessions.');
  }

  /** Not in the SDK's session receiver: deleting by enqueue time would reach other sessions' messages. */
  override async deleteMessages(): Promise<number> {
    throw new Error('deleteMessages is not supported on a session receiver; use a ServiceBusReceiver on the entity.');
  }

  override async purgeMessages(): Promise<number> {
    throw new Error('purgeMessages is not supported on a session receiver; use a ServiceBusReceiver on the entity.');
  }

  protected override keepLockWhileHandling(): () => void {
    return () => {};
  }

  protected override endsSubscription(error: unknown): boolean {
    return isServiceBusError(error) && error.code === 'SessionLockLost';
  }

  async renewSessionLock(options?: OperationOptionsBase): Promise<Date> {
    this.throwIfClosed();
    const res = await this.session(() =>
      this.ctx.transport.request<{ lockedUntil: string }>({
        method: 'POST',
        path: `${this.sessionPath}/renew-lock`,
        body: { sessionLockToken: this.lockToken },
        audience: this.audience,
        idempotent: true,
        abortSignal: options?.abortSignal,
      }),
    );
    this.lockedUntil = new Date(res.body.lockedUntil);
    return this.lockedUntil;
  }

  /** The SDK's decoding (tryToJsonDecode): JSON text becomes its value, other bytes stay a Buffer; no state is null. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async getSessionState(options?: OperationOptionsBase): Promise<any> {
    this.throwIfClosed();
    const res = await this.session(() =>
      this.ctx.transport.request<{ state: string | null }>({
        method: 'GET',
        path: `${this.sessionPath}/state`,
        query: { sessionLockToken: this.lockToken },
        audience: this.audience,
        idempotent: true,
        abortSignal: options?.abortSignal,
      }),
    );
    return res.body.state === null || res.body.state === undefined ? null : decodeState(res.body.state);
  }

  /** The SDK's encoding (toBuffer): bytes as they are, anything else as its JSON text (undefined as null). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async setSessionState(state: any, options?: OperationOptionsBase): Promise<void> {
    this.throwIfClosed();
    const encoded = encodeState(state);
    await this.session(() =>
      this.ctx.transport.request({
        method: 'PUT',
        path: `${this.sessionPath}/state`,
        body: { sessionLockToken: this.lockToken, state: encoded },
        audience: this.audience,
        idempotent: true,
        abortSignal: options?.abortSignal,
      }),
    );
  }

  /**
   * Closes as a receiver does (subscriptions finish their handlers first), then releases the
   * session lock. A lock already lost, or a release that fails, leaves the session to lapse by
   * itself: closing never throws for it, as the SDK's does not.
   */
  override async close(): Promise<void> {
    await super.close();
    this.cancelRenewal?.();
    if (this.released || this.lockLost || this.ctx.connectionClosed) return;
    this.released = true;
    await this.ctx.transport
      .request({
        method: 'POST',
        path: `${this.sessionPath}/release`,
        body: { sessionLockToken: this.lockToken },
        audience: this.audience,
        idempotent: true,
      })
      .catch(() => {});
  }

  /**
   * The SDK's schedule (MessageSession._ensureSessionLockRenewal): renew when the lock has
   * half its time left, or 10 s, whichever is less, while the lock ends before the renewal
   * budget does. Failures are not reported, as in the SDK; the next operation meets them.
   */
  private scheduleRenewal(): void {
    if (this.maxAutoLockRenewalDurationInMs <= 0 || this.receiveMode !== 'peekLock') return;
    const clock = this.ctx.clock;
    if (this.renewUntil <= this.lockedUntil.getTime() || clock.now() >= this.renewUntil || super.isClosed || this.lockLost) return;
    const remaining = this.lockedUntil.getTime() - clock.now();
    const wait = remaining < 1000 ? 0 : remaining - Math.min(remaining / 2, 10_000);
    this.cancelRenewal = clock.after(wait, () => {
      this.renewSessionLock().then(
        () => this.scheduleRenewal(),
        () => {},
      );
    });
  }
}

function encodeState(state: unknown): string {
  if (state instanceof Uint8Array) return toBase64(state);
  const text = JSON.stringify(state === undefined ? null : state);
  if (text === undefined) throw new TypeError('The session state must be a Buffer or a value JSON.stringify can write');
  return toBase64(new TextEncoder().encode(text));
}

function decodeState(base64: string): unknown {
  const bytes = fromBase64(base64);
  try {
    // Buffer.toString('utf8') as the SDK reads it: invalid bytes replaced, a BOM kept.
    return JSON.parse(new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes));
  } catch {
    return bytesOut(bytes);
  }
}
