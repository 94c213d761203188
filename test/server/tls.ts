// A self-signed certificate for TLS listener tests, and a GET that trusts only it.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';

export interface TestCertificate {
  readonly certPath: string;
  readonly keyPath: string;
  readonly cert: Buffer;
}

/** Writes cert.pem and key.pem (P-256, CN and SAN localhost and 127.0.0.1) into `dir`. */
export function makeSelfSignedCertificate(dir: string): TestCertificate {
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  const r = spawnSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyPath, '-out', certPath, '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  return { certPath, keyPath, cert: readFileSync(certPath) };
}

/** GET over TLS, verifying the server against `ca` alone. */
export function httpsGet(url: string, ca: Buffer): Promise<{ status: number; body: string; contentType: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', ca, agent: false, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, contentType: String(res.headers['content-type'] ?? '') }));
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within 10 s`)));
    req.on('error', reject);
    req.end();
  });
}
