// The federation check against real servers on loopback: a Hearth server (hs1.test on 127.0.0.2,
// found through SRV `_chat._tcp`), and two misconfigured HTTPS servers on 127.0.0.3: one presenting
// a certificate for another name, one (found through `_matrix-fed._tcp`) serving keys whose
// signature does not hold. Names come from a test DNS server, certificates from a test CA. Also the
// admin route over HTTP and the `hearth federation-check` command as a child process.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type CheckStep, type FederationCheckDeps, type FederationReport, federationCheck } from '../../src/federation/check.js';
import { federationCheckRoutes } from '../../src/federation/check-routes.js';
import { serverKeysDocument } from '../../src/federation/key-server.js';
import { buildHttpApp } from '../../src/http/app.js';
import { HearthError } from '../../src/protocol/errors.js';
import { generateSigningKey } from '../../src/protocol/signing.js';
import type { TestDnsServer } from '../support/dns-server.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestHttpsServer, listenHttps } from '../support/test-ca.js';
import type { TestServer } from '../support/server.js';

const CLI = new URL('../../src/cli.ts', import.meta.url).pathname;

let net: FederationNet;
let dnsServer: TestDnsServer;
let dir: string;
let caFile: string;
let hs1: TestServer;
let badCert: TestHttpsServer;
let badKeys: TestHttpsServer;
let deps: FederationCheckDeps;

const stepOf = (report: FederationReport, name: CheckStep['name']) => report.steps.find((s) => s.name === name)!;

before(async () => {
  net = await startFederationNet();
  ({ dns: dnsServer, dir } = net);
  const { ca } = net;
  caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.cert);
  deps = { dns: net.resolver, ca: ca.cert, timeoutMs: 3000 };

  hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2' });

  // Presents a certificate for another name than the one it is found by.
  badCert = await listenHttps('127.0.0.3', 0, ca.issue(['wrong.test']), (_req, res) => res.end('{}'));
  dnsServer.set('badcert.test', { a: ['127.0.0.3'] });
  dnsServer.set('_chat._tcp.badcert.test', { srv: [{ target: 'badcert.test', port: badCert.port }] });

  // A Matrix-named server whose key document was changed after signing.
  const key = generateSigningKey('k1');
  badKeys = await listenHttps('127.0.0.3', 0, ca.issue(['badkeys.test']), (req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/_matrix/federation/v1/version') return res.end(JSON.stringify({ server: { name: 'Fake', version: '1.0' } }));
    if (req.url === '/_matrix/key/v2/server') {
      const doc = serverKeysDocument({ serverName: 'badkeys.test', signingKey: key, validityPeriodMs: 3600_000 }, Date.now());
      return res.end(JSON.stringify({ ...doc, valid_until_ts: (doc.valid_until_ts as number) + 1 }));
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' }));
  });
  dnsServer.set('badkeys.test', { a: ['127.0.0.3'] });
  dnsServer.set('_matrix-fed._tcp.badkeys.test', { srv: [{ target: 'badkeys.test', port: badKeys.port }] });
});

after(async () => {
  await hs1?.close();
  await badCert?.close();
  await badKeys?.close();
  await net?.close();
});

describe('federationCheck', () => {
  test('a working server: every step passes, the keys verify', async () => {
    const report = await federationCheck('hs1.test', deps);
    assert.equal(report.ok, true, JSON.stringify(report, null, 2));
    assert.equal(report.naming, 'chat');
    assert.deepEqual(
      report.steps.map((s) => s.name),
      ['server name', 'well-known', 'srv', 'resolution', 'tls', 'version', 'keys', 'reach back'],
    );
    for (const s of report.steps) assert.equal(s.ok, true, s.name);
    const port = hs1.server.listeners.find((l) => l.tls)!.port;
    assert.match(stepOf(report, 'srv').detail, new RegExp(`_chat\\._tcp\\.hs1\\.test → hs1\\.test:${port}`));
    assert.match(stepOf(report, 'srv').detail, /_matrix-fed\._tcp\.hs1\.test: none/);
    assert.match(stepOf(report, 'well-known').detail, /no delegation/);
    assert.match(stepOf(report, 'resolution').detail, /via srv \(chat naming\).*127\.0\.0\.2/);
    const tls = stepOf(report, 'tls').detail;
    assert.match(tls, /SNI hs1\.test/);
    assert.match(tls, /DNS:hs1\.test/);
    assert.match(tls, /issuer CN=Hearth test CA/);
    assert.match(tls, /valid for hs1\.test/);
    assert.match(stepOf(report, 'version').detail, /^Hearth \S+ \(GET \/_chat\/federation\/v1\/version\)/);
    const keyId = hs1.server.core.signingKey.keyId;
    assert.ok(stepOf(report, 'keys').detail.startsWith(`${keyId}, valid until `), stepOf(report, 'keys').detail);
    assert.equal(stepOf(report, 'reach back').skipped, true);
    assert.match(stepOf(report, 'reach back').detail, /not checked/);
  });

  test('a certificate for another name fails the TLS step and skips what needs it', async () => {
    const report = await federationCheck('badcert.test', deps);
    assert.equal(report.ok, false);
    const tls = stepOf(report, 'tls');
    assert.equal(tls.ok, false);
    assert.match(tls.error!, /not valid for badcert\.test/);
    assert.match(tls.detail, /DNS:wrong\.test/);
    for (const name of ['version', 'keys'] as const) {
      assert.equal(stepOf(report, name).skipped, true, name);
      assert.match(stepOf(report, name).error!, /skipped: no TLS connection/);
    }
    assert.doesNotMatch(tls.error!, /not trusted/);
    // A CA this server does not trust (the test server sends it along).
    const untrusted = await federationCheck('hs1.test', { ...deps, ca: [] });
    assert.match(stepOf(untrusted, 'tls').error!, /^the certificate is not trusted: its chain ends in a self-signed CA that is not trusted \(SELF_SIGNED_CERT_IN_CHAIN\)$/);
    // With validation disabled, as configured, the same certificate is accepted (and said to be wrong).
    const lax = await federationCheck('badcert.test', { ...deps, disableTlsValidation: true });
    assert.equal(stepOf(lax, 'tls').ok, true);
    assert.match(stepOf(lax, 'tls').detail, /validation is disabled/);
  });

  test('keys with a broken signature fail the keys step; the Matrix naming is found and used', async () => {
    const report = await federationCheck('badkeys.test', deps);
    assert.equal(report.ok, false);
    assert.equal(report.naming, 'matrix');
    assert.match(stepOf(report, 'resolution').detail, /via srv \(matrix naming\)/);
    assert.equal(stepOf(report, 'tls').ok, true);
    assert.equal(stepOf(report, 'version').detail, 'Fake 1.0 (GET /_matrix/federation/v1/version)');
    const keys = stepOf(report, 'keys');
    assert.equal(keys.ok, false);
    assert.match(keys.error!, /does not verify: bad signature by badkeys\.test ed25519:k1/);
  });

  test('an unresolvable name fails at resolution; an invalid name at the first step', async () => {
    const report = await federationCheck('nowhere.test', deps);
    assert.equal(report.ok, false);
    assert.equal(report.naming, undefined);
    assert.match(stepOf(report, 'well-known').detail, /\/\.well-known\/chat\/server: none/);
    assert.match(stepOf(report, 'srv').detail, /_chat\._tcp\.nowhere\.test: none/);
    const resolution = stepOf(report, 'resolution');
    assert.equal(resolution.ok, false);
    assert.match(resolution.detail, /via default-port/);
    assert.equal(resolution.error, 'nowhere.test has no AAAA or A record');
    assert.equal(stepOf(report, 'tls').skipped, true);

    const invalid = await federationCheck('not a name', deps);
    assert.equal(invalid.ok, false);
    assert.match(stepOf(invalid, 'server name').error!, /not a valid server name/);
    assert.equal(stepOf(invalid, 'resolution').skipped, true);
  });

  test('an explicit port skips discovery', async () => {
    const port = hs1.server.listeners.find((l) => l.tls)!.port;
    const report = await federationCheck(`hs1.test:${port}`, deps);
    assert.equal(stepOf(report, 'well-known').skipped, true);
    assert.equal(stepOf(report, 'resolution').detail.startsWith('via explicit-port'), true);
    // The key document names hs1.test, not hs1.test:port: verifyKeyResponse says so.
    assert.match(stepOf(report, 'keys').error!, new RegExp(`server_name is not hs1\\.test:${port}`));
  });
});

describe('the admin route', () => {
  let app: FastifyInstance;
  before(async () => {
    app = buildHttpApp(federationCheckRoutes(deps), {
      authenticate: async (token) => {
        if (token !== 'admin' && token !== 'user') throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
        return { userId: `@${token}:hs0.test`, deviceId: 'D', isGuest: false, isAdmin: token === 'admin' };
      },
    });
    await app.ready();
  });
  after(() => app.close());

  test('answers the report to admins, under both admin prefixes, and refuses others', async () => {
    for (const prefix of ['/_ext/admin', '/_synapse/admin']) {
      const res = await app.inject({ method: 'GET', url: `${prefix}/v1/federation/check/badkeys.test`, headers: { authorization: 'Bearer admin' } });
      assert.equal(res.statusCode, 200, prefix);
      const report = res.json() as FederationReport;
      assert.equal(report.server_name, 'badkeys.test');
      assert.equal(report.ok, false);
      assert.equal(stepOf(report, 'keys').ok, false);
    }
    const user = await app.inject({ method: 'GET', url: '/_ext/admin/v1/federation/check/hs1.test', headers: { authorization: 'Bearer user' } });
    assert.equal(user.statusCode, 403);
    const nobody = await app.inject({ method: 'GET', url: '/_ext/admin/v1/federation/check/hs1.test' });
    assert.equal(nobody.statusCode, 401);
  });
});

describe('hearth federation-check', () => {
  // Asynchronous: the DNS and HTTPS servers it asks run in this process. It runs in a folder
  // without hearth.yaml (the defaults apply), so tsx is named by path.
  function hearth(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), CLI, 'federation-check', ...args],
        { cwd: dir, env: { ...process.env, HEARTH_DNS_SERVERS: dnsServer.address, HEARTH_EXTRA_CA: caFile }, timeout: 20_000 },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
      );
    });
  }

  test('exit 0 with a line per step for a working server, 1 and a JSON report for a broken one, 2 for bad usage', async () => {
    const [good, bad, none] = await Promise.all([hearth('hs1.test'), hearth('badcert.test', '--json'), hearth()]);
    assert.equal(good.code, 0, good.stderr + good.stdout);
    assert.match(good.stdout, /^Federation check of hs1\.test \(chat naming\)$/m);
    for (const name of ['server name', 'srv', 'resolution', 'tls', 'version', 'keys']) assert.match(good.stdout, new RegExp(`^✓ ${name} `, 'm'), name);
    assert.match(good.stdout, /^OK: federation with hs1\.test would work\.$/m);

    assert.equal(bad.code, 1, bad.stderr);
    const report = JSON.parse(bad.stdout) as FederationReport;
    assert.equal(report.ok, false);
    assert.equal(stepOf(report, 'tls').ok, false);
    assert.match(stepOf(report, 'tls').error!, /not valid for badcert\.test/);

    assert.equal(none.code, 2);
    assert.match(none.stderr, /missing SERVER_NAME/);
  });
});
