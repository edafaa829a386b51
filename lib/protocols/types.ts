/** The shape a Service Bus protocol plugs in with (see serve.ts). */
import type { Broker } from '../broker/index.js';
import type { Grant } from '../auth/index.js';
import type { NeededRight } from './sas.js';
import type { ProtocolAnswer, StatusMap } from './errors.js';

/** What a protocol's handler is given: the request, read, with the grant of its token. */
export interface ProtocolRequest {
  /** Upper-case. */
  method: string;
  rawPath: string;
  /** Percent-decoded, as sent (case kept), empty segments dropped. */
  segments: string[];
  query: Readonly<Record<string, string | undefined>>;
  headers: Readonly<Record<string, string | undefined>>;
  body: Buffer;
  /** `host[:port]` the client used, and its scheme: for absolute URLs in answers (`<id>`, `Location`). */
  host: string;
  scheme: 'http' | 'https';
  grant: Grant;
  requestId: string;
}

export interface ProtocolModule {
  /** The right the token's rule needs for this request, before `serve` runs. */
  right(req: Pick<ProtocolRequest, 'method' | 'segments' | 'headers'>): NeededRight;
  serve(broker: Broker, req: ProtocolRequest): Promise<ProtocolAnswer>;
  /** How this protocol answers some error codes (the REST plane: a lost lock is 404). */
  statuses?: StatusMap;
}
