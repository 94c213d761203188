// Debian's synadm (the Synapse admin CLI) against a real server: its user and regtok commands and
// `version` go through /_synapse/admin, read with `-o json` (and `--batch`, which answers its
// prompts), and the server's state is checked over HTTP.
//
// Needs `synadm` on the PATH. Without it the suite is skipped, except when CI is set: there it
// fails, so that CI cannot pass without having run it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';
import { enc, request } from './support/client.js';

const COMMAND_TIMEOUT_MS = 60_000;

/** Undefined when synadm runs; otherwise why not. */
function synadmUnavailable(): string | undefined {
  const probe = spawnSync('synadm', ['--help'], { encoding: 'utf8', timeout: 20_000 });
  if (probe.error) return probe.error.message;
  if (probe.status !== 0) return probe.stderr.trim().split('\n').at(-1) ?? `exit ${probe.status}`;
  return undefined;
}

const missing = synadmUnavailable();
const inCi = (process.env['CI'] ?? '') !== '' && process.env['CI'] !== 'false';
const skipSynadm = missing !== undefined && !inCi ? `synadm is not installed: apt-get install synadm (${missing})` : false;

/** Runs synadm with the config file; resolves to its standard output (it exits 0 on API errors too). */
function synadm(configPath: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('synadm', ['-c', configPath, '--batch', ...args], { timeout: COMMAND_TIMEOUT_MS, encoding: 'utf8', env: { ...process.env, HOME: join(configPath, '..') } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`synadm ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** The last JSON document synadm printed (some commands print the user's details first). */
function lastJson(stdout: string): any {
  const start = stdout.lastIndexOf('\n{') >= 0 ? stdout.lastIndexOf('\n{') + 1 : stdout.indexOf('{');
  assert.ok(start >= 0, `no JSON in synadm's output:\n${stdout}`);
  return JSON.parse(stdout.slice(start));
}

for (const { backend, skip } of await serverBackends()) {
  describe(`synadm against the server on ${backend}`, { skip: skip || skipSynadm }, () => {
    let hs: TestServer;
    let admin: TestUser;
    let alice: TestUser;
    let config: string;
    const run = (...args: string[]) => synadm(config, args);

    before(async () => {
      if (missing !== undefined) throw new Error(`synadm is not installed: apt-get install synadm (${missing}); CI is set, so this fails instead of skipping`);
      hs = await startTestServer({ backend });
      admin = await hs.registerUser('root', 'root-pw', { admin: true });
      alice = await hs.registerUser('alice', 'alice-pw');
      config = join(hs.dataDir, 'synadm.yaml');
      writeFileSync(
        config,
        [
          'user: root',
          `token: ${admin.accessToken}`,
          `base_url: ${hs.baseUrl}`,
          'admin_path: /_synapse/admin',
          'matrix_path: /_matrix',
          'timeout: 30',
          'server_discovery: well-known',
          `homeserver: ${hs.serverName}`,
          'format: json',
          '',
        ].join('\n'),
      );
    });
    after(async () => {
      await hs?.close();
    });

    test('version', async () => {
      const out = lastJson(await run('-o', 'json', 'version'));
      assert.match(out.server_version, /^Hearth /);
    });

    test('user list and details', async () => {
      const list = lastJson(await run('-o', 'json', 'user', 'list'));
      assert.deepEqual(list.users.map((u: any) => u.name).sort(), [admin.userId, alice.userId].sort());
      assert.equal(list.total, 2);
      const details = lastJson(await run('-o', 'json', 'user', 'details', alice.userId));
      assert.equal(details.name, alice.userId);
      assert.equal(details.admin, false);
      assert.equal(details.displayname, 'alice');
    });

    test('user modify: display name, admin, password, and a new user', async () => {
      const out = lastJson(await run('-o', 'json', 'user', 'modify', alice.userId, '--display-name', 'Alice A', '--admin', '-P', 'new-alice-pw'));
      assert.equal(out.displayname, 'Alice A');
      assert.equal(out.admin, true);
      const profile = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/profile/${enc(alice.userId)}`);
      assert.equal(profile.body.displayname, 'Alice A');
      const login = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'alice' }, password: 'new-alice-pw' });
      assert.equal(login.status, 200);
      // A password change logs the other devices out.
      const old = await request(hs.baseUrl, 'GET', '/_matrix/client/v3/account/whoami', undefined, { token: alice.accessToken });
      assert.equal(old.status, 401);
      const created = lastJson(await run('-o', 'json', 'user', 'modify', `@carol:${hs.serverName}`, '-P', 'carol-pw', '--display-name', 'Carol'));
      assert.equal(created.name, `@carol:${hs.serverName}`);
      assert.equal(created.displayname, 'Carol');
      // synadm 0.38 sends `admin` only when true, so `--no-admin` changes nothing: demote over HTTP.
      const demoted = await request(hs.baseUrl, 'PUT', `/_synapse/admin/v1/users/${enc(alice.userId)}/admin`, { admin: false }, { token: admin.accessToken });
      assert.equal(demoted.status, 200);
      const details = lastJson(await run('-o', 'json', 'user', 'details', alice.userId));
      assert.equal(details.admin, false);
    });

    test('user password resets it', async () => {
      await run('-o', 'json', 'user', 'password', `@carol:${hs.serverName}`, '-p', 'carol-pw-2');
      const login = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'carol' }, password: 'carol-pw-2' });
      assert.equal(login.status, 200);
      const oldLogin = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/login', { type: 'm.login.password', identifier: { type: 'm.id.user', user: 'carol' }, password: 'carol-pw' });
      assert.equal(oldLogin.status, 403);
    });

    test('user whois', async () => {
      const out = lastJson(await run('-o', 'json', 'user', 'whois', admin.userId));
      assert.equal(out.user_id, admin.userId);
      assert.ok(admin.deviceId in out.devices);
    });

    test('user login gives a token for the user', async () => {
      const out = lastJson(await run('-o', 'json', 'user', 'login', alice.userId));
      const who = await request(hs.baseUrl, 'GET', '/_matrix/client/v3/account/whoami', undefined, { token: out.access_token });
      assert.equal(who.body.user_id, alice.userId);
    });

    test('regtok new, list, details, update and delete', async () => {
      const made = lastJson(await run('-o', 'json', 'regtok', 'new', '-n', 'invite-1', '-u', '3'));
      assert.deepEqual(made, { token: 'invite-1', uses_allowed: 3, pending: 0, completed: 0, expiry_time: null });
      const list = lastJson(await run('-o', 'json', 'regtok', 'list', '--ts'));
      assert.ok(list.registration_tokens.some((t: any) => t.token === 'invite-1'));
      const updated = lastJson(await run('-o', 'json', 'regtok', 'update', 'invite-1', '-u', '5'));
      assert.equal(updated.uses_allowed, 5);
      const details = lastJson(await run('-o', 'json', 'regtok', 'details', 'invite-1', '--ts'));
      assert.equal(details.uses_allowed, 5);
      await run('-o', 'json', 'regtok', 'delete', 'invite-1');
      const gone = await request(hs.baseUrl, 'GET', '/_synapse/admin/v1/registration_tokens/invite-1', undefined, { token: admin.accessToken });
      assert.equal(gone.status, 404);
    });

    test('user deactivate', async () => {
      const out = lastJson(await run('-o', 'json', 'user', 'deactivate', `@carol:${hs.serverName}`));
      assert.deepEqual(out, { id_server_unbind_result: 'success' });
      const details = await request(hs.baseUrl, 'GET', `/_synapse/admin/v2/users/${enc(`@carol:${hs.serverName}`)}`, undefined, { token: admin.accessToken });
      assert.equal(details.body.deactivated, true);
      const list = lastJson(await run('-o', 'json', 'user', 'list'));
      assert.ok(!list.users.some((u: any) => u.name === `@carol:${hs.serverName}`));
      const all = lastJson(await run('-o', 'json', 'user', 'list', '--deactivated'));
      assert.ok(all.users.some((u: any) => u.name === `@carol:${hs.serverName}` && u.deactivated === true));
    });
  });
}
