/**
 * SAS tokens made in the client, with Web Crypto (so the same code signs in Node 20+ and in a
 * browser). The token format is the one every Service Bus SDK sends and lib/auth/sas.ts
 * verifies: HMAC-SHA256 keyed with the key's UTF-8 text over "<enc(lower(uri))>\n<expiry>".
 */
import { isNamedKeyCredential, type AzureNamedKeyCredential, type AzureSASCredential } from './credentials.js';

const encoder = new TextEncoder();

function base64(bytes: ArrayBuffer): string {
  let text = '';
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text);
}

/** The token for `audience` (a URI) valid until `expiresAt` (seconds since the epoch). */
export async function createSasToken(audience: string, keyName: string, key: string, expiresAt: number): Promise<string> {
  const sr = encodeURIComponent(audience.toLowerCase());
  const se = String(Math.floor(expiresAt));
  const hmacKey = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const sig = base64(await crypto.subtle.sign('HMAC', hmacKey, encoder.encode(`${sr}\n${se}`)));
  return `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(sig)}&se=${se}&skn=${encodeURIComponent(keyName)}`;
}

export interface TokenProviderOptions {
  /** Seconds a token is made valid for. Default one hour, as the Service Bus SDKs do. */
  lifetimeSeconds?: number;
  /** A token is renewed when less than this is left. Default 5 minutes. */
  renewBeforeSeconds?: number;
  /** Wall clock in ms; tests pass their own. */
  now?: () => number;
}

/**
 * One token per audience, cached and renewed before it expires. With an AzureSASCredential
 * the caller's signature is sent as it is (it already names its own audience and expiry).
 */
export class SasTokenProvider {
  private readonly cache = new Map<string, { token: Promise<string>; expiresAt: number; keyName: string; key: string }>();
  private readonly lifetime: number;
  private readonly renewBefore: number;
  private readonly now: () => number;

  constructor(
    private readonly credential: AzureNamedKeyCredential | AzureSASCredential,
    options: TokenProviderOptions = {},
  ) {
    this.lifetime = options.lifetimeSeconds ?? 3600;
    this.renewBefore = options.renewBeforeSeconds ?? 300;
    this.now = options.now ?? Date.now;
  }

  async getToken(audience: string): Promise<string> {
    const credential = this.credential;
    if (!isNamedKeyCredential(credential)) return (credential as AzureSASCredential).signature;
    const nowSeconds = this.now() / 1000;
    const cached = this.cache.get(audience);
    // A key rotated with `credential.update()` must not keep signing with the old one.
    if (cached && cached.expiresAt - nowSeconds > this.renewBefore && cached.keyName === credential.name && cached.key === credential.key) {
      return cached.token;
    }
    const expiresAt = Math.floor(nowSeconds) + this.lifetime;
    const token = createSasToken(audience, credential.name, credential.key, expiresAt);
    const entry = { token, expiresAt, keyName: credential.name, key: credential.key };
    this.cache.set(audience, entry);
    token.catch(() => {
      if (this.cache.get(audience) === entry) this.cache.delete(audience);
    });
    return token;
  }
}
