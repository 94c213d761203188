import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { isJsonObject, type JsonObject } from '../../src/protocol/json.js';
import { DEFAULT_ROOM_VERSION, roomVersions } from '../../src/protocol/room-versions.js';
import { parseSigningKeyFile, verifyJsonSignature } from '../../src/protocol/signing.js';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';

const HOUR = 3600_000;

async function getJson(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: JsonObject; headers: Headers }> {
  const reply = await new HttpClient(baseUrl, { prefix: '' }).get(path, { headers });
  assert.ok(isJsonObject(reply.body), `${path} answered ${reply.text}`);
  return reply;
}

for (const { backend, skip } of await serverBackends()) {
  describe(`server endpoints (${backend})`, { skip }, () => {
    const hs = useTestServer({ backend, config: { global: { key_validity_period: '2h' } } });

    test('versions answer without a version segment under both names, without a token', async () => {
      for (const root of ['_chat', '_matrix']) {
        const { status, body, headers } = await getJson(hs.baseUrl, `/${root}/client/versions`);
        assert.equal(status, 200);
        assert.equal(headers.get('access-control-allow-origin'), '*');
        const versions = body['versions'] as string[];
        assert.ok(Array.isArray(versions));
        for (const v of ['r0.0.1', 'r0.5.0', 'r0.6.1', 'v1.1', 'v1.5', 'v1.11']) assert.ok(versions.includes(v), v);
        assert.ok(versions.every((v) => /^(r0\.\d+\.\d+|v1\.\d+)$/.test(v)));
        assert.ok(isJsonObject(body['unstable_features']));
        assert.ok(Object.values(body['unstable_features']).every((f) => typeof f === 'boolean'));
      }
      // Only the unversioned path exists.
      const versioned = await getJson(hs.baseUrl, '/_chat/client/v3/versions');
      assert.equal(versioned.status, 404);
      assert.equal(versioned.body['errcode'], 'M_UNRECOGNIZED');
    });

    test('capabilities need a token and list every room version with its stability', async () => {
      const anonymous = await getJson(hs.baseUrl, '/_chat/client/v3/capabilities');
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.body['errcode'], 'M_MISSING_TOKEN');
      const bad = await getJson(hs.baseUrl, '/_chat/client/v3/capabilities', { authorization: 'Bearer nope' });
      assert.equal(bad.status, 401);
      assert.equal(bad.body['errcode'], 'M_UNKNOWN_TOKEN');

      const alice = await hs.registerUser('alice', 'correct horse');
      for (const path of ['/_chat/client/v3/capabilities', '/_matrix/client/r0/capabilities']) {
        const { status, body } = await getJson(hs.baseUrl, path, hs.auth(alice));
        assert.equal(status, 200);
        const caps = body['capabilities'] as JsonObject;
        const rv = caps['m.room_versions'] as { default: string; available: Record<string, string> };
        assert.equal(rv.default, DEFAULT_ROOM_VERSION);
        assert.deepEqual(Object.keys(rv.available).sort(), Object.keys(roomVersions).sort());
        for (const [id, v] of Object.entries(roomVersions)) assert.equal(rv.available[id], v.stability);
        assert.deepEqual(caps['m.change_password'], { enabled: true });
        assert.deepEqual(caps['m.set_displayname'], { enabled: true });
        assert.deepEqual(caps['m.set_avatar_url'], { enabled: true });
        assert.deepEqual(caps['m.3pid_changes'], { enabled: false });
      }
    });

    test('well-known documents are 404 while their keys are empty', async () => {
      for (const path of ['chat/client', 'matrix/client', 'chat/server', 'matrix/server']) {
        const { status, body } = await getJson(hs.baseUrl, `/.well-known/${path}`);
        assert.equal(status, 404, path);
        assert.equal(body['errcode'], 'M_NOT_FOUND');
      }
    });

    test('the key server publishes the signing key, self-signed, valid for key_validity_period', async () => {
      const [key] = parseSigningKeyFile(readFileSync(hs.config.global.private_key, 'utf8'));
      assert.ok(key);
      for (const path of ['/_chat/key/v2/server', '/_matrix/key/v2/server', `/_chat/key/v2/server/${key.keyId}`]) {
        const before = Date.now();
        const { status, body } = await getJson(hs.baseUrl, path);
        const afterTs = Date.now();
        assert.equal(status, 200, path);
        assert.equal(body['server_name'], hs.serverName);
        const verifyKeys = body['verify_keys'] as Record<string, { key: string }>;
        assert.deepEqual(Object.keys(verifyKeys), [key.keyId]);
        assert.equal(verifyKeys[key.keyId]!.key, Buffer.from(key.publicKey).toString('base64').replace(/=+$/, ''));
        assert.deepEqual(body['old_verify_keys'], {});
        const validUntil = body['valid_until_ts'] as number;
        assert.ok(Number.isInteger(validUntil));
        assert.ok(validUntil >= before + 2 * HOUR - 1 && validUntil <= afterTs + 2 * HOUR, `${validUntil}`);
        // Signed by the key it publishes, checked with the published key itself.
        assert.ok(verifyJsonSignature(body, hs.serverName, key.keyId, verifyKeys[key.keyId]!.key));
        // The signature covers the validity: a changed document no longer verifies.
        assert.ok(!verifyJsonSignature({ ...body, valid_until_ts: validUntil + 1 }, hs.serverName, key.keyId, key.publicKey));
      }
    });

    test('health answers OK in plain text while the database answers', async () => {
      const res = await new HttpClient(hs.baseUrl).get('/health');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      assert.equal(res.text, 'OK');
    });
  });

  describe(`server configured for discovery (${backend})`, { skip }, () => {
    const hs = useTestServer({
      backend,
      serverName: 'example.test',
      config: {
        global: { well_known_client_name: 'https://chat.example.test', well_known_server_name: 'fed.example.test:443' },
      },
    });

    test('well-known documents name the configured client URL and federation host', async () => {
      for (const name of ['chat', 'matrix']) {
        const client = await getJson(hs.baseUrl, `/.well-known/${name}/client`);
        assert.equal(client.status, 200);
        assert.deepEqual(client.body, { 'm.homeserver': { base_url: 'https://chat.example.test' } });
        assert.equal(client.headers.get('access-control-allow-origin'), '*');
        const server = await getJson(hs.baseUrl, `/.well-known/${name}/server`);
        assert.equal(server.status, 200);
        assert.deepEqual(server.body, { 'm.server': 'fed.example.test:443' });
      }
    });

    test('health answers 503 once the database is gone', async () => {
      assert.equal((await new HttpClient(hs.baseUrl).get('/health')).status, 200);
      await hs.server.core.database.close();
      const { status, body } = await getJson(hs.baseUrl, '/health');
      assert.equal(status, 503);
      assert.equal(typeof body['errcode'], 'string');
    });
  });
}
