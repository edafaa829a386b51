/**
 * What the page connects with: a connection string (the key stays in this tab: tokens are
 * signed here with Web Crypto and only the token is sent) or a ready-made SAS token.
 * Kept in sessionStorage, so it ends with the tab and is never written to disk by the page.
 *
 * Signing follows lib/auth/sas.ts: HMAC-SHA256 keyed with the key text's UTF-8 bytes over
 * `encodeURIComponent(lowercased audience) + "\n" + expiry`, as @azure/service-bus does.
 */
import { parseConnectionString } from '../../lib/auth/connection-string.js';

const storageKey = 'sluice.explorer.connection';
const tokenLifetimeSeconds = 3600;

export interface Credentials {
  /** What was pasted, kept in sessionStorage. */
  readonly text: string;
  /** Entity the credentials are scoped to, if any (EntityPath, or a token's sr path). */
  readonly entityPath: string | null;
  /** Key name, for display. */
  readonly keyName: string;
  /** An Authorization header value valid for a while yet. */
  authorization(): Promise<string>;
}

export class CredentialsError extends Error {
  override name = 'CredentialsError';
}

const encoder = new TextEncoder();

function base64(bytes: ArrayBuffer): string {
  let text = '';
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text);
}

export async function signToken(audience: string, keyName: string, key: string, expiry: number): Promise<string> {
  const sr = encodeURIComponent(audience.toLowerCase());
  const cryptoKey = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const sig = await crypto.subtle.sign('HMAC', cryptoKey, encoder.encode(`${sr}\n${expiry}`));
  return `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(base64(sig))}&se=${expiry}&skn=${encodeURIComponent(keyName)}`;
}

function fromToken(text: string): Credentials {
  const token = text.replace(/^Authorization:\s*/i, '').trim();
  const fields = new URLSearchParams(token.replace(/^SharedAccessSignature\s+/i, ''));
  const sr = fields.get('sr');
  const se = Number(fields.get('se'));
  if (!sr || !fields.get('sig') || !Number.isFinite(se)) {
    throw new CredentialsError('This SAS token is missing sr, sig or se. Paste the whole "SharedAccessSignature sr=...&sig=...&se=...&skn=..." text.');
  }
  if (se * 1000 < Date.now()) throw new CredentialsError(`This SAS token expired at ${new Date(se * 1000).toISOString()}.`);
  let path = sr;
  try {
    path = new URL(sr).pathname;
  } catch {
    // a bare path
  }
  const entityPath = path.replace(/^\/+|\/+$/g, '') || null;
  return { text, entityPath, keyName: fields.get('skn') ?? '(token)', authorization: async () => token };
}

/** Reads a pasted connection string or SAS token; throws CredentialsError with a message for people. */
export function readCredentials(pasted: string): Credentials {
  const text = pasted.trim();
  if (text === '') throw new CredentialsError('Paste the connection string that `npm start` printed, or a SAS token.');
  if (/^(Authorization:\s*)?SharedAccessSignature\s/i.test(text)) return fromToken(text);
  let parsed;
  try {
    parsed = parseConnectionString(text);
  } catch (error) {
    throw new CredentialsError(`That is not a connection string: ${(error as Error).message}.`);
  }
  const { sharedAccessKeyName: keyName, sharedAccessKey: key } = parsed;
  // The verifier looks at the path of sr only, so the endpoint's host may differ from this page's.
  let audience: string;
  try {
    const url = new URL(parsed.endpoint.replace(/^sb:/i, 'https:'));
    audience = `${url.protocol}//${url.host}/${parsed.entityPath ?? ''}`;
  } catch {
    throw new CredentialsError('The connection string\'s Endpoint is not a URL.');
  }
  let cached: { header: string; expiry: number } | null = null;
  return {
    text,
    keyName,
    entityPath: parsed.entityPath?.replace(/^\/+|\/+$/g, '') ?? null,
    async authorization() {
      const now = Math.floor(Date.now() / 1000);
      if (!cached || cached.expiry - now < 300) {
        const expiry = now + tokenLifetimeSeconds;
        cached = { header: await signToken(audience, keyName, key, expiry), expiry };
      }
      return cached.header;
    },
  };
}

export function saveCredentials(credentials: Credentials): void {
  sessionStorage.setItem(storageKey, credentials.text);
}

export function loadCredentials(): Credentials | null {
  const text = sessionStorage.getItem(storageKey);
  if (!text) return null;
  try {
    return readCredentials(text);
  } catch {
    sessionStorage.removeItem(storageKey);
    return null;
  }
}

export function forgetCredentials(): void {
  sessionStorage.removeItem(storageKey);
}
