import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Actor } from '../../src/rooms/service.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, roomsHarness, SERVER, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');
const carol = user('carol');
const admin: Actor = { ...user('root'), isAdmin: true };

for (const backend of await storageBackends()) {
  describe(`aliases and the room directory on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);

    test('aliases: members create them, anyone resolves them, duplicates are 409', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.createAlias(alice, `#first:${SERVER}`, roomId);
      assert.deepEqual(await h.rooms.resolveAlias(`#first:${SERVER}`), { room_id: roomId, servers: [SERVER] });
      await rejectsWith(h.rooms.createAlias(alice, `#first:${SERVER}`, roomId), 409, 'M_UNKNOWN');
      await rejectsWith(h.rooms.createAlias(bob, `#bobs:${SERVER}`, roomId), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.createAlias(alice, '#remote:elsewhere.org', roomId), 400, 'M_INVALID_PARAM');
      await rejectsWith(h.rooms.createAlias(alice, 'no-hash', roomId), 400, 'M_INVALID_PARAM');
      await rejectsWith(h.rooms.createAlias(alice, `#ghost:${SERVER}`, `!ghost:${SERVER}`), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.resolveAlias(`#none:${SERVER}`), 404, 'M_NOT_FOUND');
      await h.rooms.join(bob, roomId);
      await h.rooms.createAlias(bob, `#bobs:${SERVER}`, roomId);
      assert.deepEqual(await h.rooms.roomAliases(alice, roomId), [`#bobs:${SERVER}`, `#first:${SERVER}`]);
      await rejectsWith(h.rooms.roomAliases(carol, roomId), 403, 'M_FORBIDDEN');
    });

    test('deleting an alias: its creator, a room moderator or an admin; the canonical alias follows', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', roomAliasName: 'canon' });
      await h.rooms.join(bob, roomId);
      await h.rooms.join(carol, roomId);
      await h.rooms.createAlias(bob, `#bob-made:${SERVER}`, roomId);
      await h.rooms.createAlias(carol, `#carol-made:${SERVER}`, roomId);
      await h.rooms.sendState(alice, roomId, 'm.room.canonical_alias', '', { alias: `#canon:${SERVER}`, alt_aliases: [`#bob-made:${SERVER}`] });
      // Carol neither made #bob-made nor may change the canonical alias.
      await rejectsWith(h.rooms.deleteAlias(carol, `#bob-made:${SERVER}`), 403, 'M_FORBIDDEN');
      await h.rooms.deleteAlias(bob, `#bob-made:${SERVER}`);
      await h.rooms.deleteAlias(alice, `#carol-made:${SERVER}`);
      await h.rooms.deleteAlias(admin, `#canon:${SERVER}`);
      await rejectsWith(h.rooms.resolveAlias(`#canon:${SERVER}`), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.deleteAlias(alice, `#canon:${SERVER}`), 404, 'M_NOT_FOUND');
      // Neither bob (no power) nor the admin (not in the room) could edit the canonical alias event,
      // so it still names the deleted aliases.
      const canonical = (await h.rooms.stateEvent(alice, roomId, 'm.room.canonical_alias', '')) as { alias?: string; alt_aliases?: string[] };
      assert.equal(canonical.alias, `#canon:${SERVER}`);
      assert.deepEqual(canonical.alt_aliases, [`#bob-made:${SERVER}`]);
      await h.rooms.createAlias(alice, `#again:${SERVER}`, roomId);
      await h.rooms.sendState(alice, roomId, 'm.room.canonical_alias', '', { alias: `#again:${SERVER}` });
      await h.rooms.deleteAlias(alice, `#again:${SERVER}`);
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.canonical_alias', ''), {});
    });

    test('a canonical alias event must name aliases that point to the room', async () => {
      const a = await h.rooms.createRoom(alice, { roomAliasName: 'room-a' });
      const b = await h.rooms.createRoom(alice, {});
      await rejectsWith(h.rooms.sendState(alice, b.roomId, 'm.room.canonical_alias', '', { alias: `#room-a:${SERVER}` }), 400, 'M_BAD_ALIAS');
      await rejectsWith(h.rooms.sendState(alice, b.roomId, 'm.room.canonical_alias', '', { alt_aliases: [`#missing:${SERVER}`] }), 400, 'M_BAD_ALIAS');
      await rejectsWith(h.rooms.sendState(alice, b.roomId, 'm.room.canonical_alias', '', { alias: 'not-an-alias' }), 400, 'M_INVALID_PARAM');
      await h.rooms.sendState(alice, a.roomId, 'm.room.canonical_alias', '', { alias: `#room-a:${SERVER}`, alt_aliases: ['#far:elsewhere.org'] });
    });

    test('directory visibility: read by anyone, set by those who may change the canonical alias', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.join(bob, roomId);
      assert.equal(await h.rooms.directoryVisibility(roomId), 'private');
      await rejectsWith(h.rooms.setDirectoryVisibility(bob, roomId, 'public'), 403, 'M_FORBIDDEN');
      await h.rooms.setDirectoryVisibility(alice, roomId, 'public');
      assert.equal(await h.rooms.directoryVisibility(roomId), 'public');
      await h.rooms.setDirectoryVisibility(admin, roomId, 'private');
      assert.equal(await h.rooms.directoryVisibility(roomId), 'private');
      await rejectsWith(h.rooms.directoryVisibility(`!none:${SERVER}`), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.setDirectoryVisibility(alice, `!none:${SERVER}`, 'public'), 404, 'M_NOT_FOUND');
    });

    test('/publicRooms: published rooms with their summary, search, and pagination without gaps', async () => {
      const db2 = await backend.create();
      const fresh = await roomsHarness(db2);
      try {
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) {
          const { roomId } = await fresh.rooms.createRoom(alice, {
            visibility: 'public',
            name: i === 3 ? 'Gardening Club' : `Room ${i}`,
            topic: i === 5 ? 'all about GARDENS' : 'misc',
            ...(i === 0 ? { roomAliasName: 'zero' } : {}),
          });
          ids.push(roomId);
          for (let j = 0; j < i % 3; j++) await fresh.rooms.join(user(`member${i}_${j}`), roomId);
        }
        await fresh.rooms.createRoom(alice, { name: 'Unlisted' });
        const all = await fresh.rooms.publicRooms({});
        assert.equal(all.total_room_count_estimate, 7);
        assert.equal(all.chunk.length, 7);
        assert.ok(all.chunk.every((r) => r.name !== 'Unlisted'));
        // Most joined first.
        const counts = all.chunk.map((r) => r.num_joined_members);
        assert.deepEqual(counts, [...counts].sort((a, b) => b - a));
        const zero = all.chunk.find((r) => r.room_id === ids[0])!;
        assert.equal(zero.canonical_alias, `#zero:${SERVER}`);
        assert.equal(zero.join_rule, 'public');
        assert.equal(zero.world_readable, false);
        assert.equal(zero.guest_can_join, false);
        const search = await fresh.rooms.publicRooms({ searchTerm: 'garden' });
        assert.deepEqual(search.chunk.map((r) => r.room_id).sort(), [ids[3], ids[5]].sort());
        // Pages of 3.
        const seen: string[] = [];
        let since: string | undefined;
        for (let guard = 0; guard < 10; guard++) {
          const page = await fresh.rooms.publicRooms({ limit: 3, ...(since !== undefined ? { since } : {}) });
          seen.push(...page.chunk.map((r) => r.room_id));
          if (since !== undefined) assert.ok(page.prev_batch !== undefined);
          if (page.next_batch === undefined) break;
          since = page.next_batch;
        }
        assert.deepEqual(seen, all.chunk.map((r) => r.room_id));
        await rejectsWith(fresh.rooms.publicRooms({ since: 'bogus' }), 400, 'M_INVALID_PARAM');
        await rejectsWith(fresh.rooms.publicRooms({ server: 'elsewhere.org' }), 404, 'M_NOT_FOUND');
        assert.equal((await fresh.rooms.publicRooms({ server: SERVER })).chunk.length, 7);
      } finally {
        await fresh.close();
        await db2.drop();
      }
    });
  });
}
