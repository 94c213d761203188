// A loopback network for federation tests: a DNS server the test runs (and a resolver asking it),
// a test CA, and a folder for certificate files. `startFederatedServer` starts a Hearth server with
// a TLS listener on its own loopback address and publishes it by an A record and an SRV record of
// its naming (or its own well-known), so other servers on the net find it as they would on the
// internet.

import { promises as dns } from 'node:dns';
import { type AddressInfo, createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FederationReach } from '../../src/context.js';
import { type TestDnsServer, startDnsServer } from './dns-server.js';
import { type Backend, type ConfigOverrides, type TestServer, mergeConfig, startTestServer } from './server.js';
import { type TestCa, createTestCa } from './test-ca.js';

export interface FederationNet {
  readonly dns: TestDnsServer;
  /**
   * The port every server of the net fetches well-knowns from (443 on the internet). A server
   * published by well-known listens on it; the others have nothing there, so the well-known
   * lookup fails at once and SRV is next.
   */
  readonly wellKnownPort: number;
  /** Asks `dns` only. */
  readonly resolver: dns.Resolver;
  readonly ca: TestCa;
  /** Where certificate files (and anything else of the test's) are written. */
  readonly dir: string;
  /** Stops the DNS server and removes `dir` (servers are the test's to close). */
  close(): Promise<void>;
}

export async function startFederationNet(): Promise<FederationNet> {
  const server = await startDnsServer();
  const resolver = new dns.Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([server.address]);
  const dir = mkdtempSync(join(tmpdir(), 'hearth-federation-'));
  return {
    dns: server,
    wellKnownPort: await freePort(),
    resolver,
    ca: createTestCa(),
    dir,
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface FederatedServerOptions {
  readonly name: string;
  /** The loopback address of its TLS listener, e.g. 127.0.0.2. */
  readonly address: string;
  /** Its `global.protocol_name`, and so which SRV record publishes it; default 'chat'. */
  readonly naming?: 'chat' | 'matrix';
  readonly backend?: Backend;
  readonly config?: ConfigOverrides;
  /** Beyond the net's resolver and CA (e.g. the sender's retry pauses). */
  readonly federation?: Omit<FederationReach, 'dns' | 'ca' | 'wellKnownPort'>;
  /**
   * How others find it: an SRV record of its naming (default), or its own well-known
   * (`/.well-known/chat|matrix/server` on the net's well-known port, naming that port).
   */
  readonly discovery?: 'srv' | 'well-known';
}

/** A TCP port free on loopback now. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function startFederatedServer(net: FederationNet, options: FederatedServerOptions): Promise<TestServer> {
  const { name, address } = options;
  const naming = options.naming ?? 'chat';
  const cert = net.ca.issue([name]);
  const certFile = join(net.dir, `${name}.crt`);
  const keyFile = join(net.dir, `${name}.key`);
  writeFileSync(certFile, cert.cert);
  writeFileSync(keyFile, cert.key);
  const byWellKnown = options.discovery === 'well-known';
  const global = { protocol_name: naming, ...(byWellKnown ? { well_known_server_name: `${name}:${net.wellKnownPort}` } : {}) };
  const hs = await startTestServer({
    ...(options.backend !== undefined ? { backend: options.backend } : {}),
    serverName: name,
    config: mergeConfig(
      { global, listen: { http: '127.0.0.1:0', https: `${address}:${byWellKnown ? net.wellKnownPort : 0}`, tls_cert: certFile, tls_key: keyFile } },
      options.config ?? {},
    ),
    federation: { ...options.federation, dns: net.resolver, ca: net.ca.cert, wellKnownPort: net.wellKnownPort },
  });
  const port = hs.server.listeners.find((l) => l.tls)!.port;
  net.dns.set(name, { a: [address] });
  if (!byWellKnown) net.dns.set(naming === 'chat' ? `_chat._tcp.${name}` : `_matrix-fed._tcp.${name}`, { srv: [{ target: name, port }] });
  return hs;
}
