/**
 * Serving Service Bus's own HTTP protocols (docs/service-bus-protocols.md): the one entry the
 * api function (functions/api/handler.ts) calls for a request `protocolOf` does not give to
 * Sluice's own API. It authorizes the request as these clients sign it (./sas.ts), hands it
 * to the protocol's module, and shapes every failure as Service Bus does (./errors.ts).
 *
 * A protocol plugs in as one `ProtocolModule` in `modules` below: `right` says what a token
 * needs before anything runs (read from the request alone), `serve` answers it. `serve` must
 * call `requireGrant(req.grant, sluicePath, right)` for every entity it resolves the path
 * (or the body) to, before touching it: the first check only compares paths in Azure's
 * layout, where `/orders` may be a queue or a topic.
 */
import type { Broker } from '../broker/index.js';
import type { FindRule, IsCurrent } from '../api/authorize.js';
import { BrokerError } from '../errors.js';
import { pathSegments, type Protocol } from './dispatch.js';
import { authorizeServiceBus, unauthorized } from './sas.js';
import { errorAnswer, serviceBusErrorAnswer, type ProtocolAnswer } from './errors.js';
import type { ProtocolModule } from './types.js';
import { atomProtocol } from './atom/index.js';
import { restProtocol } from './rest/index.js';

export type { ProtocolAnswer } from './errors.js';
export type { ProtocolModule, ProtocolRequest } from './types.js';

/** Lambda's payload limit, as for Sluice's own API. */
export const MAX_SERVICE_BUS_REQUEST_BYTES = 6 * 1024 * 1024;

export interface ServiceBusHttpRequest {
  method: string;
  /** Still percent-encoded. */
  rawPath: string;
  query: Readonly<Record<string, string | undefined>>;
  /** Lower-cased names (API Gateway payload 2.0). */
  headers: Readonly<Record<string, string | undefined>>;
  body: string | undefined;
  isBase64Encoded: boolean;
  requestId: string;
  /** API Gateway's `requestContext.domainName`, when the Host header is missing. */
  domainName?: string;
}

const modules: Record<Exclude<Protocol, 'sluice'>, ProtocolModule> = { atom: atomProtocol, rest: restProtocol };

export interface ServiceBusOptions {
  findRule: FindRule;
  isCurrent: IsCurrent;
  log: (message: string, error: unknown) => void;
  /** Now as token expiry reads it: the wall clock (`wallSeconds`), as Sluice's own API reads it. */
  nowSeconds: () => number;
}

export async function serveServiceBus(
  broker: Broker,
  protocol: Exclude<Protocol, 'sluice'>,
  request: ServiceBusHttpRequest,
  options: ServiceBusOptions,
): Promise<ProtocolAnswer> {
  const module = modules[protocol];
  try {
    const segments = pathSegments(request.rawPath);
    const headers = request.headers;
    const host = headers.host ?? request.domainName ?? 'localhost';
    const method = request.method.toUpperCase();
    const needed = module.right({ method, segments, headers });
    const now = options.nowSeconds();
    const decision = await authorizeServiceBus({ path: request.rawPath, host, headers }, needed, now, options.findRule, options.isCurrent);
    if (!decision.ok) {
      if (decision.status === 400)
        throw new BrokerError('BadRequest', `path segment ${decision.badName}: is not a name`, { field: `path segment ${decision.badName}` });
      throw unauthorized();
    }
    const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body, request.isBase64Encoded ? 'base64' : 'utf8');
    if (body.length > MAX_SERVICE_BUS_REQUEST_BYTES) {
      return errorAnswer(413, `The request is larger than ${MAX_SERVICE_BUS_REQUEST_BYTES} bytes.`, request.requestId);
    }
    const proto = headers['x-forwarded-proto']?.split(',', 1)[0]?.trim().toLowerCase();
    return await module.serve(broker, {
      method,
      rawPath: request.rawPath,
      segments,
      query: request.query,
      headers,
      body,
      host,
      scheme: proto === 'http' ? 'http' : 'https',
      grant: decision.grant,
      requestId: request.requestId,
    });
  } catch (error) {
    return serviceBusErrorAnswer(error, request.requestId, options.log, module.statuses);
  }
}
