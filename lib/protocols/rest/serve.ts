/**
 * Service Bus's REST data plane served by the broker: the six operations of Microsoft's REST
 * reference on `{q}`, `{t}/Subscriptions/{s}` and either's `/$DeadLetterQueue` (path case
 * does not matter; `api-version` is optional and ignored, as in Service Bus):
 *
 *   POST   {E}/messages                     send (one message, or a batch by its content type)
 *   POST   {E}/messages/head?timeout=n      peek-lock: 201 + Location, 204 when none came
 *   DELETE {E}/messages/head?timeout=n      receive and delete: 200, 204 when none came
 *   DELETE {E}/messages/{seq|id}/{token}    complete
 *   PUT    {E}/messages/{seq|id}/{token}    unlock (abandon)
 *   POST   {E}/messages/{seq|id}/{token}    renew the lock
 *
 * A name alone is a queue, or else a topic (sending only). Every operation checks the
 * request's grant against the one entity it reaches (A2), whatever the dispatch checked
 * before. Errors answer as Service Bus's REST plane does: 410 for an entity that does not
 * exist, 404 for a lock that is lost or a message that is not there.
 */
import { BrokerError, badRequest, entityNotFound, methodNotAllowed } from '../../errors.js';
import { grantAllows, joinSegments, type Grant } from '../../auth/index.js';
import { requireGrant } from '../sas.js';
import { restEntityLength } from '../dispatch.js';
import type { StatusMap } from '../errors.js';
import { entityPathDisplay, type EntityRef, type ReceiveTarget } from '../../entities/paths.js';
import { validateName } from '../../names.js';
import { isLockTokenShape, normalizeLockToken, sequenceOfLockToken } from '../../messages/lock-token.js';
import type { Broker } from '../../broker/index.js';
import { MAX_BATCH, parsePeekQuery, parseRequest } from '../../requests/schemas.js';
import { decodeUtf8 } from '../../json.js';
import { isBatch, messageFromRequest, messagesFromBatch, restMessageOf, type WireMessage } from './messages.js';

/** Longest wait of a receive: Sluice's own (R2), well inside API Gateway's 30 s integration timeout. */
export const MAX_TIMEOUT_SECONDS = 20;

export interface RestRequest {
  method: string;
  /** The raw path, still percent-encoded. */
  rawPath: string;
  query: Readonly<Record<string, string | undefined>>;
  /** Header names lower-case, as API Gateway gives them. */
  headers: Readonly<Record<string, string | undefined>>;
  body: Uint8Array;
  /** What the request's token may do. */
  grant: Grant;
  /** `host[:port]` and scheme as the client addressed the API: a lock URL must be on the same host (azure-sb cuts it at `host/`). */
  host: string;
  scheme: 'http' | 'https';
}

export interface RestAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

/** The entity a REST path names, as Sluice references it, and the path up to `messages` as the client wrote it. */
interface RestTarget {
  /** `{q}` (a queue, or a topic to send to) or `{t}/Subscriptions/{s}`. */
  name: string;
  topic?: string;
  deadLetter: boolean;
  /** The raw segments before `messages`, for the lock URL. */
  prefix: string;
  /** The segments after `messages`. */
  rest: string[];
}

function decoded(segment: string, index: number): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`path segment ${index + 1}`, 'is not valid percent-encoding');
  }
}

/** Reads `{q}[/$DeadLetterQueue]/messages/...` or `{t}/Subscriptions/{s}[/$DeadLetterQueue]/messages/...`. */
export function parseRestPath(path: string): RestTarget | undefined {
  const raw = path.split('/').filter((s) => s.length > 0);
  const segments = raw.map(decoded);
  const n = restEntityLength(segments);
  if (n === undefined) return undefined;
  const deadLetter = segments[n - 1]!.toLowerCase() === '$deadletterqueue';
  const subscription = n - (deadLetter ? 1 : 0) === 3;
  return {
    ...(subscription
      ? { topic: validateName('topic', segments[0]!), name: validateName('subscription', segments[2]!) }
      : { name: validateName('queue', segments[0]!, 'entityName') }),
    deadLetter,
    prefix: raw.slice(0, n).join('/'),
    rest: segments.slice(n + 1),
  };
}

/**
 * The request's path in Sluice's layout, which the grant must reach (A2): the entity, its
 * subqueue, and what follows `messages`, as the client signed it (azure-sb signs the whole
 * URL, so its token's scope is the request's own path).
 */
const sluicePath = (ref: EntityRef, target: RestTarget) =>
  joinSegments([...entityPathDisplay(ref).split('/'), ...(target.deadLetter ? ['$deadletterqueue'] : []), 'messages', ...target.rest]);

/** `?timeout=` in whole seconds, clamped to what a request can wait (R2, API Gateway). */
export function timeoutOf(query: RestRequest['query']): number {
  const key = Object.keys(query).find((k) => k.toLowerCase() === 'timeout');
  const text = key === undefined ? undefined : query[key];
  if (text === undefined || text === '') return MAX_TIMEOUT_SECONDS;
  if (!/^\d{1,9}$/.test(text)) throw badRequest('timeout', 'must be a whole number of seconds');
  return Math.min(Number(text), MAX_TIMEOUT_SECONDS);
}

const empty = (status: number): RestAnswer => ({ status, headers: {}, body: '' });

export async function serveRest(broker: Broker, req: RestRequest): Promise<RestAnswer> {
  const target = parseRestPath(req.rawPath);
  if (!target) throw noSuchResource();
  const method = req.method.toUpperCase();
  const { rest } = target;
  if (rest.length === 0) {
    if (method !== 'POST') throw methodNotAllowed(method);
    return send(broker, req, target);
  }
  const head = rest.length === 1 && rest[0]!.toLowerCase() === 'head';
  const queueOrSubscription: EntityRef = target.topic ? { kind: 'subscription', topic: target.topic, name: target.name } : { kind: 'queue', name: target.name };
  const receiveTarget: ReceiveTarget = { ...queueOrSubscription, subqueue: target.deadLetter ? 'deadletter' : 'active' };
  requireGrant(req.grant, sluicePath(queueOrSubscription, target), 'Listen');
  if (head) {
    if (method !== 'POST' && method !== 'DELETE') throw methodNotAllowed(method);
    return receiveHead(broker, req, target, receiveTarget, method === 'POST');
  }
  if (rest.length === 2) return onLock(broker, method, receiveTarget, rest[0]!, rest[1]!);
  throw noSuchResource();
}

const noSuchResource = () => new BrokerError('MessageNotFound', 'no such resource');

async function send(broker: Broker, req: RestRequest, target: RestTarget): Promise<RestAnswer> {
  if (target.topic) throw new BrokerError('BadRequest', 'send to the topic, not to a subscription', { field: 'path' });
  if (target.deadLetter) throw new BrokerError('BadRequest', 'messages cannot be sent to a dead-letter subqueue directly (D5)', { field: 'path' });
  const messages = isBatch(req.headers['content-type']) ? messagesFromBatch(decodeUtf8(req.body)) : [messageFromRequest(req)];
  // `{name}` is a queue, or else a topic; a token reaches only the ones it covers (A2).
  const candidates = (['queue', 'topic'] as const).map((kind): EntityRef => ({ kind, name: target.name }));
  const allowed = candidates.filter((ref) => grantAllows(req.grant, sluicePath(ref, target), 'Send'));
  if (allowed.length === 0) requireGrant(req.grant, sluicePath(candidates[0]!, target), 'Send');
  for (const ref of allowed) {
    try {
      await deliver(broker, ref, messages);
      return empty(201);
    } catch (e) {
      // Nothing is stored before the entity is found, so the next reading may be tried.
      if (!(e instanceof BrokerError && e.code === 'EntityNotFound' && ref !== allowed.at(-1))) throw e;
    }
  }
  throw entityNotFound(target.name);
}

/** One message through `send`; a batch through `sendBatch`, 100 at a time, every entry already checked (S4). */
async function deliver(broker: Broker, ref: EntityRef, messages: WireMessage[]): Promise<void> {
  if (messages.length === 1) {
    await broker.send(ref, parseRequest('Message', messages[0]));
    return;
  }
  const failed: string[] = [];
  let throttled = false;
  for (let i = 0; i < messages.length; i += MAX_BATCH) {
    const results = await broker.sendBatch(ref, parseRequest('MessageBatch', { messages: messages.slice(i, i + MAX_BATCH) }));
    for (const r of results) {
      if ('error' in r) {
        failed.push(r.messageId ?? '?');
        throttled ||= r.error.code === 'Throttled';
      }
    }
  }
  if (failed.length > 0) {
    throw new BrokerError(
      throttled ? 'Throttled' : 'InternalError',
      `${failed.length} of ${messages.length} messages were not stored (MessageId ${failed.slice(0, 10).join(', ')}); the others were`,
      { retryable: true },
    );
  }
}

async function receiveHead(broker: Broker, req: RestRequest, target: RestTarget, receiveTarget: ReceiveTarget, peekLock: boolean): Promise<RestAnswer> {
  const wait = timeoutOf(req.query);
  const [message] = await broker.receive(
    receiveTarget,
    parseRequest('ReceiveOptions', { mode: peekLock ? 'peekLock' : 'receiveAndDelete', maxMessages: 1, maxWaitTime: `PT${wait}S` }),
  );
  if (!message) return empty(204);
  const location =
    peekLock && message.lockToken ? `${req.scheme}://${req.host}/${target.prefix}/messages/${message.sequenceNumber}/${message.lockToken}` : undefined;
  const out = restMessageOf(message, location);
  return { status: peekLock ? 201 : 200, headers: out.headers, body: out.body };
}

/** `{seq|messageId}/{lockToken}`: the token names the message (its first 64 bits are the sequence number). */
async function onLock(broker: Broker, method: string, target: ReceiveTarget, idOrSeq: string, tokenText: string): Promise<RestAnswer> {
  if (!isLockTokenShape(tokenText)) throw badRequest('lockToken', 'must be a lock token as a peek-lock receive returned it');
  const lockToken = normalizeLockToken(tokenText);
  const seq = sequenceOfLockToken(lockToken).toString();
  const gone = () => new BrokerError('MessageLockLost', 'no message was found with the specified MessageId or LockToken');
  if (idOrSeq !== seq) {
    // The message-id form: the id must be the message's, as Service Bus looks it up by id.
    const [peeked] = await broker.peek(target, parsePeekQuery({ fromSequenceNumber: seq, maxMessages: '1' }));
    if (!peeked || peeked.sequenceNumber !== seq || peeked.messageId !== idOrSeq) throw gone();
  }
  const body = { lockToken };
  try {
    if (method === 'DELETE') await broker.settle(target, seq, 'complete', parseRequest('CompleteRequest', body));
    else if (method === 'PUT') await broker.settle(target, seq, 'abandon', parseRequest('AbandonRequest', body));
    else if (method === 'POST') await broker.renewLock(target, seq, parseRequest('RenewLockRequest', body));
    else throw methodNotAllowed(method);
  } catch (e) {
    if (e instanceof BrokerError && (e.code === 'MessageLockLost' || e.code === 'MessageNotFound')) throw gone();
    throw e;
  }
  return empty(200);
}

/**
 * How Service Bus's REST plane answers what Sluice's API answers otherwise: `410 Gone` for an
 * entity that does not exist, `404` for a lost lock or a missing message (every refusal of a
 * token is already a 401: lib/protocols/errors.ts).
 */
export const REST_STATUSES: StatusMap = { EntityNotFound: 410, MessageLockLost: 404, MessageNotFound: 404 };
