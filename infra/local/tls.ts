/**
 * `npm start -- --tls`: a self-signed certificate for the local runtime, for the clients that
 * speak only HTTPS (the official admin clients of @azure/service-bus 7.9, Python, Go). It is
 * generated once with `selfsigned` and kept with the data, so a client told to trust it keeps
 * trusting it across restarts. The certificate is its own CA, valid for localhost, 127.0.0.1
 * and ::1 (and the host Sluice listens on).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isIP } from 'node:net';
import { generate } from 'selfsigned';

export interface LocalCertificate {
  key: string;
  cert: string;
  /** Where the certificate is kept (to pass as NODE_EXTRA_CA_CERTS), or null when in memory. */
  certFile: string | null;
}

const DAY_MS = 86_400_000;

async function create(host: string): Promise<{ key: string; cert: string }> {
  const names = new Set(['localhost', '127.0.0.1', '::1', host]);
  const altNames = [...names].filter((n) => n !== '0.0.0.0' && n !== '::').map((n) => (isIP(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n }));
  const now = Date.now();
  const pems = await generate([{ name: 'commonName', value: 'Sluice local runtime' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - DAY_MS),
    notAfterDate: new Date(now + 825 * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/** The runtime's certificate: the one kept in `dataDir/tls/`, else a new one (kept there when there is a `dataDir`). */
export async function localCertificate(dataDir: string | null, host: string): Promise<LocalCertificate> {
  if (!dataDir) return { ...(await create(host)), certFile: null };
  const dir = join(dataDir, 'tls');
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  if (existsSync(keyFile) && existsSync(certFile)) return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile };
  const made = await create(host);
  mkdirSync(dir, { recursive: true });
  writeFileSync(keyFile, made.key, { mode: 0o600 });
  writeFileSync(certFile, made.cert);
  return { ...made, certFile };
}
