import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { HttpClient } from '../support/http-client.js';
import { mergeConfig, serverBackends, startTestServer } from '../support/server.js';

const ADMIN_URL = process.env['HEARTH_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function postgresDatabaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

test('mergeConfig merges mappings key by key and replaces everything else', () => {
  assert.deepEqual(
    mergeConfig({ a: { b: 1, c: [1, 2] }, d: 'x' }, { a: { c: [3], e: { f: true } }, d: null }),
    { a: { b: 1, c: [3], e: { f: true } }, d: null },
  );
});

for (const { backend, skip } of await serverBackends()) {
  describe(`startTestServer (${backend})`, { skip }, () => {
    test('serves on loopback, registers users with working tokens, and leaves nothing behind', async () => {
      const hs = await startTestServer({ backend });
      assert.equal(hs.backend, backend);
      assert.match(hs.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(hs.serverName, 'localhost');
      assert.equal(hs.config.global.database.connection_string.startsWith('postgres'), backend === 'postgres');

      const alice = await hs.registerUser('alice', 'password-a');
      const root = await hs.registerUser('root', 'password-r', { admin: true });
      assert.equal(alice.userId, '@alice:localhost');
      assert.notEqual(alice.accessToken, root.accessToken);
      for (const user of [alice, root]) {
        const res = await new HttpClient(hs.baseUrl).get('/account/whoami', { headers: hs.auth(user) });
        assert.equal(res.status, 200);
        const body = res.body as { user_id: string; device_id: string };
        assert.equal(body.user_id, user.userId);
        assert.equal(body.device_id, user.deviceId);
      }
      assert.equal(await hs.server.services.accounts.isAdmin(root.userId), true);
      assert.equal(await hs.server.services.accounts.isAdmin(alice.userId), false);
      await assert.rejects(hs.registerUser('alice', 'again'), /taken/);

      // Test servers have open registration.
      const reg = await new HttpClient(hs.baseUrl).post('/_chat/client/v3/register', { username: 'bob', password: 'pw', auth: { type: 'm.login.dummy' } });
      assert.equal(reg.status, 200);

      const databaseName = new URL(hs.config.global.database.connection_string).pathname.slice(1);
      await hs.close();
      await hs.close();
      assert.equal(existsSync(hs.dataDir), false);
      await assert.rejects(new HttpClient(hs.baseUrl).get('/health'));
      if (backend === 'postgres') assert.equal(await postgresDatabaseExists(databaseName), false);
    });

    test('config overrides reach the server; unknown keys are refused', async () => {
      const hs = await startTestServer({ backend, config: { client_api: { registration_disabled: true } } });
      try {
        assert.equal(hs.config.client_api.registration_disabled, true);
        assert.equal(hs.config.user_api.bcrypt_cost, 4);
        const reg = await new HttpClient(hs.baseUrl).post('/_chat/client/v3/register', { username: 'bob', password: 'pw', auth: { type: 'm.login.dummy' } });
        assert.equal(reg.status, 403);
      } finally {
        await hs.close();
      }
      await assert.rejects(startTestServer({ backend, config: { client_api: { registration_disabld: true } } }), /registration_disabld/);
      await assert.rejects(startTestServer({ backend, config: { user_api: { bcrypt_cost: 2 } } }), /bcrypt_cost/);
    });
  });
}
