// Two Hearth servers sharing rooms through their client APIs only: bob on hs2.test joins alice's
// room on hs1.test (by alias, then by id through `via`), both talk and see each other, bob leaves
// and comes back, and a ban by alice keeps him out. Every step is a real request to a real server;
// the servers find each other through the test's DNS and speak TLS with the test CA's certificates.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/protocol/json.js';
import { enc, request } from '../e2e/support/client.js';
import { eventually } from '../support/eventually.js';
import { type FederationNet, startFederatedServer, startFederationNet } from '../support/federation-net.js';
import { type TestServer, type TestUser, serverBackends } from '../support/server.js';

/** Federation is asynchronous: what one server sends, the other has within this. */
const ARRIVES_MS = 15_000;

for (const { backend, skip } of await serverBackends()) {
  describe(`rooms shared by two servers on ${backend}`, { skip }, () => {
    let net: FederationNet;
    let hs1: TestServer;
    let hs2: TestServer;
    let alice: TestUser;
    let bob: TestUser;
    let roomId: string;

    before(async () => {
      net = await startFederationNet();
      hs1 = await startFederatedServer(net, { name: 'hs1.test', address: '127.0.0.2', naming: 'chat', backend, federation: { senderRetry: { minMs: 100, maxMs: 1000 } } });
      hs2 = await startFederatedServer(net, { name: 'hs2.test', address: '127.0.0.3', naming: 'matrix', backend, federation: { senderRetry: { minMs: 100, maxMs: 1000 } } });
      alice = await hs1.registerUser('alice', 'alice-password');
      bob = await hs2.registerUser('bob', 'bob-password');
      await request(hs2.baseUrl, 'PUT', `/_chat/client/v3/profile/${enc(bob.userId)}/displayname`, { displayname: 'Bob of hs2' }, { token: bob.accessToken });
    });

    after(async () => {
      await hs1?.close();
      await hs2?.close();
      await net?.close();
    });

    const call = (hs: TestServer, user: TestUser, method: string, path: string, body?: JsonObject) =>
      request(hs.baseUrl, method, `/_chat/client/v3${path}`, body, { token: user.accessToken });
    const members = async (hs: TestServer, user: TestUser) => {
      const res = await call(hs, user, 'GET', `/rooms/${enc(roomId)}/joined_members`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return Object.keys(res.body!['joined'] as JsonObject).sort();
    };
    const membership = async (hs: TestServer, user: TestUser, of: string) => {
      const res = await call(hs, user, 'GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(of)}`);
      return res.status === 200 ? (res.body!['membership'] as string) : `status ${res.status}`;
    };
    /** The bodies of the newest messages `user` reads in the room on `hs`. */
    const bodies = async (hs: TestServer, user: TestUser) => {
      const res = await call(hs, user, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=50`);
      if (res.status !== 200) return [];
      return (res.body!['chunk'] as JsonObject[]).filter((e) => e['type'] === 'm.room.message').map((e) => (e['content'] as JsonObject)['body']);
    };
    const say = async (hs: TestServer, user: TestUser, body: string) => {
      const res = await call(hs, user, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/${Math.random().toString(36).slice(2)}`, { msgtype: 'm.text', body });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body!['event_id'] as string;
    };

    test("bob on hs2 joins alice's room on hs1 by its alias, and they talk", async () => {
      const created = await call(hs1, alice, 'POST', '/createRoom', { preset: 'public_chat', room_alias_name: 'lobby', name: 'Lobby' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      roomId = created.body!['room_id'] as string;
      await say(hs1, alice, 'before bob');

      const joined = await call(hs2, bob, 'POST', `/join/${enc('#lobby:hs1.test')}`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(joined.body!['room_id'], roomId);

      // Both servers hold the same membership and state.
      assert.deepEqual(await members(hs2, bob), [alice.userId, bob.userId].sort());
      assert.deepEqual(await members(hs1, alice), [alice.userId, bob.userId].sort());
      const name = await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/state/m.room.name`);
      assert.deepEqual(name.body, { name: 'Lobby' });
      const bobOnHs1 = await call(hs1, alice, 'GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(bob.userId)}`);
      assert.equal(bobOnHs1.body!['displayname'], 'Bob of hs2');

      // bob's sync shows the room joined, with its state.
      const sync = await call(hs2, bob, 'GET', '/sync');
      assert.equal(sync.status, 200);
      const room = ((sync.body!['rooms'] as JsonObject)['join'] as JsonObject)[roomId] as JsonObject | undefined;
      assert.ok(room !== undefined, 'the room is in bob’s sync');
      const stateTypes = [
        ...((room['state'] as JsonObject)['events'] as JsonObject[]),
        ...((room['timeline'] as JsonObject)['events'] as JsonObject[]),
      ].map((e) => e['type']);
      assert.ok(stateTypes.includes('m.room.create'));
      assert.ok(stateTypes.includes('m.room.name'));
      // With the room's recent history, fetched from hs1 as bob joined.
      const timeline = ((room['timeline'] as JsonObject)['events'] as JsonObject[]).map((e) => (e['content'] as JsonObject)['body']);
      assert.ok(timeline.includes('before bob'), JSON.stringify(timeline));

      // Each side's message reaches the other.
      await say(hs1, alice, 'hello from hs1');
      await eventually(async () => (await bodies(hs2, bob)).includes('hello from hs1'), "alice's message on hs2", ARRIVES_MS);
      await say(hs2, bob, 'hello from hs2');
      await eventually(async () => (await bodies(hs1, alice)).includes('hello from hs2'), "bob's message on hs1", ARRIVES_MS);
      // In the same order on both servers.
      const onHs1 = await bodies(hs1, alice);
      const onHs2 = await bodies(hs2, bob);
      assert.deepEqual(onHs2.slice(0, 2), ['hello from hs2', 'hello from hs1']);
      assert.deepEqual(onHs1.slice(0, 2), ['hello from hs2', 'hello from hs1']);
      // What was said before bob's join is history hs2 lacked: paging back backfills it from hs1.
      assert.deepEqual(onHs2, ['hello from hs2', 'hello from hs1', 'before bob']);
      const all = await call(hs2, bob, 'GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=100`);
      const types = (all.body!['chunk'] as JsonObject[]).map((e) => e['type']);
      assert.ok(types.includes('m.room.create'), `the history reaches back to the room’s creation: ${JSON.stringify(types)}`);
    });

    test('bob leaves, rejoins by room id through via, and a ban keeps him out', async () => {
      const left = await call(hs2, bob, 'POST', `/rooms/${enc(roomId)}/leave`, {});
      assert.equal(left.status, 200, JSON.stringify(left.body));
      await eventually(async () => (await membership(hs1, alice, bob.userId)) === 'leave', 'bob’s leave on hs1', ARRIVES_MS);
      assert.deepEqual(await members(hs1, alice), [alice.userId]);

      // hs2 is no longer in the room: the join goes through hs1 again.
      await say(hs1, alice, 'while bob was away');
      const back = await call(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      assert.equal(back.status, 200, JSON.stringify(back.body));
      assert.deepEqual(await members(hs1, alice), [alice.userId, bob.userId].sort());
      assert.deepEqual(await members(hs2, bob), [alice.userId, bob.userId].sort());
      await say(hs2, bob, 'back again');
      await eventually(async () => (await bodies(hs1, alice)).includes('back again'), "bob's message after rejoining, on hs1", ARRIVES_MS);

      const since = (await call(hs2, bob, 'GET', '/sync')).body!['next_batch'] as string;
      const banned = await call(hs1, alice, 'POST', `/rooms/${enc(roomId)}/ban`, { user_id: bob.userId, reason: 'enough' });
      assert.equal(banned.status, 200, JSON.stringify(banned.body));
      await eventually(async () => (await membership(hs2, bob, bob.userId)) === 'ban', 'bob’s ban on hs2', ARRIVES_MS);
      // Banned: hs2 is out of the room, and hs1 refuses the join.
      const again = await call(hs2, bob, 'POST', `/join/${enc(roomId)}?via=hs1.test`, {});
      assert.equal(again.status, 403, JSON.stringify(again.body));
      assert.equal(again.body!['errcode'], 'M_FORBIDDEN');
      const sent = await call(hs2, bob, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/after-ban`, { msgtype: 'm.text', body: 'let me in' });
      assert.equal(sent.status, 403);
      // bob's sync has the room under leave, ending with his ban.
      const sync = await call(hs2, bob, 'GET', `/sync?since=${enc(since)}&timeout=0`);
      const leave = ((sync.body!['rooms'] as JsonObject)['leave'] as JsonObject)[roomId] as JsonObject | undefined;
      assert.ok(leave !== undefined, 'the room is under leave in bob’s sync');
      const last = ((leave['timeline'] as JsonObject)['events'] as JsonObject[]).at(-1)!;
      assert.equal((last['content'] as JsonObject)['membership'], 'ban');
    });

    test("carol on hs2 joins, sees alice typing and reading, and alice's kick reaches hs2", async () => {
      const carol = await hs2.registerUser('carol', 'carol-password');
      const joined = await call(hs2, carol, 'POST', `/rooms/${enc(roomId)}/join`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      const since = (await call(hs2, carol, 'GET', '/sync')).body!['next_batch'] as string;
      const typed = await call(hs1, alice, 'PUT', `/rooms/${enc(roomId)}/typing/${enc(alice.userId)}`, { typing: true, timeout: 30000 });
      assert.equal(typed.status, 200);
      const messageId = await say(hs1, alice, 'welcome carol');
      await eventually(async () => (await bodies(hs2, carol)).includes('welcome carol'), 'alice’s welcome on hs2', ARRIVES_MS);
      const read = await call(hs1, alice, 'POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(messageId)}`, {});
      assert.equal(read.status, 200);
      let typing: unknown;
      let receipts: unknown;
      await eventually(
        async () => {
          const res = await call(hs2, carol, 'GET', `/sync?since=${enc(since)}&timeout=0`);
          const room = (((res.body!['rooms'] as JsonObject | undefined)?.['join'] as JsonObject | undefined)?.[roomId] as JsonObject | undefined) ?? {};
          for (const e of ((room['ephemeral'] as JsonObject | undefined)?.['events'] as JsonObject[] | undefined) ?? []) {
            if (e['type'] === 'm.typing') typing = (e['content'] as JsonObject)['user_ids'];
            if (e['type'] === 'm.receipt') receipts = e['content'];
          }
          return typing !== undefined && receipts !== undefined;
        },
        'typing and a receipt of alice’s in carol’s sync',
        ARRIVES_MS,
      );
      assert.deepEqual(typing, [alice.userId]);
      assert.ok(JSON.stringify(receipts).includes(alice.userId) && JSON.stringify(receipts).includes(messageId));

      const kicked = await call(hs1, alice, 'POST', `/rooms/${enc(roomId)}/kick`, { user_id: carol.userId, reason: 'bye' });
      assert.equal(kicked.status, 200, JSON.stringify(kicked.body));
      await eventually(async () => (await membership(hs2, carol, carol.userId)) === 'leave', 'carol’s kick on hs2', ARRIVES_MS);
      assert.deepEqual(await members(hs1, alice), [alice.userId]);
    });

    test("alice invites users of hs2: one sees the invite in sync and joins through it, one rejects it", async () => {
      const dave = await hs2.registerUser('dave', 'dave-password');
      const erin = await hs2.registerUser('erin', 'erin-password');
      const created = await call(hs1, alice, 'POST', '/createRoom', { preset: 'private_chat', name: 'Private' });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const privateId = created.body!['room_id'] as string;
      // Invite-only: without an invite hs1 refuses dave.
      const uninvited = await call(hs2, dave, 'POST', `/join/${enc(privateId)}?via=hs1.test`, {});
      assert.equal(uninvited.status, 403, JSON.stringify(uninvited.body));

      for (const u of [dave, erin]) {
        const invited = await call(hs1, alice, 'POST', `/rooms/${enc(privateId)}/invite`, { user_id: u.userId });
        assert.equal(invited.status, 200, JSON.stringify(invited.body));
      }
      const state = async (hs: TestServer, user: TestUser, of: string) => {
        const res = await call(hs, user, 'GET', `/rooms/${enc(privateId)}/state/m.room.member/${enc(of)}`);
        return res.status === 200 ? (res.body!['membership'] as string) : `status ${res.status}`;
      };
      assert.equal(await state(hs1, alice, dave.userId), 'invite');

      // dave's sync shows the invite with the room's name, from the stripped state alice's server sent.
      const sync = await call(hs2, dave, 'GET', '/sync');
      const invite = ((sync.body!['rooms'] as JsonObject)['invite'] as JsonObject)[privateId] as JsonObject | undefined;
      assert.ok(invite !== undefined, 'the invite is in dave’s sync');
      const stripped = (invite['invite_state'] as JsonObject)['events'] as JsonObject[];
      assert.ok(stripped.some((e) => e['type'] === 'm.room.name' && (e['content'] as JsonObject)['name'] === 'Private'));
      assert.ok(stripped.some((e) => e['type'] === 'm.room.member' && e['state_key'] === dave.userId && e['sender'] === alice.userId));

      // Joined by id alone: hs2 asks the inviter's server.
      const joined = await call(hs2, dave, 'POST', `/rooms/${enc(privateId)}/join`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(await state(hs1, alice, dave.userId), 'join');
      const joinedRooms = await call(hs2, dave, 'GET', '/joined_rooms');
      assert.ok((joinedRooms.body!['joined_rooms'] as string[]).includes(privateId));

      // erin rejects: the leave reaches hs1, and the invite is gone from erin's sync.
      const rejected = await call(hs2, erin, 'POST', `/rooms/${enc(privateId)}/leave`, {});
      assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
      await eventually(async () => (await state(hs1, alice, erin.userId)) === 'leave', 'erin’s rejection on hs1', ARRIVES_MS);
      const after = await call(hs2, erin, 'GET', '/sync');
      const invites = ((after.body!['rooms'] as JsonObject)['invite'] as JsonObject | undefined) ?? {};
      assert.equal(invites[privateId], undefined);
    });

    test('a user of hs2 knocks on a room of hs1, is let in by an invite and joins; another withdraws a knock', async () => {
      const frank = await hs2.registerUser('frank', 'frank-password');
      const gina = await hs2.registerUser('gina', 'gina-password');
      const created = await call(hs1, alice, 'POST', '/createRoom', {
        preset: 'private_chat',
        name: 'Knock here',
        room_version: '10',
        initial_state: [{ type: 'm.room.join_rules', state_key: '', content: { join_rule: 'knock' } }],
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const knockId = created.body!['room_id'] as string;
      const member = async (of: string) => {
        const res = await call(hs1, alice, 'GET', `/rooms/${enc(knockId)}/state/m.room.member/${enc(of)}`);
        return res.status === 200 ? (res.body!['membership'] as string) : `status ${res.status}`;
      };

      const knocked = await call(hs2, frank, 'POST', `/knock/${enc(knockId)}?via=hs1.test`, { reason: 'let me in' });
      assert.equal(knocked.status, 200, JSON.stringify(knocked.body));
      assert.equal(await member(frank.userId), 'knock');
      // frank's sync shows the knock with the room's stripped state.
      const sync = await call(hs2, frank, 'GET', '/sync');
      const knock = ((sync.body!['rooms'] as JsonObject)['knock'] as JsonObject | undefined)?.[knockId] as JsonObject | undefined;
      assert.ok(knock !== undefined, JSON.stringify(sync.body!['rooms']));
      const stripped = (knock['knock_state'] as JsonObject)['events'] as JsonObject[];
      assert.ok(stripped.some((e) => e['type'] === 'm.room.name' && (e['content'] as JsonObject)['name'] === 'Knock here'));

      // alice lets frank in; he joins through hs1.
      const invited = await call(hs1, alice, 'POST', `/rooms/${enc(knockId)}/invite`, { user_id: frank.userId });
      assert.equal(invited.status, 200, JSON.stringify(invited.body));
      const joined = await call(hs2, frank, 'POST', `/join/${enc(knockId)}`, {});
      assert.equal(joined.status, 200, JSON.stringify(joined.body));
      assert.equal(await member(frank.userId), 'join');

      // gina knocks (hs2 is in the room now: the knock is sent like any event) and thinks better of it.
      assert.equal((await call(hs2, gina, 'POST', `/knock/${enc(knockId)}?server_name=hs1.test`, {})).status, 200);
      await eventually(async () => (await member(gina.userId)) === 'knock', 'gina’s knock on hs1', ARRIVES_MS);
      const withdrawn = await call(hs2, gina, 'POST', `/rooms/${enc(knockId)}/leave`, {});
      assert.equal(withdrawn.status, 200, JSON.stringify(withdrawn.body));
      await eventually(async () => (await member(gina.userId)) === 'leave', 'gina’s withdrawal on hs1', ARRIVES_MS);

      // A room that does not take knocks refuses them.
      const refused = await call(hs2, gina, 'POST', `/knock/${enc(roomId)}?via=hs1.test`, {});
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
    });

    test('a restricted room admits members of its allowed room, from either server, vouched for by hs1', async () => {
      const hank = await hs2.registerUser('hank', 'hank-password');
      const ivy = await hs1.registerUser('ivy', 'ivy-password');
      const space = await call(hs1, alice, 'POST', '/createRoom', { preset: 'public_chat', name: 'Space' });
      const spaceId = space.body!['room_id'] as string;
      const created = await call(hs1, alice, 'POST', '/createRoom', {
        preset: 'private_chat',
        room_version: '10',
        initial_state: [{ type: 'm.room.join_rules', state_key: '', content: { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: spaceId }] } }],
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const restrictedId = created.body!['room_id'] as string;

      // Not in the space yet: refused, here and from hs2.
      const localRefused = await call(hs1, ivy, 'POST', `/rooms/${enc(restrictedId)}/join`, {});
      assert.equal(localRefused.status, 403, JSON.stringify(localRefused.body));
      const remoteRefused = await call(hs2, hank, 'POST', `/join/${enc(restrictedId)}?via=hs1.test`, {});
      assert.equal(remoteRefused.status, 403, JSON.stringify(remoteRefused.body));
      assert.equal(remoteRefused.body!['errcode'], 'M_FORBIDDEN');

      // In the space: admitted, alice named as the voucher.
      assert.equal((await call(hs1, ivy, 'POST', `/rooms/${enc(spaceId)}/join`, {})).status, 200);
      assert.equal((await call(hs2, hank, 'POST', `/join/${enc(spaceId)}?via=hs1.test`, {})).status, 200);
      const localJoin = await call(hs1, ivy, 'POST', `/rooms/${enc(restrictedId)}/join`, {});
      assert.equal(localJoin.status, 200, JSON.stringify(localJoin.body));
      const remoteJoin = await call(hs2, hank, 'POST', `/join/${enc(restrictedId)}?via=hs1.test`, {});
      assert.equal(remoteJoin.status, 200, JSON.stringify(remoteJoin.body));
      for (const [hs, user, of] of [[hs1, alice, ivy.userId], [hs1, alice, hank.userId], [hs2, hank, hank.userId]] as const) {
        const res = await call(hs, user, 'GET', `/rooms/${enc(restrictedId)}/state/m.room.member/${enc(of)}`);
        assert.equal(res.body!['membership'], 'join', JSON.stringify(res.body));
        assert.equal(res.body!['join_authorised_via_users_server'], alice.userId);
      }
    });

    test('joining what no server knows is 404, and through a server that cannot be reached 502', async () => {
      const unknownAlias = await call(hs2, bob, 'POST', `/join/${enc('#nowhere:hs1.test')}`, {});
      assert.equal(unknownAlias.status, 404, JSON.stringify(unknownAlias.body));
      assert.equal(unknownAlias.body!['errcode'], 'M_NOT_FOUND');
      const unknownRoom = await call(hs2, bob, 'POST', `/join/${enc('!nothing:hs1.test')}`, {});
      assert.equal(unknownRoom.status, 404, JSON.stringify(unknownRoom.body));
      const unreachable = await call(hs2, bob, 'POST', `/join/${enc('!nothing:unreachable.test')}`, {});
      assert.equal(unreachable.status, 502, JSON.stringify(unreachable.body));
      assert.ok(!JSON.stringify(unreachable.body).includes('127.0.0'), 'no address leaks');
    });
  });
}
