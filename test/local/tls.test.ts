import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { localCertificate } from '../../infra/local/tls.js';

describe('npm start -- --tls: the local certificate', () => {
  it('is generated once, kept with the data, and names localhost and 127.0.0.1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    try {
      const first = await localCertificate(dir, '127.0.0.1');
      expect(first.certFile).toBe(join(dir, 'tls', 'cert.pem'));
      expect(readFileSync(first.certFile!, 'utf8')).toBe(first.cert);
      const again = await localCertificate(dir, '127.0.0.1');
      expect(again.cert).toBe(first.cert);
      const x509 = new X509Certificate(first.cert);
      expect(x509.checkIP('127.0.0.1')).toBe('127.0.0.1');
      expect(x509.checkHost('localhost')).toBe('localhost');
      expect(x509.ca).toBe(true);
      expect(new Date(x509.validTo).getTime()).toBeGreaterThan(Date.now() + 365 * 86_400_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
