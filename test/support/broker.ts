/**
 * The broker as tests drive it directly, with bodies and query strings as a client sends them.
 * The broker itself takes parsed requests (lib/requests/schemas.ts); this reads each one first with
 * the contract's parse functions and in the router's order (path parameters, then the body),
 * so a test's input, and its bad input, is read exactly as it would be over HTTP. Every
 * operation answers with a promise, a refused input a rejected one, as the broker's own do.
 */
import { parsePeekQuery, parseRequest, parseSessionListQuery, parseSessionLockQuery, type RequestBodyName } from '../../lib/requests/schemas.js';
import type { Grant } from '../../lib/auth/grants.js';
import { createBroker as createParsedBroker } from '../../lib/broker/index.js';
import type { Settlement } from '../../lib/broker/settle.js';
import type { Deps } from '../../lib/deps.js';
import type { EntityRef, ReceiveTarget } from '../../lib/entities/paths.js';
import { parseEntityProperties } from '../../lib/entities/properties.js';
import { parseSessionId } from '../../lib/messages/schema.js';
import { parseSequenceNumber } from '../../lib/validation.js';

const settleRequests = {
  complete: 'CompleteRequest',
  abandon: 'AbandonRequest',
  defer: 'DeferRequest',
  deadletter: 'DeadLetterRequest',
} as const satisfies Record<Settlement, RequestBodyName>;

/** A path parameter checked as the router checks it before the body. */
const seqParam = (text: string) => (parseSequenceNumber(text), text);
const sessionParam = (text: string) => (parseSessionId(text), text);

export function createBroker(deps: Deps) {
  const broker = createParsedBroker(deps);
  return {
    ...broker,
    /** The broker itself, for code that takes one (the Service Bus protocols). */
    parsed: broker,
    auth: {
      ...broker.auth,
      put: async (scope: string, keyName: string, body: unknown, eid?: string) =>
        broker.auth.put(scope, keyName, parseRequest('AuthorizationRuleProperties', body), eid),
      regenerate: async (scope: string, keyName: string, body: unknown, eid?: string) =>
        broker.auth.regenerate(scope, keyName, parseRequest('RegenerateKeyRequest', body), eid),
    },
    putEntity: async (ref: EntityRef, body: unknown, grant: Grant) => broker.putEntity(ref, parseEntityProperties(ref.kind, body), grant),
    putRule: async (t: string, s: string, r: string, body: unknown) => broker.putRule(t, s, r, parseRequest('RuleProperties', body)),
    send: async (ref: EntityRef, body: unknown) => broker.send(ref, parseRequest('Message', body)),
    sendBatch: async (ref: EntityRef, body: unknown) => broker.sendBatch(ref, parseRequest('MessageBatch', body)),
    receive: async (target: ReceiveTarget, body: unknown) => broker.receive(target, parseRequest('ReceiveOptions', body)),
    peek: async (target: ReceiveTarget, query: Record<string, string | undefined>) => broker.peek(target, parsePeekQuery(query)),
    settle: async (target: ReceiveTarget, seq: string, action: Settlement, body: unknown) =>
      broker.settle(target, seqParam(seq), action, parseRequest(settleRequests[action], body)),
    renewLock: async (target: ReceiveTarget, seq: string, body: unknown) => broker.renewLock(target, seqParam(seq), parseRequest('RenewLockRequest', body)),
    settleBatch: async (target: ReceiveTarget, action: 'complete' | 'abandon', body: unknown) =>
      broker.settleBatch(target, action, parseRequest('LockTokens', body)),
    receiveDeferred: async (target: ReceiveTarget, body: unknown) => broker.receiveDeferred(target, parseRequest('DeferredRequest', body)),
    deleteMessages: async (target: ReceiveTarget, body: unknown) => broker.deleteMessages(target, parseRequest('DeleteMessagesRequest', body)),
    resubmit: async (target: ReceiveTarget, body: unknown, grant: Grant) => broker.resubmit(target, parseRequest('ResubmitRequest', body), grant),
    acceptSession: async (target: ReceiveTarget, body: unknown) => broker.acceptSession(target, parseRequest('AcceptSessionRequest', body)),
    listSessions: async (target: ReceiveTarget, query: Record<string, string | undefined>) => broker.listSessions(target, parseSessionListQuery(query)),
    receiveFromSession: async (target: ReceiveTarget, sessionId: string, body: unknown) =>
      broker.receiveFromSession(target, sessionParam(sessionId), parseRequest('SessionReceiveOptions', body)),
    renewSessionLock: async (target: ReceiveTarget, sessionId: string, body: unknown) =>
      broker.renewSessionLock(target, sessionParam(sessionId), parseRequest('SessionLockRequest', body)),
    releaseSession: async (target: ReceiveTarget, sessionId: string, body: unknown) =>
      broker.releaseSession(target, sessionParam(sessionId), parseRequest('SessionLockRequest', body)),
    getSessionState: async (target: ReceiveTarget, sessionId: string, sessionLockToken: unknown) =>
      broker.getSessionState(target, sessionParam(sessionId), parseSessionLockQuery(sessionLockToken)),
    setSessionState: async (target: ReceiveTarget, sessionId: string, body: unknown) =>
      broker.setSessionState(target, sessionParam(sessionId), parseRequest('SessionStateUpdate', body)),
    receiveDeferredFromSession: async (target: ReceiveTarget, sessionId: string, body: unknown) =>
      broker.receiveDeferredFromSession(target, sessionParam(sessionId), parseRequest('SessionDeferredRequest', body)),
  };
}

export type Broker = ReturnType<typeof createBroker>;
