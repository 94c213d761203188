// The legacy snapshots, GET /initialSync and GET /rooms/{roomId}/initialSync, over HTTP on SQLite
// and PostgreSQL: each room's latest messages as the user may see them (and pagination on from
// their start), its state (current, or at the user's leave), directory visibility and account data;
// invites with their inviter; archived rooms on request; the answer's end continues as /events.

import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../e2e/support/client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { type Client, clients, enc } from '../sync/sync-client.js';

const bodies = (events: readonly any[]) => events.filter((e) => e.type === 'm.room.message').map((e) => e.content.body as string);
const ids = (events: readonly any[]) => events.map((e) => e.event_id as string).sort();
const roomOf = (snapshot: any, roomId: string) => (snapshot.rooms as any[]).find((r) => r.room_id === roomId);

for (const { backend, skip } of await serverBackends()) {
  describe(`legacy initialSync on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: { client_api: { guests_disabled: false } } });
    const user = clients(hs);

    describe('GET /initialSync', () => {
      let alice: Client;
      let bob: Client;
      let published: string;
      let invitedTo: string;
      let left: string;
      let lastBeforeLeave: string;
      before(async () => {
        alice = await user('alice');
        bob = await user('bob');
        published = await alice.createRoom({ preset: 'public_chat', visibility: 'public', name: 'Published' });
        await bob.join(published);
        for (const body of ['m1', 'm2', 'm3']) await bob.text(published, body);
        await alice.ok('PUT', `/user/${enc(alice.userId)}/rooms/${enc(published)}/tags/u.work`, { order: 1 });
        await alice.ok('PUT', `/user/${enc(alice.userId)}/account_data/org.example.global`, { on: true });
        invitedTo = await bob.createRoom({ preset: 'private_chat', name: 'Secret' });
        await bob.invite(invitedTo, alice.userId);
        left = await bob.createRoom({ preset: 'public_chat' });
        await alice.join(left);
        lastBeforeLeave = await bob.text(left, 'before she left');
        await alice.leave(left);
        await bob.text(left, 'after she left');
      });

      test('a joined room: latest messages, current state, visibility and account data', async () => {
        const snapshot = await alice.ok('GET', '/initialSync?limit=2');
        const room = roomOf(snapshot, published);
        assert.equal(room.membership, 'join');
        assert.equal(room.visibility, 'public');
        assert.deepEqual(bodies(room.messages.chunk), ['m2', 'm3']);
        assert.ok(room.messages.chunk.every((e: any) => e.room_id === published));
        assert.deepEqual(ids(room.state), ids(await alice.ok('GET', `/rooms/${enc(published)}/state`)));
        assert.deepEqual(room.account_data, [{ type: 'm.tag', content: { tags: { 'u.work': { order: 1 } } } }]);
        // Paginating back from the chunk's start goes on where the chunk begins.
        const earlier = await alice.ok('GET', `/rooms/${enc(published)}/messages?dir=b&limit=1&from=${enc(room.messages.start)}`);
        assert.deepEqual(bodies(earlier.chunk), ['m1']);
        assert.deepEqual(snapshot.account_data.find((e: any) => e.type === 'org.example.global'), { type: 'org.example.global', content: { on: true } });
        assert.ok(Array.isArray(snapshot.presence));
        assert.ok(snapshot.receipts.every((r: any) => r.type === 'm.receipt'));
      });

      test('an invite names its inviter and carries the invite event; rooms left are only in the archive', async () => {
        const snapshot = await alice.ok('GET', '/initialSync');
        const invite = roomOf(snapshot, invitedTo);
        assert.equal(invite.membership, 'invite');
        assert.equal(invite.inviter, bob.userId);
        assert.deepEqual([invite.invite.type, invite.invite.state_key, invite.invite.content.membership], ['m.room.member', alice.userId, 'invite']);
        assert.equal(invite.messages, undefined);
        assert.equal(roomOf(snapshot, left), undefined);

        const archived = await alice.ok('GET', '/initialSync?archived=true');
        const room = roomOf(archived, left);
        assert.equal(room.membership, 'leave');
        // Messages up to the leave, and the state as it was then.
        assert.deepEqual(bodies(room.messages.chunk), ['before she left']);
        const own = room.state.find((e: any) => e.type === 'm.room.member' && e.state_key === alice.userId);
        assert.equal(own.content.membership, 'leave');
        assert.ok(room.messages.chunk.some((e: any) => e.event_id === lastBeforeLeave));
      });

      test('limit 0 gives no messages; end continues as a GET /events token', async () => {
        const snapshot = await alice.ok('GET', '/initialSync?limit=0');
        assert.deepEqual(roomOf(snapshot, published).messages.chunk, []);
        const sent = await bob.text(published, 'after the snapshot');
        const stream = await alice.ok('GET', `/events?from=${enc(snapshot.end)}&timeout=0`);
        assert.deepEqual(stream.chunk.filter((e: any) => e.event_id !== undefined).map((e: any) => e.event_id), [sent]);
      });

      test('bad parameters are 400 M_INVALID_PARAM; guests are refused', async () => {
        for (const q of ['archived=maybe', 'limit=-1', 'limit=ten']) {
          const r = await alice.call('GET', `/initialSync?${q}`);
          assert.deepEqual([r.status, r.body.errcode], [400, 'M_INVALID_PARAM'], q);
        }
        const guest = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/register?kind=guest', {});
        const r = await request(hs.baseUrl, 'GET', '/_chat/client/r0/initialSync', undefined, { token: guest.body.access_token });
        assert.deepEqual([r.status, r.body.errcode], [403, 'M_GUEST_ACCESS_FORBIDDEN']);
      });
    });

    test('a user in more rooms than are read at once gets every one, each whole', async () => {
      const many = await user('many');
      const actor = { userId: many.userId, deviceId: many.user.deviceId };
      const created: string[] = [];
      for (let i = 0; i < 55; i++) created.push((await hs.server.services.rooms.createRoom(actor, { name: `room ${i}` })).roomId);
      const snapshot = await many.ok('GET', '/initialSync?limit=1');
      assert.deepEqual(snapshot.rooms.map((r: any) => r.room_id).sort(), [...created].sort());
      for (const room of snapshot.rooms) {
        assert.equal(room.messages.chunk.length, 1);
        assert.equal(room.state.find((e: any) => e.type === 'm.room.name').content.name, `room ${created.indexOf(room.room_id)}`);
      }
    });

    describe('GET /rooms/{roomId}/initialSync', () => {
      test('a member gets the room now; a former member the room as they left it', async () => {
        const alice = await user('alice');
        const bob = await user('bob');
        const roomId = await alice.createRoom({ preset: 'public_chat', name: 'Room' });
        await bob.join(roomId);
        await bob.text(roomId, 'one');
        await bob.text(roomId, 'two');
        await bob.ok('PUT', `/user/${enc(bob.userId)}/rooms/${enc(roomId)}/account_data/org.example.room`, { x: 1 });

        const now = await bob.ok('GET', `/rooms/${enc(roomId)}/initialSync?limit=1`);
        assert.equal(now.room_id, roomId);
        assert.equal(now.membership, 'join');
        assert.equal(now.visibility, 'private');
        assert.deepEqual(bodies(now.messages.chunk), ['two']);
        assert.deepEqual(ids(now.state), ids(await bob.ok('GET', `/rooms/${enc(roomId)}/state`)));
        assert.deepEqual(now.account_data, [{ type: 'org.example.room', content: { x: 1 } }]);
        assert.ok(Array.isArray(now.presence) && Array.isArray(now.receipts));

        await bob.leave(roomId);
        await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.name`, { name: 'Renamed after bob left' });
        await alice.text(roomId, 'three');
        const then = await bob.ok('GET', `/rooms/${enc(roomId)}/initialSync`);
        assert.equal(then.membership, 'leave');
        assert.deepEqual(bodies(then.messages.chunk), ['one', 'two']);
        assert.equal(then.state.find((e: any) => e.type === 'm.room.name').content.name, 'Room');
        assert.deepEqual([then.presence, then.receipts], [[], []]);
      });

      test('anyone may peek into a world-readable room (no membership); others are refused', async () => {
        const carol = await user('carol');
        const dave = await user('dave');
        const open = await carol.createRoom({
          preset: 'public_chat',
          initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'world_readable' } }],
        });
        await carol.text(open, 'for anyone');
        const closed = await carol.createRoom({ preset: 'private_chat' });

        const peek = await dave.ok('GET', `/rooms/${enc(open)}/initialSync`);
        assert.equal('membership' in peek, false);
        assert.deepEqual(bodies(peek.messages.chunk), ['for anyone']);
        const guest = await request(hs.baseUrl, 'POST', '/_matrix/client/v3/register?kind=guest', {});
        const guestPeek = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/rooms/${enc(open)}/initialSync`, undefined, { token: guest.body.access_token });
        assert.equal(guestPeek.status, 200, JSON.stringify(guestPeek.body));

        const refused = await dave.call('GET', `/rooms/${enc(closed)}/initialSync`);
        assert.deepEqual([refused.status, refused.body.errcode], [403, 'M_FORBIDDEN']);
        const unknown = await dave.call('GET', `/rooms/${enc('!nowhere:localhost')}/initialSync`);
        assert.deepEqual([unknown.status, unknown.body.errcode], [404, 'M_NOT_FOUND']);
      });
    });
  });
}
