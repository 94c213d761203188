// POST /rooms/{roomId}/upgrade over HTTP on SQLite and PostgreSQL: the request's checks, and an
// upgrade carrying state, bans, aliases, the directory listing and members' tags and direct chats,
// with the old room tombstoned and restricted.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

const V3 = '/_matrix/client/v3';

for (const { backend, skip } of await serverBackends()) {
  describe(`room upgrades on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);
    const upgrade = (who: Client, target: string, body: unknown) => who.call('POST', `/rooms/${enc(target)}/upgrade`, body);
    const state = (who: Client, roomId: string, type: string, key = '') => who.ok('GET', `/rooms/${enc(roomId)}/state/${enc(type)}/${enc(key)}`);

    describe('what is refused', () => {
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

      test('an unknown room is 404; a room the user is not in, or may not upgrade, 403; nothing is sent', async () => {
        const unknown = await upgrade(alice, '!nowhere:localhost', { new_version: '10' });
        assert.deepEqual([unknown.status, unknown.body.errcode], [404, 'M_NOT_FOUND']);
        const stranger = await upgrade(outsider, roomId, { new_version: '10' });
        assert.deepEqual([stranger.status, stranger.body.errcode], [403, 'M_FORBIDDEN']);
        // bob is a member with the default power level 0; a tombstone needs 100.
        const member = await upgrade(bob, roomId, { new_version: '10' });
        assert.deepEqual([member.status, member.body.errcode], [403, 'M_FORBIDDEN']);
        const tombstone = await alice.call('GET', `/rooms/${enc(roomId)}/state/m.room.tombstone`);
        assert.equal(tombstone.status, 404);
        const joined = (await alice.ok('GET', '/joined_rooms')).joined_rooms;
        assert.deepEqual(joined, [roomId]);
      });

      test('without a token: 401', async () => {
        const r = await request(hs.baseUrl, 'POST', `${V3}/rooms/${enc(roomId)}/upgrade`, { new_version: '10' });
        assert.deepEqual([r.status, r.body.errcode], [401, 'M_MISSING_TOKEN']);
      });
    });

    describe('an upgrade', () => {
      let alice: Client;
      let bob: Client;
      let carol: Client;
      let oldRoom: string;
      let newRoom: string;
      let alias: string;
      let lastOld: string;
      let emote: string;
      const copied: Record<string, Record<string, unknown>> = {};

      before(async () => {
        alice = await user('alice');
        bob = await user('bob');
        carol = await user('carol');
        const aliasName = `upgraded-${backend}`;
        alias = `#${aliasName}:localhost`;
        const upload = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload`, {
          method: 'POST',
          headers: { authorization: `Bearer ${alice.user.accessToken}`, 'content-type': 'image/png' },
          body: Buffer.from('89504e470d0a1a0a', 'hex'),
        });
        assert.equal(upload.status, 200);
        emote = ((await upload.json()) as { content_uri: string }).content_uri;
        Object.assign(copied, {
          'm.room.name': { name: 'Old room' },
          'm.room.topic': { topic: 'Before the upgrade' },
          'm.room.avatar': { url: emote },
          'm.room.guest_access': { guest_access: 'forbidden' },
          'm.room.history_visibility': { history_visibility: 'joined' },
          'm.room.encryption': { algorithm: 'm.megolm.v1.aes-sha2' },
          'm.room.server_acl': { allow: ['*'], deny: ['bad.example'], allow_ip_literals: false },
        });
        oldRoom = await alice.createRoom({
          preset: 'public_chat',
          visibility: 'public',
          room_version: '9',
          room_alias_name: aliasName,
          initial_state: Object.entries(copied).map(([type, content]) => ({ type, state_key: '', content })),
          // A level as a string (allowed before v10) and one above alice's own.
          power_level_content_override: { ban: '60', events: { 'org.example.high': 150, 'm.room.tombstone': 100 } },
        });
        await bob.join(oldRoom);
        await carol.join(oldRoom);
        await alice.ok('POST', `/rooms/${enc(oldRoom)}/ban`, { user_id: carol.userId, reason: 'spam' });
        const child = '!child:elsewhere.example';
        await alice.ok('PUT', `/rooms/${enc(oldRoom)}/state/m.space.child/${enc(child)}`, { via: ['elsewhere.example'], suggested: true });
        await alice.ok('PUT', `/rooms/${enc(oldRoom)}/state/m.space.child/${enc('!gone:elsewhere.example')}`, {});
        await alice.ok('PUT', `/rooms/${enc(oldRoom)}/state/m.space.parent/${enc('!space:elsewhere.example')}`, { via: ['elsewhere.example'] });
        await alice.ok('PUT', `/rooms/${enc(oldRoom)}/state/im.ponies.room_emotes/pack`, { images: { wave: { url: emote } }, pack: { display_name: 'Pack' } });
        const pinned = await bob.text(oldRoom, 'pin me');
        await alice.ok('PUT', `/rooms/${enc(oldRoom)}/state/m.room.pinned_events/`, { pinned: [pinned] });
        await alice.ok('PUT', `/rooms/${enc(oldRoom)}/state/org.example.custom/`, { stays: true });
        await alice.ok('PUT', `/user/${enc(alice.userId)}/rooms/${enc(oldRoom)}/tags/m.favourite`, { order: 0.5 });
        await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/m.direct`, { [bob.userId]: [oldRoom, '!other:localhost'] });
        await bob.ok('PUT', `/user/${enc(bob.userId)}/rooms/${enc(oldRoom)}/tags/u.work`, {});
        lastOld = await bob.text(oldRoom, 'last words');

        const r = await upgrade(alice, oldRoom, { new_version: '10' });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        newRoom = r.body.replacement_room;
        assert.match(newRoom, /^!.+:localhost$/);
        assert.notEqual(newRoom, oldRoom);
      });

      test("the new room's create event names its predecessor", async () => {
        const create = await state(alice, newRoom, 'm.room.create');
        assert.equal(create.room_version, '10');
        assert.deepEqual(create.predecessor, { room_id: oldRoom, event_id: lastOld });
        assert.equal(create.type, undefined);
      });

      test('transferable state is copied; the rest is not', async () => {
        for (const [type, content] of Object.entries(copied)) assert.deepEqual(await state(alice, newRoom, type), content, type);
        assert.deepEqual(await state(alice, newRoom, 'm.room.join_rules'), { join_rule: 'public' });
        assert.deepEqual(await state(alice, newRoom, 'm.space.child', '!child:elsewhere.example'), { via: ['elsewhere.example'], suggested: true });
        assert.deepEqual(await state(alice, newRoom, 'm.space.parent', '!space:elsewhere.example'), { via: ['elsewhere.example'] });
        assert.deepEqual(await state(alice, newRoom, 'im.ponies.room_emotes', 'pack'), { images: { wave: { url: emote } }, pack: { display_name: 'Pack' } });
        assert.equal((await state(alice, newRoom, 'm.room.pinned_events')).pinned.length, 1);
        const gone = await alice.call('GET', `/rooms/${enc(newRoom)}/state/m.space.child/${enc('!gone:elsewhere.example')}`);
        assert.equal(gone.status, 404, 'a removed space child is left behind');
        const custom = await alice.call('GET', `/rooms/${enc(newRoom)}/state/org.example.custom/`);
        assert.equal(custom.status, 404);
        // The emote's image is served from the media repository under the copied mxc URI.
        const mxc = emote.slice('mxc://'.length);
        const media = await fetch(`${hs.baseUrl}/_matrix/client/v1/media/download/${mxc}`, { headers: { authorization: `Bearer ${bob.user.accessToken}` } });
        assert.equal(media.status, 200);
        assert.deepEqual(Buffer.from(await media.arrayBuffer()), Buffer.from('89504e470d0a1a0a', 'hex'));
      });

      test('power levels are copied as integers, with the upgrading user back at their own level', async () => {
        const levels = await state(alice, newRoom, 'm.room.power_levels');
        assert.equal(levels.ban, 60);
        assert.equal(levels.users[alice.userId], 100);
        assert.equal(levels.events['org.example.high'], 150);
        // alice's level was raised to 150 while the state was copied, then put back.
        const timeline = (await alice.ok('GET', `/rooms/${enc(newRoom)}/messages?dir=f&limit=50`)).chunk as any[];
        const plEvents = timeline.filter((e) => e.type === 'm.room.power_levels');
        assert.deepEqual(plEvents.map((e) => e.content.users[alice.userId]), [150, 100]);
      });

      test('bans are copied; members are not', async () => {
        const ban = await state(alice, newRoom, 'm.room.member', carol.userId);
        assert.deepEqual([ban.membership, ban.reason], ['ban', 'spam']);
        const joined = await alice.ok('GET', `/rooms/${enc(newRoom)}/joined_members`);
        assert.deepEqual(Object.keys(joined.joined), [alice.userId]);
        const refused = await carol.call('POST', `/join/${enc(newRoom)}`, {});
        assert.equal(refused.status, 403);
      });

      test('the alias, the canonical alias and the directory listing move to the new room', async () => {
        const resolved = await alice.ok('GET', `/directory/room/${enc(alias)}`);
        assert.equal(resolved.room_id, newRoom);
        assert.deepEqual((await alice.ok('GET', `/rooms/${enc(newRoom)}/aliases`)).aliases, [alias]);
        assert.deepEqual(await state(alice, newRoom, 'm.room.canonical_alias'), { alias });
        assert.deepEqual(await state(alice, oldRoom, 'm.room.canonical_alias'), {});
        assert.equal((await alice.ok('GET', `/directory/list/room/${enc(newRoom)}`)).visibility, 'public');
        assert.equal((await alice.ok('GET', `/directory/list/room/${enc(oldRoom)}`)).visibility, 'private');
      });

      test('the old room is tombstoned and members without power can no longer talk in it', async () => {
        assert.deepEqual(await state(bob, oldRoom, 'm.room.tombstone'), { body: 'This room has been replaced', replacement_room: newRoom });
        const levels = await state(bob, oldRoom, 'm.room.power_levels');
        assert.deepEqual([levels.events_default, levels.invite], [50, 50]);
        const refused = await bob.call('PUT', `/rooms/${enc(oldRoom)}/send/m.room.message/late`, { msgtype: 'm.text', body: 'too late' });
        assert.deepEqual([refused.status, refused.body.errcode], [403, 'M_FORBIDDEN']);
      });

      test("the upgrading user's tags and direct chats follow at once, another member's when they join", async () => {
        assert.deepEqual((await alice.ok('GET', `/user/${enc(alice.userId)}/rooms/${enc(newRoom)}/tags`)).tags, { 'm.favourite': { order: 0.5 } });
        const direct = await alice.ok('GET', `/user/${enc(alice.userId)}/account_data/m.direct`);
        assert.deepEqual(direct, { [bob.userId]: [oldRoom, '!other:localhost', newRoom] });
        assert.deepEqual((await bob.ok('GET', `/user/${enc(bob.userId)}/rooms/${enc(newRoom)}/tags`)).tags, {});
        await bob.join(newRoom);
        assert.deepEqual((await bob.ok('GET', `/user/${enc(bob.userId)}/rooms/${enc(newRoom)}/tags`)).tags, { 'u.work': {} });
      });

      test("the new room is in the upgrading user's sync", async () => {
        const sync = await alice.sync({ timeout: 0 });
        assert.ok(sync.rooms.join[newRoom], 'the new room is joined');
        const tombstone = sync.rooms.join[oldRoom].timeline.events.find((e: any) => e.type === 'm.room.tombstone');
        assert.equal(tombstone?.content.replacement_room, newRoom);
      });

      test('a space keeps its type; a v11 room has no creator field; the same request twice at once gets one answer', async () => {
        const space = await alice.createRoom({ creation_content: { type: 'm.space' } });
        const [a, b] = await Promise.all([upgrade(alice, space, { new_version: '11' }), upgrade(alice, space, { new_version: '11' })]);
        assert.equal(a.status, 200, JSON.stringify(a.body));
        assert.deepEqual(b.body, a.body);
        const create = await state(alice, a.body.replacement_room, 'm.room.create');
        assert.deepEqual([create.type, create.room_version, create.creator], ['m.space', '11', undefined]);
      });
    });
  });
}
