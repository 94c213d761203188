// A throwaway certificate authority for TLS tests, built on node:crypto alone: node can sign but not
// write X.509, so the few DER structures a certificate needs are encoded here by hand.

import { X509Certificate, createHash, createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';

export interface IssuedCertificate {
  /** PEM certificate followed by the CA's, as a server presents its chain. */
  readonly cert: string;
  readonly key: string;
}

export interface TestCa {
  /** PEM of the CA certificate: what a client trusts. */
  readonly cert: string;
  /** A server certificate for DNS names and IP addresses (`['hs1.test', '127.0.0.2']`). */
  issue(names: readonly string[]): IssuedCertificate;
}

// --- DER -------------------------------------------------------------------------------------

function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...c: Buffer[]) => der(0x30, ...c);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes = [parts[0]! * 40 + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

/** A positive INTEGER from big-endian bytes. */
function integer(bytes: Buffer): Buffer {
  return der(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

const bitString = (bytes: Buffer) => der(0x03, Buffer.from([0]), bytes);
const octetString = (bytes: Buffer) => der(0x04, bytes);
const utcTime = (d: Date) => der(0x17, Buffer.from(d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z'));
const name = (cn: string) => seq(der(0x31, seq(oid('2.5.4.3'), der(0x0c, Buffer.from(cn)))));

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), der(0x01, Buffer.from([0xff])), octetString(value)) : seq(oid(id), octetString(value));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // Expand `::` and write the eight groups.
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.concat(groups.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

function keyId(publicKey: KeyObject): Buffer {
  // RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. The SPKI of a P-256 key ends
  // with the 65-byte point.
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha1').update(spki.subarray(spki.length - 65)).digest();
}

function certificate(opts: {
  subject: string;
  publicKey: KeyObject;
  issuer: string;
  issuerKey: KeyObject;
  issuerPublicKey: KeyObject;
  extensions: Buffer[];
}): string {
  const now = Date.now();
  const serial = randomBytes(16);
  // Positive and without a leading zero byte, which DER forbids in an INTEGER.
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  const tbs = seq(
    der(0xa0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    name(opts.issuer),
    seq(utcTime(new Date(now - 3600_000)), utcTime(new Date(now + 2 * 86400_000))),
    name(opts.subject),
    opts.publicKey.export({ type: 'spki', format: 'der' }),
    der(
      0xa3,
      seq(
        ...opts.extensions,
        extension('2.5.29.14', false, octetString(keyId(opts.publicKey))),
        extension('2.5.29.35', false, seq(der(0x80, keyId(opts.issuerPublicKey)))),
      ),
    ),
  );
  const signature = sign('sha256', tbs, opts.issuerKey);
  const body = seq(tbs, ECDSA_SHA256, bitString(signature)).toString('base64');
  return `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
}

function p256() {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

export function createTestCa(commonName = 'Hearth test CA'): TestCa {
  const ca = p256();
  const caCert = certificate({
    subject: commonName,
    publicKey: ca.publicKey,
    issuer: commonName,
    issuerKey: ca.privateKey,
    issuerPublicKey: ca.publicKey,
    extensions: [
      extension('2.5.29.19', true, seq(der(0x01, Buffer.from([0xff])))),
      // keyCertSign and cRLSign.
      extension('2.5.29.15', true, der(0x03, Buffer.from([1, 0x06]))),
    ],
  });
  return {
    cert: caCert,
    issue(names) {
      if (names.length === 0) throw new Error('a certificate needs at least one name');
      const leaf = p256();
      const altNames = names.map((n) => (isIP(n) ? der(0x87, ipBytes(n)) : der(0x82, Buffer.from(n))));
      const cert = certificate({
        subject: names[0]!,
        publicKey: leaf.publicKey,
        issuer: commonName,
        issuerKey: ca.privateKey,
        issuerPublicKey: ca.publicKey,
        extensions: [
          extension('2.5.29.19', true, seq()),
          extension('2.5.29.17', false, seq(...altNames)),
          // serverAuth.
          extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
        ],
      });
      // Fail here, not in a handshake, if the encoding above is ever wrong.
      if (!new X509Certificate(cert).verify(createPublicKey(caCert))) throw new Error('issued certificate does not verify');
      return { cert: cert + caCert, key: leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
    },
  };
}

export interface TestHttpsServer {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

/** An HTTPS server on `host:port` (port 0: any free one) presenting `cert`. */
export async function listenHttps(
  host: string,
  port: number,
  cert: IssuedCertificate,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestHttpsServer> {
  const server = createServer({ cert: cert.cert, key: cert.key }, handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
