// The room directories of application services' networks, on a real server: a service publishes
// a room in its network's directory (PUT /directory/list/appservice/{networkId}/{roomId}); POST
// /publicRooms lists it under `third_party_instance_id` "{service}|{network}" and with
// `include_all_networks`, not in the server's own list nor another network's; "private" takes it
// out. Only a service may publish; unknown rooms are 404 and bad visibilities 400. Both backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, startTestServer, type TestServer } from '../support/server.js';

const AS_TOKEN = 'irc-as-token-0123456789';

for (const { backend, skip } of await serverBackends()) {
  describe(`application service network directories (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-appservice-directory-'));
    let hs: TestServer;
    let alice: { userId: string; accessToken: string };
    let bridged: string;
    let open: string;
    const call = (method: string, path: string, payload: unknown, token: string) => request(hs.baseUrl, method, `/_chat/client/v3${path}`, payload, { token });
    const listed = async (filter: object) => {
      const r = await call('POST', '/publicRooms', filter, alice.accessToken);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return (r.body as { chunk: { room_id: string }[] }).chunk.map((c) => c.room_id).sort();
    };

    before(async () => {
      const file = join(dir, 'irc.yaml');
      writeFileSync(
        file,
        `id: irc\nurl: null\nas_token: ${AS_TOKEN}\nhs_token: irc-hs-token-0123456789\nsender_localpart: ircbot\nprotocols: [irc]\n` +
          `namespaces:\n  users:\n    - exclusive: true\n      regex: '@_irc_.*:localhost'\n`,
      );
      hs = await startTestServer({ backend, config: { app_service_config_files: [file] } });
      alice = await hs.registerUser('alice', 'alice-password');
      bridged = (await call('POST', '/createRoom', { preset: 'public_chat', name: 'bridged' }, alice.accessToken)).body['room_id'] as string;
      open = (await call('POST', '/createRoom', { preset: 'public_chat', visibility: 'public', name: 'open' }, alice.accessToken)).body['room_id'] as string;
    });
    after(async () => {
      await hs?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a published room is listed in its network only, and with all networks', async () => {
      const put = await call('PUT', `/directory/list/appservice/libera/${enc(bridged)}`, { visibility: 'public' }, AS_TOKEN);
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.deepEqual(await listed({ third_party_instance_id: 'irc|libera' }), [bridged]);
      assert.deepEqual(await listed({ third_party_instance_id: 'irc|oftc' }), []);
      assert.deepEqual(await listed({ third_party_instance_id: 'other|libera' }), []);
      assert.deepEqual(await listed({}), [open]);
      assert.deepEqual(await listed({ include_all_networks: true }), [bridged, open].sort());
      // Publishing twice changes nothing.
      assert.equal((await call('PUT', `/directory/list/appservice/libera/${enc(bridged)}`, {}, AS_TOKEN)).status, 200);
      assert.deepEqual(await listed({ third_party_instance_id: 'irc|libera' }), [bridged]);
    });

    test('"private" takes it out', async () => {
      assert.equal((await call('PUT', `/directory/list/appservice/libera/${enc(bridged)}`, { visibility: 'private' }, AS_TOKEN)).status, 200);
      assert.deepEqual(await listed({ third_party_instance_id: 'irc|libera' }), []);
      assert.deepEqual(await listed({ include_all_networks: true }), [open]);
    });

    test('only a service may publish; unknown rooms and bad visibilities are refused', async () => {
      const byUser = await call('PUT', `/directory/list/appservice/libera/${enc(bridged)}`, { visibility: 'public' }, alice.accessToken);
      assert.deepEqual([byUser.status, (byUser.body as { errcode: string }).errcode], [403, 'M_FORBIDDEN']);
      const unknown = await call('PUT', `/directory/list/appservice/libera/${enc('!nowhere:localhost')}`, { visibility: 'public' }, AS_TOKEN);
      assert.deepEqual([unknown.status, (unknown.body as { errcode: string }).errcode], [404, 'M_NOT_FOUND']);
      const bad = await call('PUT', `/directory/list/appservice/libera/${enc(bridged)}`, { visibility: 'hidden' }, AS_TOKEN);
      assert.deepEqual([bad.status, (bad.body as { errcode: string }).errcode], [400, 'M_INVALID_PARAM']);
      const none = await request(hs.baseUrl, 'PUT', `/_chat/client/v3/directory/list/appservice/libera/${enc(bridged)}`, { visibility: 'public' });
      assert.equal(none.status, 401);
      assert.deepEqual(await listed({ third_party_instance_id: 'irc|libera' }), []);
    });
  });
}
