/**
 * The CLI's way to the broker's HTTP API (docs/http-api.md): sluice/client's transport (its SAS token
 * cache, B1 errors as ServiceBusError, retries that never repeat a request that may have been
 * applied), called with the API's own paths and JSON. The CLI speaks in the API's shapes
 * (what `--json` prints) and uses Sluice extensions the SDK has no names for (resubmit, peek
 * by state, purge of a dead-letter subqueue), so it does not go through the SDK-shaped
 * ServiceBusClient and administration client.
 */
import type { ConnectionString } from '../../lib/auth/index.js';
import { AzureNamedKeyCredential } from '../../lib/client/credentials.js';
import { HttpTransport } from '../../lib/client/transport.js';
import { requestEndpoint } from '../../lib/client/connection-string.js';
import { toCliError } from './errors.js';

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal;
  /** A long poll: how long the broker may legitimately hold the answer. */
  waitMs?: number;
}

export interface Transport {
  request<T = unknown>(method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, options?: RequestOptions): Promise<T>;
}

/**
 * The entity a path is about, which is the audience its token is signed for (so a key scoped
 * to one entity works): `/topics/t/subscriptions/s/messages` → `topics/t/subscriptions/s`.
 */
export function audienceOf(path: string): string {
  const s = path.split('/').filter(Boolean);
  if (s[0] === 'topics' && s[2] === 'subscriptions' && s.length >= 4) return s.slice(0, 4).join('/');
  if ((s[0] === 'queues' || s[0] === 'topics') && s.length >= 2) return s.slice(0, 2).join('/');
  return '';
}

/** Someone is waiting at a terminal: two quick retries, not the SDK's three with growing delays. */
export const cliRetryOptions = { maxRetries: 2, retryDelayInMs: 500 };

export function httpTransport(cs: ConnectionString): Transport {
  const transport = new HttpTransport(requestEndpoint(cs), new AzureNamedKeyCredential(cs.sharedAccessKeyName, cs.sharedAccessKey), {
    retryOptions: cliRetryOptions,
  });
  return {
    async request<T>(method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, options: RequestOptions = {}) {
      // Commands see CliErrors only: one place decides the exit code and the hint.
      const res = await transport
        .request<T>({
          method,
          path,
          // Always the path's own entity: what a key scoped to it covers, whichever way EntityPath is spelt.
          audience: audienceOf(path),
          // Reads and property PUTs may be repeated; sends, receives, settlements and deletes may not.
          idempotent: method === 'GET' || method === 'PUT',
          ...(options.query ? { query: options.query } : {}),
          ...(options.body !== undefined ? { body: options.body } : {}),
          ...(options.signal ? { abortSignal: options.signal } : {}),
          ...(options.waitMs ? { waitMs: options.waitMs } : {}),
        })
        .catch((error: unknown) => {
          throw toCliError(error);
        });
      return res.body;
    },
  };
}
