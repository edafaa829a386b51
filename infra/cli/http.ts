/**
 * The CLI's way to the broker's HTTP API (API.md), signed with the one SAS signer in lib/auth.
 *
 * The CLI is meant to sit on `sluice/client` (lib/client, the @azure/service-bus-compatible
 * client); until it has the calls the CLI needs, this is the transport. Keep it thin: paths
 * and JSON in, JSON or a CliError out.
 */
import { connectionStringResource, signToken, type ConnectionString } from '../../lib/auth/index.js';
import { brokerError } from './errors.js';

export interface Transport {
  request<T = unknown>(method: string, path: string, options?: { body?: unknown; query?: Record<string, string | number | undefined>; signal?: AbortSignal }): Promise<T>;
  readonly endpoint: string;
}

/** `sb://host/` means https, as the Service Bus SDKs read it; an http(s) URL is taken as given. */
export function baseUrl(endpoint: string): string {
  const url = endpoint.replace(/^sb:\/\//i, 'https://');
  return url.replace(/\/+$/, '');
}

const TOKEN_LIFETIME_S = 3600;

export function httpTransport(cs: ConnectionString, nowMs: () => number = Date.now): Transport {
  const base = baseUrl(cs.endpoint);
  let cached: { token: string; renewAt: number } | undefined;
  const token = () => {
    const now = nowMs();
    if (!cached || now >= cached.renewAt) {
      const expiresAt = Math.floor(now / 1000) + TOKEN_LIFETIME_S;
      cached = {
        token: signToken({ resourceUri: connectionStringResource(cs), keyName: cs.sharedAccessKeyName, key: cs.sharedAccessKey, expiresAt }),
        renewAt: now + (TOKEN_LIFETIME_S - 300) * 1000,
      };
    }
    return cached.token;
  };
  return {
    endpoint: base,
    async request<T>(method: string, path: string, options: { body?: unknown; query?: Record<string, string | number | undefined>; signal?: AbortSignal } = {}) {
      const url = new URL(`${base}${path}`);
      for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      const res = await fetch(url, {
        method,
        headers: { authorization: token(), ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      if (!res.ok) {
        const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
        throw brokerError(error?.code, error?.message ?? `${res.status} ${res.statusText}`, res.status);
      }
      return parsed as T;
    },
  };
}
