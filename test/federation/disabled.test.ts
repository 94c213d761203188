// A server with `global.disable_federation: true`: its users cannot reach rooms, aliases or
// invitees of other servers, other servers' requests find no federation routes, and its own rooms
// work as ever.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { enc, request } from '../e2e/support/client.js';
import { type TestServer, type TestUser, startTestServer } from '../support/server.js';

describe('federation disabled', () => {
  let hs: TestServer;
  let alice: TestUser;

  before(async () => {
    hs = await startTestServer({ serverName: 'alone.test', config: { global: { disable_federation: true } } });
    alice = await hs.registerUser('alice', 'alice-password');
  });
  after(async () => {
    await hs?.close();
  });

  const call = (method: string, path: string, body?: Record<string, unknown>) => request(hs.baseUrl, method, `/_chat/client/v3${path}`, body, { token: alice.accessToken });

  test("other servers' rooms, aliases and users are out of reach; this server's rooms are not", async () => {
    for (const target of ['!room:other.test', '#alias:other.test']) {
      const res = await call('POST', `/join/${enc(target)}?via=other.test`, {});
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body!['errcode'], 'M_NOT_FOUND');
      assert.match(res.body!['error'] as string, /federation is disabled/);
    }
    const knock = await call('POST', `/knock/${enc('!room:other.test')}`, {});
    assert.equal(knock.status, 404, JSON.stringify(knock.body));

    const created = await call('POST', '/createRoom', { preset: 'private_chat' });
    assert.equal(created.status, 200);
    const roomId = created.body!['room_id'] as string;
    // An invite of another server's user is an event here, never sent anywhere.
    const invited = await call('POST', `/rooms/${enc(roomId)}/invite`, { user_id: '@bob:other.test' });
    assert.equal(invited.status, 200, JSON.stringify(invited.body));
    const state = await call('GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc('@bob:other.test')}`);
    assert.equal(state.body!['membership'], 'invite');
  });

  test('no federation route answers', async () => {
    for (const path of ['/_matrix/federation/v1/version', `/_matrix/federation/v1/make_join/${enc('!r:alone.test')}/${enc('@x:other.test')}`, '/_chat/federation/v1/publicRooms']) {
      const res = await fetch(`${hs.baseUrl}${path}`);
      assert.equal(res.status, 404, path);
    }
  });
});
