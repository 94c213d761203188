// PUT /rooms/{roomId}/send/{eventType}/{txnId}: transaction ids are at most 255 bytes.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { enc, request } from '../e2e/support/client.js';
import { serverBackends, type TestUser, useTestServer } from '../support/server.js';

const V3 = '/_matrix/client/v3';

for (const { backend, skip } of await serverBackends()) {
  describe(`send transaction ids on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let alice: TestUser;
    let roomId: string;
    before(async () => {
      alice = await hs.registerUser('alice', 'pw');
      const created = await request(hs.baseUrl, 'POST', `${V3}/createRoom`, {}, { token: alice.accessToken });
      roomId = created.body['room_id'];
    });

    const send = (txnId: string) =>
      request(hs.baseUrl, 'PUT', `${V3}/rooms/${enc(roomId)}/send/m.room.message/${enc(txnId)}`, { msgtype: 'm.text', body: 'hi' }, { token: alice.accessToken });

    test('255 bytes is accepted, and a repeat gives the same event', async () => {
      const txnId = 't'.repeat(255);
      const first = await send(txnId);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const again = await send(txnId);
      assert.deepEqual(again.body, first.body);
    });

    test('longer than 255 bytes is 400 M_INVALID_PARAM, counted in UTF-8 bytes', async () => {
      for (const txnId of ['t'.repeat(256), 'é'.repeat(128), 'x'.repeat(1000)]) {
        const r = await send(txnId);
        assert.equal(r.status, 400, `${txnId.length} characters`);
        assert.equal(r.body['errcode'], 'M_INVALID_PARAM');
        assert.match(r.body['error'], /transaction ID is longer than 255 bytes/);
      }
      const fits = await send('é'.repeat(127));
      assert.equal(fits.status, 200, JSON.stringify(fits.body));
    });
  });
}
