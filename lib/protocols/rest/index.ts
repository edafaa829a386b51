/**
 * The REST data plane (send, peek-lock, receive-and-delete, complete, unlock, renew with
 * `BrokerProperties`) as a Service Bus protocol of lib/protocols/serve.ts: ./serve.ts answers,
 * ./messages.ts translates messages. See docs/service-bus-protocols.md.
 */
import { restEntityLength } from '../dispatch.js';
import type { ProtocolModule } from '../types.js';
import { REST_STATUSES, serveRest } from './serve.js';

export const restProtocol: ProtocolModule = {
  // Send: POST on `{entity}/messages` itself; everything under it (head, lock URLs) receives.
  right: ({ method, segments }) => (method === 'POST' && segments.length === (restEntityLength(segments) ?? -2) + 1 ? 'Send' : 'Listen'),
  serve: serveRest,
  statuses: REST_STATUSES,
};
