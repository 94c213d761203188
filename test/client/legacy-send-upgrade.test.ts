// POST /rooms/{roomId}/send/{eventType} (the legacy send without a transaction id) and POST
// /rooms/{roomId}/upgrade, over HTTP on SQLite and PostgreSQL: every legacy send is a new event and
// counts against the same rate limit as the send with a transaction id; an upgrade request is
// checked as a real one would be and only a valid one is told that upgrades are not supported.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, type TestUser, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

const V3 = '/_matrix/client/v3';

for (const { backend, skip } of await serverBackends()) {
  describe(`legacy send and room upgrade on ${backend}`, { skip }, () => {
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

    describe('POST /rooms/{roomId}/upgrade', () => {
      let alice: Client;
      let bob: Client;
      let outsider: Client;
      let roomId: string;
      before(async () => {
        alice = await user('alice');
        bob = await user('bob');
        outsider = await user('outsider');
        roomId = await alice.createRoom({ preset: 'public_chat' });
        await bob.join(roomId);
      });
      const upgrade = (who: Client, target: string, body: unknown) => who.call('POST', `/rooms/${enc(target)}/upgrade`, body);

      test('a missing or unknown version is refused first', async () => {
        const cases: [unknown, string][] = [
          [{}, 'M_MISSING_PARAM'],
          [{ new_version: null }, 'M_MISSING_PARAM'],
          [{ new_version: '999' }, 'M_UNSUPPORTED_ROOM_VERSION'],
          [{ new_version: 10 }, 'M_UNSUPPORTED_ROOM_VERSION'],
          [{ new_version: ['10'] }, 'M_UNSUPPORTED_ROOM_VERSION'],
        ];
        for (const [body, errcode] of cases) {
          // Even on an unknown room: the request is read before the room is looked up.
          for (const target of [roomId, '!nowhere:localhost']) {
            const r = await upgrade(alice, target, body);
            assert.deepEqual([r.status, r.body.errcode], [400, errcode], JSON.stringify(body));
          }
        }
        const notJson = await request(hs.baseUrl, 'POST', `${V3}/rooms/${enc(roomId)}/upgrade`, undefined, { token: alice.user.accessToken, rawBody: '{' });
        assert.deepEqual([notJson.status, notJson.body.errcode], [400, 'M_NOT_JSON']);
      });

      test('an unknown room is 404; a room the user is not in, or may not upgrade, 403', async () => {
        const unknown = await upgrade(alice, '!nowhere:localhost', { new_version: '10' });
        assert.deepEqual([unknown.status, unknown.body.errcode], [404, 'M_NOT_FOUND']);
        const stranger = await upgrade(outsider, roomId, { new_version: '10' });
        assert.deepEqual([stranger.status, stranger.body.errcode], [403, 'M_FORBIDDEN']);
        // bob is a member with the default power level 0; a tombstone needs 100.
        const member = await upgrade(bob, roomId, { new_version: '10' });
        assert.deepEqual([member.status, member.body.errcode], [403, 'M_FORBIDDEN']);
      });

      test('a request that could be carried out says that upgrades are not supported', async () => {
        for (const version of ['10', '11', '1']) {
          const r = await upgrade(alice, roomId, { new_version: version });
          assert.deepEqual([r.status, r.body.errcode], [400, 'M_UNKNOWN'], version);
          assert.match(r.body.error, /upgrades are not supported/);
        }
        // Nothing was sent: the room has no tombstone.
        const tombstone = await alice.call('GET', `/rooms/${enc(roomId)}/state/m.room.tombstone`);
        assert.equal(tombstone.status, 404);
      });

      test('without a token: 401', async () => {
        const r = await request(hs.baseUrl, 'POST', `${V3}/rooms/${enc(roomId)}/upgrade`, { new_version: '10' });
        assert.deepEqual([r.status, r.body.errcode], [401, 'M_MISSING_TOKEN']);
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
