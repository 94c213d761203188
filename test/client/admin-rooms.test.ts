// The admin API's rooms and event reports over HTTP on both backends: listing, details, members,
// state, deletion (v1 and v2) with blocking and purging, event reports, background updates; and
// the refusals: no token 401, a non-admin 403, bad input 400, unknown things 404.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, enc, type Reply } from '../e2e/support/client.js';
import { serverBackends, useTestServer, type TestUser } from '../support/server.js';
import { roomRowCounts } from '../../src/storage/rooms/purge.js';
import { eventually } from '../support/eventually.js';

const PREFIXES = ['/_synapse/admin', '/_ext/admin'];

for (const { backend, skip } of await serverBackends()) {
  describe(`admin API rooms on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    let admin: TestUser;
    let alice: TestUser;
    let bob: TestUser;
    const call = (user: TestUser | null, method: string, path: string, body?: unknown): Promise<Reply> =>
      request(hs.baseUrl, method, path, body, { token: user === null ? null : user.accessToken });
    const ok = async (user: TestUser, method: string, path: string, body?: unknown): Promise<any> => {
      const res = await call(user, method, path, body);
      assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
      return res.body;
    };
    const client = (user: TestUser, method: string, path: string, body?: unknown) => ok(user, method, `/_matrix/client/v3${path}`, body);
    const createRoom = async (user: TestUser, body: object): Promise<string> => (await client(user, 'POST', '/createRoom', body)).room_id;
    const refused = async (res: Reply, status: number, errcode: string) => {
      assert.equal(res.status, status, res.text);
      assert.equal(res.body.errcode, errcode, res.text);
    };

    before(async () => {
      admin = await hs.registerUser('admin', 'secret', { admin: true });
      alice = await hs.registerUser('alice', 'secret');
      bob = await hs.registerUser('bob', 'secret');
    });

    test('rooms are listed with their summary, ordered, searched and paged under both prefixes', async () => {
      const general = await createRoom(alice, { preset: 'public_chat', name: 'General chat', room_alias_name: 'general' });
      await client(bob, 'POST', `/join/${enc(general)}`, {});
      const secret = await createRoom(alice, {
        preset: 'private_chat',
        name: 'Another room',
        initial_state: [{ type: 'm.room.encryption', state_key: '', content: { algorithm: 'm.megolm.v1.aes-sha2' } }],
      });
      for (const prefix of PREFIXES) {
        const list = await ok(admin, 'GET', `${prefix}/v1/rooms?search_term=${enc('chat')}`);
        assert.equal(list.total_rooms, 1);
        const room = list.rooms[0];
        assert.deepEqual(
          { ...room },
          {
            room_id: general,
            name: 'General chat',
            canonical_alias: `#general:${hs.serverName}`,
            joined_members: 2,
            joined_local_members: 2,
            version: room.version,
            creator: alice.userId,
            encryption: null,
            federatable: true,
            public: false,
            join_rules: 'public',
            guest_access: null,
            history_visibility: 'shared',
            state_events: room.state_events,
            room_type: null,
          },
        );
        assert.ok(room.state_events >= 6);
      }
      const byName = await ok(admin, 'GET', '/_synapse/admin/v1/rooms?order_by=name&search_term=r');
      assert.deepEqual(byName.rooms.map((r: any) => r.name).slice(0, 2), ['Another room', 'General chat']);
      const back = await ok(admin, 'GET', '/_synapse/admin/v1/rooms?order_by=name&dir=b&search_term=r');
      assert.deepEqual(back.rooms.map((r: any) => r.name).slice(-2), ['General chat', 'Another room']);
      const byMembers = await ok(admin, 'GET', '/_synapse/admin/v1/rooms?order_by=joined_members');
      assert.equal(byMembers.rooms[0].room_id, general);
      const encrypted = await ok(admin, 'GET', `/_synapse/admin/v1/rooms?order_by=encryption&search_term=${enc(secret)}`);
      assert.equal(encrypted.rooms[0].encryption, 'm.megolm.v1.aes-sha2');
      const page = await ok(admin, 'GET', '/_synapse/admin/v1/rooms?limit=1');
      assert.equal(page.rooms.length, 1);
      assert.equal(page.offset, 0);
      assert.equal(page.next_batch, 1);
      const next = await ok(admin, 'GET', '/_synapse/admin/v1/rooms?limit=1&from=1');
      assert.equal(next.prev_batch, 0);
      assert.notEqual(next.rooms[0].room_id, page.rooms[0].room_id);
    });

    test('a room: details, members and state; 404 for an unknown room, 400 for a malformed id', async () => {
      const roomId = await createRoom(alice, { preset: 'public_chat', name: 'Details', topic: 'all about it' });
      await client(bob, 'POST', `/join/${enc(roomId)}`, {});
      const details = await ok(admin, 'GET', `/_ext/admin/v1/rooms/${enc(roomId)}`);
      assert.equal(details.room_id, roomId);
      assert.equal(details.topic, 'all about it');
      assert.equal(details.joined_local_members, 2);
      assert.equal(details.joined_local_devices, 2);
      assert.equal(details.forgotten, false);
      assert.deepEqual(await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/members`), { members: [alice.userId, bob.userId].sort(), total: 2 });
      const { state } = await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/state`);
      assert.ok(state.some((e: any) => e.type === 'm.room.create' && e.state_key === ''));
      assert.ok(state.some((e: any) => e.type === 'm.room.topic' && e.content.topic === 'all about it'));
      for (const path of ['', '/members', '/state']) {
        await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(`!nope:${hs.serverName}`)}${path}`), 404, 'M_NOT_FOUND');
        await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/not-a-room${path}`), 400, 'M_INVALID_PARAM');
      }
    });

    test('messages: an admin reads a room it is not in, whatever its history visibility', async () => {
      const roomId = await createRoom(alice, { preset: 'private_chat', initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'joined' } }] });
      await client(alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/m1`, { msgtype: 'm.text', body: 'one' });
      await client(alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/m2`, { msgtype: 'm.text', body: 'two' });
      const back = await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/messages?dir=b&limit=2`);
      assert.deepEqual(back.chunk.map((e: any) => e.content.body), ['two', 'one']);
      const older = await ok(admin, 'GET', `/_ext/admin/v1/rooms/${enc(roomId)}/messages?dir=b&limit=100&from=${enc(back.end)}`);
      assert.ok(older.chunk.some((e: any) => e.type === 'm.room.create'));
      const forward = await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/messages?filter=${enc(JSON.stringify({ types: ['m.room.message'] }))}`);
      assert.deepEqual(forward.chunk.map((e: any) => e.content.body), ['one', 'two']);
      await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/messages?dir=x`), 400, 'M_INVALID_PARAM');
      await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(`!nope:${hs.serverName}`)}/messages`), 404, 'M_NOT_FOUND');
      await refused(await call(alice, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/messages`), 403, 'M_FORBIDDEN');
      const badToken = await call(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/messages?from=zzz`);
      assert.equal(badToken.status, 400, badToken.text);
    });

    test('bad list parameters are 400 M_INVALID_PARAM', async () => {
      for (const q of ['order_by=size', 'dir=x', 'from=-1', 'limit=abc', 'from=1&from=2']) {
        await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms?${q}`), 400, 'M_INVALID_PARAM');
      }
    });

    test('without a token 401, for a non-admin 403, on every endpoint and both prefixes', async () => {
      const paths: [string, string][] = [
        ['GET', '/v1/rooms'],
        ['GET', '/v1/rooms/!x:localhost'],
        ['GET', '/v1/rooms/!x:localhost/members'],
        ['GET', '/v1/rooms/!x:localhost/state'],
        ['GET', '/v1/rooms/!x:localhost/messages'],
        ['DELETE', '/v1/rooms/!x:localhost'],
        ['DELETE', '/v2/rooms/!x:localhost'],
        ['GET', '/v2/rooms/!x:localhost/delete_status'],
        ['GET', '/v2/rooms/delete_status/abc'],
        ['GET', '/v1/rooms/!x:localhost/block'],
        ['PUT', '/v1/rooms/!x:localhost/block'],
        ['GET', '/v1/event_reports'],
        ['GET', '/v1/event_reports/1'],
        ['DELETE', '/v1/event_reports/1'],
        ['GET', '/v1/background_updates/status'],
        ['POST', '/v1/background_updates/enabled'],
      ];
      for (const prefix of PREFIXES) {
        for (const [method, path] of paths) {
          const body = method === 'GET' ? undefined : {};
          const anonymous = await call(null, method, prefix + path, body);
          assert.equal(anonymous.status, 401, `${method} ${prefix}${path}`);
          await refused(await call(alice, method, prefix + path, body), 403, 'M_FORBIDDEN');
        }
      }
    });

    test('deleting a room (v1): members leave and see it in their sync, aliases go, it is blocked and purged', async () => {
      const roomId = await createRoom(alice, { preset: 'public_chat', name: 'Doomed', room_alias_name: 'doomed' });
      await client(bob, 'POST', `/join/${enc(roomId)}`, {});
      const hello = (await client(alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/t1`, { msgtype: 'm.text', body: 'hello' })).event_id as string;
      await client(bob, 'PUT', `/rooms/${enc(roomId)}/send/m.reaction/r1`, { 'm.relates_to': { rel_type: 'm.annotation', event_id: hello, key: '👋' } });
      const roomNid = Number((await hs.server.core.db.selectFrom('rooms').select('room_nid').where('room_id', '=', roomId).executeTakeFirstOrThrow()).room_nid);
      assert.equal((await roomRowCounts(hs.server.core.db, roomId, roomNid))['event_relations'], 1);
      const since = (await client(bob, 'GET', '/sync')).next_batch;

      const result = await ok(admin, 'DELETE', `/_synapse/admin/v1/rooms/${enc(roomId)}`, { block: true, purge: true, message: 'Gone', room_name: 'Moved' , new_room_user_id: admin.userId });
      assert.deepEqual([...result.kicked_users].sort(), [alice.userId, bob.userId].sort());
      assert.deepEqual(result.failed_to_kick_users, []);
      assert.deepEqual(result.local_aliases, [`#doomed:${hs.serverName}`]);
      assert.match(result.new_room_id, /^!/);

      const sync = await client(bob, 'GET', `/sync?since=${enc(since)}`);
      assert.equal(sync.rooms?.join?.[roomId], undefined, JSON.stringify(sync.rooms));
      assert.equal((await client(bob, 'GET', '/joined_rooms')).joined_rooms.includes(roomId), false);
      assert.ok((await client(bob, 'GET', '/joined_rooms')).joined_rooms.includes(result.new_room_id));
      // Purged: nothing of the room is left.
      const counts = await roomRowCounts(hs.server.core.db, roomId, roomNid);
      assert.deepEqual(Object.entries(counts).filter(([, n]) => n !== 0), []);
      const snapshotRows = await hs.server.core.db.selectFrom('state_snapshots').select('snapshot_nid').where('room_nid', '=', roomNid).execute();
      assert.deepEqual(snapshotRows, []);
      await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}`), 404, 'M_NOT_FOUND');
      // Blocked: joins and invites are refused.
      assert.deepEqual(await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/block`), { block: true, user_id: admin.userId });
      await refused(await call(bob, 'POST', `/_matrix/client/v3/join/${enc(roomId)}`, {}), 403, 'M_FORBIDDEN');
      // The alias now leads to the new room.
      assert.equal((await client(bob, 'GET', `/directory/room/${enc(`#doomed:${hs.serverName}`)}`)).room_id, result.new_room_id);
    });

    test('deleting without purge keeps the room; a blocked room refuses joins and invites until unblocked', async () => {
      const roomId = await createRoom(alice, { preset: 'public_chat' });
      const since = (await client(alice, 'GET', '/sync')).next_batch;
      const result = await ok(admin, 'DELETE', `/_ext/admin/v1/rooms/${enc(roomId)}`, { purge: false });
      assert.deepEqual(result, { kicked_users: [alice.userId], failed_to_kick_users: [], local_aliases: [], new_room_id: null });
      const sync = await client(alice, 'GET', `/sync?since=${enc(since)}`);
      assert.ok(sync.rooms?.leave?.[roomId] !== undefined, JSON.stringify(sync.rooms));
      assert.equal(sync.rooms?.join?.[roomId], undefined);
      assert.deepEqual((await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/members`)).members, []);
      assert.deepEqual(await ok(admin, 'PUT', `/_synapse/admin/v1/rooms/${enc(roomId)}/block`, { block: true }), { block: true });
      await refused(await call(alice, 'POST', `/_matrix/client/v3/join/${enc(roomId)}`, {}), 403, 'M_FORBIDDEN');
      assert.deepEqual(await ok(admin, 'PUT', `/_synapse/admin/v1/rooms/${enc(roomId)}/block`, { block: false }), { block: false });
      await client(alice, 'POST', `/join/${enc(roomId)}`, {});
      // Invites to a blocked room are refused too.
      const other = await createRoom(alice, { preset: 'private_chat' });
      await ok(admin, 'PUT', `/_synapse/admin/v1/rooms/${enc(other)}/block`, { block: true });
      await refused(await call(alice, 'POST', `/_matrix/client/v3/rooms/${enc(other)}/invite`, { user_id: bob.userId }), 403, 'M_FORBIDDEN');
      // Blocking a room never seen here is allowed (v1 with block).
      const unknown = `!unseen:${hs.serverName}`;
      assert.deepEqual(await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(unknown)}/block`), { block: false });
      await ok(admin, 'DELETE', `/_synapse/admin/v1/rooms/${enc(unknown)}`, { block: true, purge: false });
      assert.equal((await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(unknown)}/block`)).block, true);
    });

    test('deletion refusals: bad body 400 M_BAD_JSON, unknown room 404, malformed id and foreign new room user 400', async () => {
      const roomId = await createRoom(alice, {});
      for (const body of [{ block: 'yes' }, { purge: 1 }, { room_name: 5 }, { message: [] }, { new_room_user_id: 3 }]) {
        await refused(await call(admin, 'DELETE', `/_synapse/admin/v1/rooms/${enc(roomId)}`, body), 400, 'M_BAD_JSON');
        await refused(await call(admin, 'DELETE', `/_synapse/admin/v2/rooms/${enc(roomId)}`, body), 400, 'M_BAD_JSON');
      }
      await refused(await call(admin, 'DELETE', `/_synapse/admin/v1/rooms/${enc(roomId)}`, { new_room_user_id: '@x:elsewhere' }), 400, 'M_INVALID_PARAM');
      await refused(await call(admin, 'DELETE', `/_synapse/admin/v1/rooms/bad`, {}), 400, 'M_INVALID_PARAM');
      await refused(await call(admin, 'DELETE', `/_synapse/admin/v1/rooms/${enc(`!none:${hs.serverName}`)}`, { purge: false }), 404, 'M_NOT_FOUND');
      await refused(await call(admin, 'PUT', `/_synapse/admin/v1/rooms/${enc(roomId)}/block`, { block: 'no' }), 400, 'M_BAD_JSON');
      await refused(await call(admin, 'PUT', `/_synapse/admin/v1/rooms/${enc(roomId)}/block`, {}), 400, 'M_MISSING_PARAM');
      await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/bad/block`), 400, 'M_INVALID_PARAM');
      // The room is untouched.
      assert.deepEqual((await ok(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}/members`)).members, [alice.userId]);
    });

    test('deleting a room (v2) runs in the background with a status by delete id and by room', async () => {
      const roomId = await createRoom(alice, { preset: 'public_chat' });
      await client(bob, 'POST', `/join/${enc(roomId)}`, {});
      const { delete_id } = await ok(admin, 'DELETE', `/_synapse/admin/v2/rooms/${enc(roomId)}`, { purge: true });
      assert.equal(typeof delete_id, 'string');
      let status: any;
      await eventually(async () => {
        status = await ok(admin, 'GET', `/_synapse/admin/v2/rooms/delete_status/${enc(delete_id)}`);
        return status.status === 'complete';
      }, 'the deletion completes');
      assert.deepEqual([...status.shutdown_room.kicked_users].sort(), [alice.userId, bob.userId].sort());
      const byRoom = await ok(admin, 'GET', `/_ext/admin/v2/rooms/${enc(roomId)}/delete_status`);
      assert.equal(byRoom.results.length, 1);
      assert.equal(byRoom.results[0].delete_id, delete_id);
      assert.equal(byRoom.results[0].status, 'complete');
      await refused(await call(admin, 'GET', `/_synapse/admin/v1/rooms/${enc(roomId)}`), 404, 'M_NOT_FOUND');
      await refused(await call(admin, 'GET', '/_synapse/admin/v2/rooms/delete_status/unknown'), 404, 'M_NOT_FOUND');
      await refused(await call(admin, 'GET', `/_synapse/admin/v2/rooms/${enc(`!none:${hs.serverName}`)}/delete_status`), 404, 'M_NOT_FOUND');
      await refused(await call(admin, 'DELETE', `/_synapse/admin/v2/rooms/${enc(`!none:${hs.serverName}`)}`, { purge: false }), 404, 'M_NOT_FOUND');
    });

    test('event reports: reported by users who see the event, listed, read and deleted by admins', async () => {
      const roomId = await createRoom(alice, { preset: 'public_chat', name: 'Reported' });
      await client(bob, 'POST', `/join/${enc(roomId)}`, {});
      const eventId = (await client(alice, 'PUT', `/rooms/${enc(roomId)}/send/m.room.message/r1`, { msgtype: 'm.text', body: 'bad' })).event_id;
      const outsider = await hs.registerUser('outsider', 'secret');
      const privateRoom = await createRoom(alice, {});
      const hidden = (await client(alice, 'PUT', `/rooms/${enc(privateRoom)}/send/m.room.message/r2`, { msgtype: 'm.text', body: 'hidden' })).event_id;

      await client(bob, 'POST', `/rooms/${enc(roomId)}/report/${enc(eventId)}`, { reason: 'spam', score: -100 });
      await ok(alice, 'POST', `/_chat/client/v3/rooms/${enc(roomId)}/report/${enc(eventId)}`, {});
      await refused(await call(outsider, 'POST', `/_matrix/client/v3/rooms/${enc(privateRoom)}/report/${enc(hidden)}`, {}), 404, 'M_NOT_FOUND');
      await refused(await call(bob, 'POST', `/_matrix/client/v3/rooms/${enc(roomId)}/report/${enc('$nope')}`, {}), 404, 'M_NOT_FOUND');
      await refused(await call(bob, 'POST', `/_matrix/client/v3/rooms/${enc(roomId)}/report/${enc(eventId)}`, { score: 'high' }), 400, 'M_BAD_JSON');
      await refused(await call(bob, 'POST', `/_matrix/client/v3/rooms/${enc(roomId)}/report/${enc(eventId)}`, { reason: 1 }), 400, 'M_BAD_JSON');
      assert.equal((await call(null, 'POST', `/_matrix/client/v3/rooms/${enc(roomId)}/report/${enc(eventId)}`, {})).status, 401);

      const all = await ok(admin, 'GET', `/_synapse/admin/v1/event_reports?room_id=${enc(roomId)}`);
      assert.equal(all.total, 2);
      assert.equal(all.next_token, undefined);
      const [newest, oldest] = all.event_reports;
      assert.equal(newest.user_id, alice.userId);
      assert.deepEqual(
        { ...oldest, id: 0, received_ts: 0 },
        { id: 0, received_ts: 0, room_id: roomId, name: 'Reported', event_id: eventId, user_id: bob.userId, reason: 'spam', score: -100, sender: alice.userId, canonical_alias: null },
      );
      const forward = await ok(admin, 'GET', `/_synapse/admin/v1/event_reports?dir=f&limit=1&room_id=${enc(roomId)}`);
      assert.equal(forward.event_reports[0].id, oldest.id);
      assert.equal(forward.next_token, 1);
      assert.equal((await ok(admin, 'GET', `/_synapse/admin/v1/event_reports?user_id=${enc(bob.userId)}`)).total, 1);
      const one = await ok(admin, 'GET', `/_ext/admin/v1/event_reports/${oldest.id}`);
      assert.equal(one.event_json.event_id, eventId);
      assert.equal(one.event_json.content.body, 'bad');
      assert.deepEqual(await ok(admin, 'DELETE', `/_synapse/admin/v1/event_reports/${oldest.id}`), {});
      await refused(await call(admin, 'GET', `/_synapse/admin/v1/event_reports/${oldest.id}`), 404, 'M_NOT_FOUND');
      await refused(await call(admin, 'DELETE', `/_synapse/admin/v1/event_reports/${oldest.id}`), 404, 'M_NOT_FOUND');
      await refused(await call(admin, 'GET', '/_synapse/admin/v1/event_reports/abc'), 400, 'M_INVALID_PARAM');
      for (const q of ['dir=x', 'from=-1', 'limit=z']) await refused(await call(admin, 'GET', `/_synapse/admin/v1/event_reports?${q}`), 400, 'M_INVALID_PARAM');
    });

    test('background updates: nothing runs; the enabled flag is echoed', async () => {
      for (const prefix of PREFIXES) {
        assert.deepEqual(await ok(admin, 'GET', `${prefix}/v1/background_updates/status`), { enabled: true, current_updates: {} });
      }
      assert.deepEqual(await ok(admin, 'POST', '/_synapse/admin/v1/background_updates/enabled', { enabled: false }), { enabled: false });
      assert.deepEqual(await ok(admin, 'POST', '/_synapse/admin/v1/background_updates/enabled', { enabled: true }), { enabled: true });
      await refused(await call(admin, 'POST', '/_synapse/admin/v1/background_updates/enabled', { enabled: 'yes' }), 400, 'M_BAD_JSON');
    });
  });
}
