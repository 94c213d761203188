// `hearth serve`: as a child process for what only a process shows (output, exit status, signals),
// and in this process (startServe) for the startup failures, which are many and cheap there.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, type Server, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { parseSigningKeyFile } from '../../src/protocol/signing.js';
import { StartupError } from '../../src/server/errors.js';
import { type ServeIo, parseServeArgs, startServe } from '../../src/server/serve.js';
import { FIRST_ACCOUNT_TOKEN, LISTENING, LISTENING_TLS, spawnHearth } from './processes.js';
import { type TestCertificate, httpsGet, makeSelfSignedCertificate } from './tls.js';

let dir: string;
let cert: TestCertificate;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-serve-'));
  cert = makeSelfSignedCertificate(dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A config file in a fresh folder of `dir`, data beside it. */
function writeConfig(name: string, extra: Record<string, unknown> = {}): { folder: string; path: string } {
  const folder = join(dir, name);
  const path = join(folder, 'hearth.yaml');
  const file = {
    version: 2,
    global: { server_name: 'serve.test', data_dir: './data' },
    user_api: { bcrypt_cost: 4 },
    ...extra,
  };
  mkdirSync(folder, { recursive: true });
  writeFileSync(path, stringify(file));
  return { folder, path };
}

describe('hearth serve as a process', { concurrency: true }, () => {
  test('serves on the address given by flag, prints the first-account token, stops on SIGTERM', async () => {
    const { folder, path } = writeConfig('basic');
    const hearth = spawnHearth(['serve', '--config', path, '--http-bind-address', '127.0.0.1:0']);
    try {
      const [, url] = await hearth.waitFor(LISTENING);
      assert.match(url!, /^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${url}/health`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'OK');
      assert.equal((await fetch(`${url}/_matrix/client/versions`)).status, 200);
      // The signing key was made in the data folder on this first start.
      const keyFile = join(folder, 'data', 'signing.key');
      assert.equal(parseSigningKeyFile(readFileSync(keyFile, 'utf8')).length, 1);
      assert.match(hearth.stdout(), /Created a new signing key/);
      // No accounts yet: the first-account token is on standard output.
      await hearth.waitFor(FIRST_ACCOUNT_TOKEN);

      hearth.child.kill('SIGTERM');
      const { code } = await hearth.exited();
      assert.equal(code, 0, hearth.stderr());
      assert.match(hearth.stdout(), /SIGTERM received: shutting down/);
      await assert.rejects(fetch(`${url}/health`));
    } finally {
      hearth.kill();
    }
  });

  test('a bad configuration exits 1, listing every problem with its key, without a stack', async () => {
    const { path } = writeConfig('bad', {
      global: { server_name: 'not a server name!', data_dir: './data', key_validity_period: 'forever' },
      listen: { http: 'nowhere', https: '127.0.0.1:8448' },
      user_api: { bcrypt_cost: 99 },
    });
    const hearth = spawnHearth(['serve', '--config', path]);
    try {
      const { code } = await hearth.exited();
      assert.equal(code, 1);
      const err = hearth.stderr();
      for (const key of [
        'global.server_name',
        'global.key_validity_period',
        'listen.http',
        'listen.tls_cert',
        'listen.tls_key',
        'user_api.bcrypt_cost',
      ]) {
        assert.match(err, new RegExp(`^\\s+${key.replace(/\./g, '\\.')}: `, 'm'), `${key} missing from:\n${err}`);
      }
      assert.match(err, /6 problems/);
      assert.doesNotMatch(err, /^\s+at /m);
      assert.equal(hearth.stdout(), '');
    } finally {
      hearth.kill();
    }
  });

  test('--https-bind-address with a certificate serves the same routes as the plain listener', async () => {
    const { path } = writeConfig('tls');
    const hearth = spawnHearth([
      'serve',
      '--config', path,
      '--http-bind-address', '127.0.0.1:0',
      '--https-bind-address', '127.0.0.1:0',
      '--tls-cert', cert.certPath,
      '--tls-key', cert.keyPath,
    ]);
    try {
      const [, plainUrl] = await hearth.waitFor(LISTENING);
      const [, tlsUrl] = await hearth.waitFor(LISTENING_TLS);
      for (const route of ['/health', '/_chat/client/versions', '/.well-known/matrix/server']) {
        const secure = await httpsGet(tlsUrl + route, cert.cert);
        const plain = await fetch(plainUrl + route);
        assert.equal(secure.status, plain.status, route);
        assert.equal(secure.body, await plain.text(), route);
      }
      const keys = await httpsGet(`${tlsUrl}/_chat/key/v2/server`, cert.cert);
      assert.equal(keys.status, 200);
      assert.equal(JSON.parse(keys.body).server_name, 'serve.test');
      hearth.child.kill('SIGINT');
      assert.equal((await hearth.exited()).code, 0);
    } finally {
      hearth.kill();
    }
  });

  test('without a configuration, writes hearth.yaml and a signing key in the working folder, then serves', async () => {
    const cwd = join(dir, 'first-start');
    mkdirSync(cwd, { recursive: true });
    // The generated file is used as written; only the port is moved off 8008 for the test.
    const hearth = spawnHearth(['serve'], { cwd, env: { HEARTH_LISTEN__HTTP: '127.0.0.1:0' } });
    try {
      const [, url] = await hearth.waitFor(LISTENING);
      assert.match(hearth.stdout(), /wrote a default one to .*hearth\.yaml/);
      const { config } = parseConfig(readFileSync(join(cwd, 'hearth.yaml'), 'utf8'), { baseDir: cwd });
      assert.equal(config.global.server_name, 'localhost');
      assert.equal(config.global.data_dir, join(cwd, 'data'));
      assert.deepEqual(config.listen.http, { host: '0.0.0.0', port: 8008 });
      assert.equal(config.client_api.registration_disabled, true);
      assert.equal(parseSigningKeyFile(readFileSync(join(cwd, 'data', 'signing.key'), 'utf8')).length, 1);
      assert.ok(existsSync(join(cwd, 'data', 'hearth.db')));
      assert.equal((await fetch(`${url}/health`)).status, 200);
      hearth.child.kill('SIGTERM');
      assert.equal((await hearth.exited()).code, 0);
    } finally {
      hearth.kill();
    }
  });
});

describe('hearth serve startup', () => {
  const quiet = (): ServeIo & { text: () => string } => {
    let text = '';
    return { out: (t) => void (text += t), err: (t) => void (text += t), env: {}, cwd: dir, text: () => text };
  };
  const serve = (args: string[], io = quiet()) => startServe(parseServeArgs(args, dir), io);
  const withLogsOff = (extra: Record<string, unknown> = {}) => ({ logging: [], ...extra });

  test('a second start keeps the signing key and says nothing about it', async () => {
    const { folder, path } = writeConfig('restart', withLogsOff());
    const keyFile = join(folder, 'data', 'signing.key');
    let first: string | undefined;
    for (let round = 0; round < 2; round++) {
      const io = quiet();
      const running = await serve(['--config', path, '--http-bind-address', '127.0.0.1:0'], io);
      try {
        const url = running.server.listeners[0]!.url;
        const keys = (await (await fetch(`${url}/_chat/key/v2/server`)).json()) as { verify_keys: Record<string, unknown> };
        const published = Object.keys(keys.verify_keys)[0];
        assert.equal(published, parseSigningKeyFile(readFileSync(keyFile, 'utf8'))[0]!.keyId);
        if (round === 0) {
          first = published;
          assert.match(io.text(), /Created a new signing key/);
        } else {
          assert.equal(published, first);
          assert.doesNotMatch(io.text(), /Created a new signing key/);
        }
      } finally {
        await running.stop();
      }
    }
  });

  test('flags override the file; problems they cause name the flag', async () => {
    const { path } = writeConfig('flags', withLogsOff({ listen: { http: '127.0.0.1:1' } }));
    const args = parseServeArgs(['--config', path, '--http-bind-address', '127.0.0.1:0', '--tls-cert', 'c.pem'], dir);
    assert.deepEqual(args.overrides, { 'http-bind-address': '127.0.0.1:0', 'tls-cert': join(dir, 'c.pem') });
    await assert.rejects(
      serve(['--config', path, '--http-bind-address', 'bogus', '--https-bind-address', '127.0.0.1:0']),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /listen\.http \(from --http-bind-address\): /);
        assert.match(err.message, /listen\.tls_cert: is required when listen\.https is set/);
        assert.match(err.message, /listen\.tls_key: is required when listen\.https is set/);
        return true;
      },
    );
    const running = await serve(['--config', path, '--http-bind-address', '127.0.0.1:0']);
    try {
      assert.notEqual(running.server.listeners[0]!.port, 1);
    } finally {
      await running.stop();
    }
  });

  test('a missing --config file is an error, not a first start', async () => {
    const missing = join(dir, 'absent', 'hearth.yaml');
    await assert.rejects(serve(['--config', missing]), (err: unknown) => err instanceof ConfigError && /cannot read/.test(err.message));
    assert.equal(existsSync(missing), false);
  });

  test('a port in use fails the start with the reason', async () => {
    const blocker = await new Promise<Server>((resolve) => {
      const s = createNetServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const port = (blocker.address() as AddressInfo).port;
      const { path } = writeConfig('busy', withLogsOff());
      await assert.rejects(
        serve(['--config', path, '--http-bind-address', `127.0.0.1:${port}`]),
        (err: unknown) =>
          err instanceof StartupError &&
          new RegExp(`cannot start: cannot listen on http://127\\.0\\.0\\.1:${port}: address already in use`).test(err.message),
      );
    } finally {
      blocker.close();
    }
  });

  test('an unreachable database fails the start with the reason', async () => {
    const { path } = writeConfig('no-database', withLogsOff({
      global: { server_name: 'serve.test', data_dir: './data', database: { connection_string: 'postgres://nobody@127.0.0.1:1/none' } },
    }));
    await assert.rejects(
      serve(['--config', path, '--http-bind-address', '127.0.0.1:0']),
      (err: unknown) => err instanceof StartupError && /^cannot start: cannot reach the PostgreSQL server at 127\.0\.0\.1:1 /.test(err.message),
    );
  });

  test('an unreadable certificate fails the start naming the key and the file', async () => {
    const { path } = writeConfig('tls-missing', withLogsOff());
    await assert.rejects(
      serve([
        '--config', path,
        '--http-bind-address', '127.0.0.1:0',
        '--https-bind-address', '127.0.0.1:0',
        '--tls-cert', join(dir, 'no-such-cert.pem'),
        '--tls-key', cert.keyPath,
      ]),
      (err: unknown) => err instanceof StartupError && /listen\.tls_cert: cannot read .*no-such-cert\.pem/.test(err.message),
    );
  });

  test('a configuration without any listener fails the start', async () => {
    const { path } = writeConfig('no-listener', withLogsOff({ listen: { http: '' } }));
    await assert.rejects(serve(['--config', path]), (err: unknown) => err instanceof StartupError && /no listener configured/.test(err.message));
  });
});
