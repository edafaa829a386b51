/**
 * The REST data plane (send, peek-lock, receive-and-delete, complete, unlock, renew with
 * `BrokerProperties`). Its handler plugs in here; until then every REST request, once
 * authorized, is answered 404.
 */
import { restEntityLength } from '../dispatch.js';
import { errorAnswer } from '../errors.js';
import type { ProtocolModule } from '../types.js';

export const restProtocol: ProtocolModule = {
  // Send: POST on `{entity}/messages` itself; everything under it (head, lock URLs) receives.
  right: ({ method, segments }) => (method === 'POST' && segments.length === (restEntityLength(segments) ?? -2) + 1 ? 'Send' : 'Listen'),
  serve: async (_broker, req) => errorAnswer(404, 'The REST data plane is not served yet.', req.requestId),
};
