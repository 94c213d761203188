// The refusal a sender gets when not joined says why: never in the room, or in it no longer
// (with the membership); the errcode is M_FORBIDDEN either way. Over HTTP on both backends.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, enc } from '../sync/sync-client.js';

for (const { backend, skip } of await serverBackends()) {
  describe(`sending when not joined on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: Client;
    let bob: Client;
    let roomId: string;

    before(async () => {
      alice = new Client(hs, await hs.registerUser('alice', 'secret'));
      bob = new Client(hs, await hs.registerUser('bob', 'secret'));
      roomId = await alice.createRoom({ preset: 'public_chat' });
    });

    const send = (who: Client, txn: string) => who.call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/${txn}`, { msgtype: 'm.text', body: 'hi' });

    test('a user who never joined is told they are not in the room', async () => {
      const r = await send(bob, 'never');
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.equal(r.body.errcode, 'M_FORBIDDEN');
      assert.match(r.body.error, /not in the room/);
      assert.doesNotMatch(r.body.error, /membership leave/);
    });

    test('a user who left is told their membership', async () => {
      await bob.join(roomId);
      await bob.leave(roomId);
      const r = await send(bob, 'left');
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.equal(r.body.errcode, 'M_FORBIDDEN');
      assert.match(r.body.error, /membership leave/);
    });
  });
}
