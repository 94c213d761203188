// Room answers as the reference server gives them: joined_members with null names and avatars, a
// join's body in its member event, redacting an event of another room, member state keys that are
// not user ids, and POST /publicRooms fields of the wrong type. Over HTTP on SQLite and PostgreSQL.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { serverBackends, useTestServer } from '../support/server.js';
import { Client, clients, enc, type Reply } from '../sync/sync-client.js';

function expectError(r: Reply, status: number, errcode: string, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.errcode, errcode, what);
  assert.equal(typeof r.body.error, 'string', what);
}

for (const { backend, skip } of await serverBackends()) {
  describe(`room answers as the reference server gives them on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let user: (name: string) => Promise<Client>;
    before(() => {
      user = clients(hs);
    });

    const memberOf = (c: Client, roomId: string, userId: string) => c.ok('GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(userId)}`);
    const eventIds = async (c: Client, roomId: string): Promise<string[]> =>
      (await c.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=100`)).chunk.map((e: any) => e.event_id as string);

    test('joined_members: display_name and avatar_url are null when unset, and present when set', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      await alice.ok('PUT', `/profile/${enc(alice.userId)}/displayname`, { displayname: '' });
      await bob.ok('PUT', `/profile/${enc(bob.userId)}/avatar_url`, { avatar_url: 'mxc://localhost/bobface' });
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const { joined } = await alice.ok('GET', `/rooms/${enc(roomId)}/joined_members`);
      const bobName = (await bob.ok('GET', `/profile/${enc(bob.userId)}`)).displayname;
      assert.equal(typeof bobName, 'string');
      assert.deepEqual(joined, {
        [alice.userId]: { display_name: null, avatar_url: null },
        [bob.userId]: { display_name: bobName, avatar_url: 'mxc://localhost/bobface' },
      });
      // The same under /_chat and r0.
      const viaChat = await alice.ok('GET', `/_chat/client/r0/rooms/${enc(roomId)}/joined_members`);
      assert.deepEqual(viaChat.joined, joined);
    });

    test('a join\'s body goes into the member event; membership and profile are the server\'s', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      await bob.ok('PUT', `/profile/${enc(bob.userId)}/avatar_url`, { avatar_url: 'mxc://localhost/bob' });
      const bobProfile = await bob.ok('GET', `/profile/${enc(bob.userId)}`);
      const carolProfile = await carol.ok('GET', `/profile/${enc(carol.userId)}`);
      const roomId = await alice.createRoom({ preset: 'public_chat' });

      await bob.ok('POST', `/join/${enc(roomId)}`, {
        reason: 'hello',
        'org.example.note': { nested: [1, 'two'] },
        membership: 'leave',
        displayname: 'Not Bob',
        avatar_url: 'mxc://elsewhere/fake',
        kind: 'guest',
        join_authorised_via_users_server: alice.userId,
        third_party_signed: { sender: alice.userId, mxid: bob.userId, token: 't', signatures: {} },
      });
      assert.deepEqual(await memberOf(alice, roomId, bob.userId), {
        membership: 'join',
        displayname: bobProfile.displayname,
        avatar_url: 'mxc://localhost/bob',
        reason: 'hello',
        'org.example.note': { nested: [1, 'two'] },
      });

      // The same through /rooms/{roomId}/join.
      await carol.ok('POST', `/rooms/${enc(roomId)}/join`, { 'com.example.flag': true, reason: 'me too' });
      assert.deepEqual(await memberOf(alice, roomId, carol.userId), {
        membership: 'join',
        displayname: carolProfile.displayname,
        'com.example.flag': true,
        reason: 'me too',
      });
    });

    test('a join body of the wrong types is 400 M_BAD_JSON and joins no one', async () => {
      const alice = await user('alice');
      const dave = await user('dave');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      const before = await eventIds(alice, roomId);
      const bad: [string, unknown][] = [
        ['reason a number', { reason: 5 }],
        ['reason an object', { reason: { text: 'x' } }],
        ['third_party_signed a string', { third_party_signed: 'signed' }],
        ['a value without canonical JSON (a float)', { 'org.example.ratio': 1.5 }],
        ['the body a list', [1, 2]],
      ];
      for (const [what, body] of bad) {
        for (const path of [`/join/${enc(roomId)}`, `/rooms/${enc(roomId)}/join`]) {
          expectError(await dave.call('POST', path, body), 400, 'M_BAD_JSON', `${what} via ${path}`);
        }
      }
      assert.deepEqual(await eventIds(alice, roomId), before);
      assert.deepEqual((await dave.ok('GET', '/joined_rooms')).joined_rooms, []);
    });

    test('redacting, in one room, an event of another is 400 M_UNKNOWN; nothing is redacted in either', async () => {
      const alice = await user('alice');
      const carol = await user('carol');
      const roomA = await alice.createRoom({ preset: 'public_chat' });
      const roomB = await alice.createRoom({ preset: 'public_chat' });
      await carol.join(roomB);
      const inB = await alice.text(roomB, 'stays');
      const beforeA = await eventIds(alice, roomA);
      const beforeB = await eventIds(alice, roomB);

      expectError(await alice.call('PUT', `/rooms/${enc(roomA)}/redact/${enc(inB)}/x1`, { reason: 'r' }), 400, 'M_UNKNOWN', 'redact');
      // A v11-style redaction sent as an event is the same request.
      expectError(await alice.call('PUT', `/rooms/${enc(roomA)}/send/m.room.redaction/x2`, { redacts: inB }), 400, 'M_UNKNOWN', 'send m.room.redaction');
      // Someone not in room A is refused as the auth rules refuse them, before learning anything.
      expectError(await carol.call('PUT', `/rooms/${enc(roomA)}/redact/${enc(inB)}/x3`, {}), 403, 'M_FORBIDDEN', 'not in room A');

      assert.deepEqual(await eventIds(alice, roomA), beforeA);
      assert.deepEqual(await eventIds(alice, roomB), beforeB);
      const stored = await alice.ok('GET', `/rooms/${enc(roomB)}/event/${enc(inB)}`);
      assert.equal(stored.content.body, 'stays');
      assert.equal(stored.unsigned.redacted_because, undefined);
      // Redacting it in its own room still works.
      await alice.ok('PUT', `/rooms/${enc(roomB)}/redact/${enc(inB)}/x4`, {});
      assert.deepEqual((await alice.ok('GET', `/rooms/${enc(roomB)}/event/${enc(inB)}`)).content, {});
    });

    test('a member state key that is not a user id is 400 as /invite answers it; nothing is sent', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      const before = await eventIds(alice, roomId);
      for (const key of ['notauser', '@', roomId, '@eve\r\n:localhost', '@eve\n:localhost', 'localhost']) {
        const invite = await alice.call('POST', `/rooms/${enc(roomId)}/invite`, { user_id: key });
        expectError(invite, 400, 'M_INVALID_PARAM', `/invite ${JSON.stringify(key)}`);
        const put = await alice.call('PUT', `/rooms/${enc(roomId)}/state/m.room.member/${enc(key)}`, { membership: 'invite' });
        expectError(put, 400, invite.body.errcode, `PUT state ${JSON.stringify(key)}`);
      }
      assert.deepEqual(await eventIds(alice, roomId), before);
      // A valid user id still goes through the auth rules as before.
      const bob = await user('bob');
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.member/${enc(bob.userId)}`, { membership: 'invite' });
      assert.equal((await memberOf(alice, roomId, bob.userId)).membership, 'invite');
    });

    test('POST /publicRooms: fields of the wrong type are 400 M_BAD_JSON, bad values M_INVALID_PARAM', async () => {
      const alice = await user('alice');
      const listedRoom = await alice.createRoom({ preset: 'public_chat', visibility: 'public' });
      const wrongType: [string, object][] = [
        ['include_all_networks a string', { include_all_networks: 'yes' }],
        ['include_all_networks a number', { include_all_networks: 1 }],
        ['third_party_instance_id a number', { third_party_instance_id: 5 }],
        ['third_party_instance_id an object', { third_party_instance_id: {} }],
        ['limit a string', { limit: '10' }],
        ['limit a float', { limit: 1.5 }],
        ['limit a boolean', { limit: true }],
        ['since a number', { since: 5 }],
        ['filter a string', { filter: 'rooms' }],
        ['filter a list', { filter: [] }],
        ['generic_search_term a number', { filter: { generic_search_term: 5 } }],
      ];
      for (const [what, body] of wrongType) expectError(await alice.call('POST', '/publicRooms', body), 400, 'M_BAD_JSON', what);
      const badValue: [string, object][] = [
        ['a negative limit', { limit: -1 }],
        ['an unknown since token', { since: 'not-a-token' }],
        ['include_all_networks with a network', { include_all_networks: true, third_party_instance_id: 'irc|libera' }],
        ['a network id without its appservice', { third_party_instance_id: 'libera' }],
      ];
      for (const [what, body] of badValue) expectError(await alice.call('POST', '/publicRooms', body), 400, 'M_INVALID_PARAM', what);

      const ids = (r: any) => r.chunk.map((e: any) => e.room_id as string);
      assert.ok(ids(await alice.ok('POST', '/publicRooms', { include_all_networks: true })).includes(listedRoom));
      assert.ok(ids(await alice.ok('POST', '/publicRooms', { include_all_networks: false, limit: 0 })).includes(listedRoom));
      // No bridged network publishes rooms here.
      assert.deepEqual(await alice.ok('POST', '/publicRooms', { third_party_instance_id: 'irc|libera' }), { chunk: [], total_room_count_estimate: 0 });
    });
  });
}
