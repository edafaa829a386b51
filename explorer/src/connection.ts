/**
 * What the page connects with: a connection string (the key stays in this tab: tokens are
 * signed here with Web Crypto by sluice/client's signer and only the token is sent) or a
 * ready-made SAS token. Kept in sessionStorage, so it ends with the tab and is never written
 * to disk by the page.
 */
import { parseServiceBusConnectionString } from '../../lib/client/connection-string.js';
import { AzureNamedKeyCredential } from '../../lib/client/credentials.js';
import { SasTokenProvider } from '../../lib/client/sas.js';

const storageKey = 'sluice.explorer.connection';

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
  // The whole line npm start printed works too.
  const text = pasted.trim().replace(/^Connection string:\s*/i, '');
  if (text === '') throw new CredentialsError('Paste the connection string that `npm start` printed, or a SAS token.');
  if (/^(Authorization:\s*)?SharedAccessSignature\s/i.test(text)) return fromToken(text);
  let parsed;
  try {
    parsed = parseServiceBusConnectionString(text);
  } catch (error) {
    throw new CredentialsError(`That is not a connection string: ${(error as Error).message}`);
  }
  if (parsed.sharedAccessSignature) return fromToken(parsed.sharedAccessSignature);
  const keyName = parsed.sharedAccessKeyName!;
  // The verifier looks at the path of sr only, so the endpoint's host may differ from this page's.
  let audience: string;
  try {
    const url = new URL(parsed.endpoint.replace(/^sb:/i, 'https:'));
    audience = `${url.protocol}//${url.host}/${parsed.entityPath ?? ''}`;
  } catch {
    throw new CredentialsError("The connection string's Endpoint is not a URL.");
  }
  const tokens = new SasTokenProvider(new AzureNamedKeyCredential(keyName, parsed.sharedAccessKey!));
  return {
    text,
    keyName,
    entityPath: parsed.entityPath?.replace(/^\/+|\/+$/g, '') ?? null,
    authorization: () => tokens.getToken(audience),
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
