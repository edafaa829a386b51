/** The Atom/XML management plane. */
import { errorAnswer } from '../errors.js';
import type { ProtocolModule } from '../types.js';

export const atomProtocol: ProtocolModule = {
  right: ({ segments }) => (segments.length === 1 && segments[0]!.toLowerCase() === '$namespaceinfo' ? 'Any' : 'Manage'),
  serve: async (_broker, req) => errorAnswer(404, 'The management plane is not served yet.', req.requestId),
};
