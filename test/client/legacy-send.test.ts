// POST /rooms/{roomId}/send/{eventType} (the legacy send without a transaction id), over HTTP on
// SQLite and PostgreSQL: every legacy send is a new event and counts against the same rate limit as
// the send with a transaction id.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, type TestUser, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

const V3 = '/_matrix/client/v3';

for (const { backend, skip } of await serverBackends()) {
  describe(`legacy send on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    describe('POST /rooms/{roomId}/send/{eventType}', () => {
      let alice: Client;
      let outsider: Client;
      let roomId: string;
      before(async () => {
        alice = await user('alice');
        outsider = await user('outsider');
        roomId = await alice.createRoom({});
      });

      test('each call sends a new event, in the room as any other', async () => {
        const content = { msgtype: 'm.text', body: 'same again' };
        const first = await alice.ok('POST', `/rooms/${enc(roomId)}/send/m.room.message`, content);
        const second = await alice.ok('POST', `/rooms/${enc(roomId)}/send/m.room.message`, content);
        assert.notEqual(first.event_id, second.event_id);
        const latest = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=2`);
        assert.deepEqual(latest.chunk.map((e: any) => e.event_id), [second.event_id, first.event_id]);
        const event = await alice.ok('GET', `/rooms/${enc(roomId)}/event/${enc(first.event_id)}`);
        assert.deepEqual([event.type, event.sender, event.content], ['m.room.message', alice.userId, content]);
        assert.equal(event.unsigned.transaction_id, undefined);
        const r0 = await request(hs.baseUrl, 'POST', `/_chat/client/r0/rooms/${enc(roomId)}/send/org.example.custom`, { x: 1 }, { token: alice.user.accessToken });
        assert.equal(r0.status, 200, JSON.stringify(r0.body));
      });

      test('refusals are those of the send with a transaction id', async () => {
        const cases: [Client, string, unknown][] = [
          [outsider, roomId, { body: 'not a member' }],
          [alice, '!nowhere:localhost', { body: 'no such room' }],
        ];
        for (const [who, target, content] of cases) {
          const legacy = await who.call('POST', `/rooms/${enc(target)}/send/m.room.message`, content);
          const current = await who.call('PUT', `/rooms/${enc(target)}/send/m.room.message/t${Date.now()}`, content);
          assert.ok(legacy.status >= 400 && legacy.status < 500, JSON.stringify(legacy.body));
          assert.deepEqual([legacy.status, legacy.body.errcode], [current.status, current.body.errcode], target);
        }
        const notJson = await request(hs.baseUrl, 'POST', `${V3}/rooms/${enc(roomId)}/send/m.room.message`, undefined, { token: alice.user.accessToken, rawBody: 'hello' });
        assert.deepEqual([notJson.status, notJson.body.errcode], [400, 'M_NOT_JSON']);
      });
    });
  });

  describe(`legacy send rate limit on ${backend}`, { skip }, () => {
    // Two sends per user, then refused for minutes: the test never waits for a slot.
    const hs = useTestServer({ backend, config: { client_api: { rate_limiting: { enabled: true, message: { per_second: 0.001, burst_count: 2 } } } } });

    async function member(name: string): Promise<{ u: TestUser; roomId: string }> {
      const u = await hs.registerUser(name, 'secret');
      // Set up through the service: only the sends below count.
      const { roomId } = await hs.server.services.rooms.createRoom({ userId: u.userId, deviceId: u.deviceId }, {});
      return { u, roomId };
    }
    const legacy = (m: { u: TestUser; roomId: string }) => request(hs.baseUrl, 'POST', `${V3}/rooms/${enc(m.roomId)}/send/m.room.message`, { body: 'x' }, { token: m.u.accessToken });
    const withTxn = (m: { u: TestUser; roomId: string }, txn: string) =>
      request(hs.baseUrl, 'PUT', `${V3}/rooms/${enc(m.roomId)}/send/m.room.message/${txn}`, { body: 'x' }, { token: m.u.accessToken });

    test('sends with and without a transaction id share one limit', async () => {
      const a = await member('alice');
      assert.equal((await withTxn(a, 't1')).status, 200);
      assert.equal((await legacy(a)).status, 200);
      for (const refused of [await legacy(a), await withTxn(a, 't2')]) {
        assert.deepEqual([refused.status, refused.body.errcode], [429, 'M_LIMIT_EXCEEDED']);
        assert.equal(typeof refused.body.retry_after_ms, 'number');
      }
      const b = await member('bob');
      assert.equal((await legacy(b)).status, 200);
      assert.equal((await legacy(b)).status, 200);
      const refused = await withTxn(b, 't1');
      assert.deepEqual([refused.status, refused.body.errcode], [429, 'M_LIMIT_EXCEEDED']);
    });
  });
}
