// The services working together in one real server: profiles in member events, receipts and
// typing against room membership, deactivation leaving rooms.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, type TestUser, useTestServer } from '../support/server.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`services wired together on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: TestUser;
    let bob: TestUser;
    let roomId: string;
    const api = (user: TestUser, method: string, path: string, body?: unknown) =>
      new HttpClient(hs.baseUrl, { token: user.accessToken }).request(method, path, body);

    before(async () => {
      alice = await hs.registerUser('alice', 'pw-alice');
      bob = await hs.registerUser('bob', 'pw-bob');
      const res = await api(alice, 'POST', '/createRoom', { preset: 'private_chat', invite: [bob.userId], name: 'Wired' });
      roomId = res.body.room_id;
      assert.equal((await api(bob, 'POST', `/join/${encodeURIComponent(roomId)}`, {})).status, 200);
    });

    test('a new account has a profile whose display name is its localpart', async () => {
      const res = await api(alice, 'GET', `/profile/${encodeURIComponent(bob.userId)}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.displayname, 'bob');
    });

    test('a display name change rewrites the member event in joined rooms', async () => {
      assert.equal((await api(bob, 'PUT', `/profile/${encodeURIComponent(bob.userId)}/displayname`, { displayname: 'Bobby' })).status, 200);
      const res = await api(alice, 'GET', `/rooms/${encodeURIComponent(roomId)}/state/m.room.member/${encodeURIComponent(bob.userId)}`);
      assert.deepEqual(res.body, { membership: 'join', displayname: 'Bobby' });
    });

    test('receipts and typing check membership against the room server', async () => {
      const sent = (await api(alice, 'PUT', `/rooms/${encodeURIComponent(roomId)}/send/m.room.message/t1`, { msgtype: 'm.text', body: 'hi' })).body;
      let res = await api(bob, 'POST', `/rooms/${encodeURIComponent(roomId)}/receipt/m.read/${encodeURIComponent(sent.event_id)}`, {});
      assert.equal(res.status, 200);
      res = await api(bob, 'POST', `/rooms/${encodeURIComponent(roomId)}/receipt/m.read/${encodeURIComponent('$nope')}`, {});
      assert.equal(res.status, 404);
      res = await api(bob, 'PUT', `/rooms/${encodeURIComponent(roomId)}/typing/${encodeURIComponent(bob.userId)}`, { typing: true, timeout: 5000 });
      assert.equal(res.status, 200);
      const carol = await hs.registerUser('carol', 'pw-carol');
      res = await api(carol, 'PUT', `/rooms/${encodeURIComponent(roomId)}/typing/${encodeURIComponent(carol.userId)}`, { typing: true });
      assert.equal(res.status, 403);
    });

    test('a deactivated account leaves its rooms', async () => {
      const dave = await hs.registerUser('dave', 'pw-dave');
      await api(alice, 'POST', `/rooms/${encodeURIComponent(roomId)}/invite`, { user_id: dave.userId });
      assert.equal((await api(dave, 'POST', `/rooms/${encodeURIComponent(roomId)}/join`, {})).status, 200);
      let res = await api(dave, 'POST', '/account/deactivate', {});
      const session = res.body.session;
      res = await api(dave, 'POST', '/account/deactivate', { auth: { type: 'm.login.password', session, identifier: { type: 'm.id.user', user: 'dave' }, password: 'pw-dave' } });
      assert.equal(res.status, 200);
      res = await api(alice, 'GET', `/rooms/${encodeURIComponent(roomId)}/joined_members`);
      assert.deepEqual(Object.keys(res.body.joined).sort(), [alice.userId, bob.userId].sort());
    });
  });
}
