import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import type { ClientEvent } from '../../src/rooms/client-event.js';
import { storageBackends } from '../support/databases.js';
import { rejectsWith, SERVER, user, useRoomsHarness } from './helpers.js';

const alice = user('alice');
const bob = user('bob');
const carol = user('carol');

for (const backend of await storageBackends()) {
  describe(`createRoom on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useRoomsHarness(backend);
    before(() => {
      h.profiles.set(alice.userId, { displayname: 'Alice', avatar_url: 'mxc://hs.test/a' });
      h.profiles.set(bob.userId, { displayname: 'Bob' });
    });

    /** The room's events in order, as the creator sees them. */
    async function timeline(roomId: string): Promise<ClientEvent[]> {
      const page = await h.rooms.messages(alice, roomId, { dir: 'f', limit: 100 });
      return page.chunk;
    }
    const typeAndKey = (e: ClientEvent) => (e.state_key === undefined ? e.type : `${e.type}/${e.state_key}`);

    test('emits the spec sequence: create, join, power levels, alias, preset events, initial state, name, topic, invites', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'private_chat',
        roomAliasName: 'sequence',
        name: 'The Room',
        topic: 'All about it',
        invite: [bob.userId],
        initialState: [
          { type: 'm.room.encryption', stateKey: '', content: { algorithm: 'm.megolm.v1.aes-sha2' } },
          { type: 'x.custom', stateKey: 'k', content: { v: 1 } },
        ],
        isDirect: true,
      });
      assert.match(roomId, new RegExp(`^![A-Za-z]{18}:${SERVER}$`));
      const events = await timeline(roomId);
      assert.deepEqual(events.map(typeAndKey), [
        'm.room.create/',
        `m.room.member/${alice.userId}`,
        'm.room.power_levels/',
        'm.room.canonical_alias/',
        'm.room.join_rules/',
        'm.room.history_visibility/',
        'm.room.guest_access/',
        'm.room.encryption/',
        'x.custom/k',
        'm.room.name/',
        'm.room.topic/',
        `m.room.member/${bob.userId}`,
      ]);
      const byType = new Map(events.map((e) => [typeAndKey(e), e]));
      assert.deepEqual(byType.get('m.room.create/')!.content, { room_version: '10', creator: alice.userId });
      assert.deepEqual(byType.get(`m.room.member/${alice.userId}`)!.content, { membership: 'join', displayname: 'Alice', avatar_url: 'mxc://hs.test/a' });
      assert.deepEqual(byType.get('m.room.canonical_alias/')!.content, { alias: `#sequence:${SERVER}` });
      assert.deepEqual(byType.get('m.room.join_rules/')!.content, { join_rule: 'invite' });
      assert.deepEqual(byType.get('m.room.history_visibility/')!.content, { history_visibility: 'shared' });
      assert.deepEqual(byType.get('m.room.guest_access/')!.content, { guest_access: 'can_join' });
      assert.deepEqual(byType.get('m.room.name/')!.content, { name: 'The Room' });
      assert.deepEqual(byType.get('m.room.topic/')!.content, {
        topic: 'All about it',
        'm.topic': { 'm.text': [{ body: 'All about it', mimetype: 'text/plain' }] },
      });
      const invite = byType.get(`m.room.member/${bob.userId}`)!;
      assert.deepEqual(invite.content, { membership: 'invite', displayname: 'Bob', is_direct: true });
      const strippedTypes = (invite.unsigned.invite_room_state as { type: string }[]).map((s) => s.type);
      assert.ok(strippedTypes.includes('m.room.name') && strippedTypes.includes('m.room.join_rules') && strippedTypes.includes('m.room.member'));
      const pl = byType.get('m.room.power_levels/')!.content;
      assert.equal(pl.invite, 0);
      assert.deepEqual(pl.users, { [alice.userId]: 100 });
      assert.equal(pl.state_default, 50);
      assert.equal((pl.events as Record<string, number>)['m.room.power_levels'], 100);
      // The alias resolves to the room.
      assert.equal((await h.rooms.resolveAlias(`#sequence:${SERVER}`)).room_id, roomId);
    });

    test('public_chat: public join rule, shared history, no guest access event, invite level 50', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const events = await timeline(roomId);
      assert.deepEqual(events.map((e) => e.type), ['m.room.create', 'm.room.member', 'm.room.power_levels', 'm.room.join_rules', 'm.room.history_visibility']);
      assert.equal(events[3]!.content.join_rule, 'public');
      assert.equal(events[2]!.content.invite, 50);
      await h.rooms.join(bob, roomId);
    });

    test('visibility alone picks the preset: public → public_chat, otherwise private_chat', async () => {
      const pub = await h.rooms.createRoom(alice, { visibility: 'public' });
      const priv = await h.rooms.createRoom(alice, {});
      const rule = async (roomId: string) => (await h.rooms.stateEvent(alice, roomId, 'm.room.join_rules', '')) as { join_rule: string };
      assert.equal((await rule(pub.roomId)).join_rule, 'public');
      assert.equal((await rule(priv.roomId)).join_rule, 'invite');
      assert.equal(await h.rooms.directoryVisibility(pub.roomId), 'public');
      assert.equal(await h.rooms.directoryVisibility(priv.roomId), 'private');
    });

    test('trusted_private_chat gives invitees the creator\'s level', async () => {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'trusted_private_chat', invite: [bob.userId, carol.userId] });
      const pl = (await h.rooms.stateEvent(alice, roomId, 'm.room.power_levels', '')) as { users: Record<string, number> };
      assert.deepEqual(pl.users, { [alice.userId]: 100, [bob.userId]: 100, [carol.userId]: 100 });
      await h.rooms.join(bob, roomId);
      // Bob may edit the power levels as the creator could (but not lower a peer).
      await h.rooms.sendState(bob, roomId, 'm.room.power_levels', '', { users: { [alice.userId]: 100, [bob.userId]: 100, [carol.userId]: 100 }, kick: 60 });
      await rejectsWith(h.rooms.sendState(bob, roomId, 'm.room.power_levels', '', { users: { [alice.userId]: 100, [bob.userId]: 100 } }), 403, 'M_FORBIDDEN');
    });

    test('power_level_content_override applies on top; initial_state power levels replace the defaults', async () => {
      const a = await h.rooms.createRoom(alice, { powerLevelContentOverride: { events_default: 20, users: { [alice.userId]: 100, [bob.userId]: 20 } } });
      const plA = (await h.rooms.stateEvent(alice, a.roomId, 'm.room.power_levels', '')) as Record<string, unknown>;
      assert.equal(plA.events_default, 20);
      assert.equal(plA.state_default, 50);
      assert.deepEqual(plA.users, { [alice.userId]: 100, [bob.userId]: 20 });
      const b = await h.rooms.createRoom(alice, { initialState: [{ type: 'm.room.power_levels', stateKey: '', content: { users: { [alice.userId]: 100 }, kick: 77 } }] });
      assert.deepEqual(await h.rooms.stateEvent(alice, b.roomId, 'm.room.power_levels', ''), { users: { [alice.userId]: 100 }, kick: 77 });
      const types = (await timeline(b.roomId)).map((e) => e.type);
      assert.equal(types.filter((t) => t === 'm.room.power_levels').length, 1);
      assert.equal(types.indexOf('m.room.power_levels'), 2);
    });

    test('initial_state overrides preset events; name and topic come after it', async () => {
      const { roomId } = await h.rooms.createRoom(alice, {
        preset: 'private_chat',
        name: 'From name',
        initialState: [
          { type: 'm.room.join_rules', stateKey: '', content: { join_rule: 'public' } },
          { type: 'm.room.name', stateKey: '', content: { name: 'From initial state' } },
        ],
      });
      const types = (await timeline(roomId)).map((e) => e.type);
      assert.equal(types.filter((t) => t === 'm.room.join_rules').length, 1);
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.join_rules', ''), { join_rule: 'public' });
      assert.deepEqual(await h.rooms.stateEvent(alice, roomId, 'm.room.name', ''), { name: 'From name' });
    });

    test('creation_content is kept; creator and room_version are the server\'s; v11 has no creator', async () => {
      const a = await h.rooms.createRoom(alice, { creationContent: { 'm.federate': false, creator: '@mallory:hs.test', room_version: '1', type: 'm.space' } });
      assert.deepEqual(await h.rooms.stateEvent(alice, a.roomId, 'm.room.create', ''), { 'm.federate': false, creator: alice.userId, room_version: '10', type: 'm.space' });
      const b = await h.rooms.createRoom(alice, { roomVersion: '11' });
      assert.deepEqual(await h.rooms.stateEvent(alice, b.roomId, 'm.room.create', ''), { room_version: '11' });
      const row = await h.rooms.reader.roomRow(a.roomId);
      assert.equal(row?.room_type, 'm.space');
    });

    test('errors: unsupported version, alias in use or malformed, bad invitee, disallowed initial state', async () => {
      const eventsBefore = Number((await h.database.db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      await rejectsWith(h.rooms.createRoom(alice, { roomVersion: '99' }), 400, 'M_UNSUPPORTED_ROOM_VERSION');
      await h.rooms.createRoom(alice, { roomAliasName: 'taken' });
      const eventsAfterOne = Number((await h.database.db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      await rejectsWith(h.rooms.createRoom(bob, { roomAliasName: 'taken' }), 400, 'M_ROOM_IN_USE');
      await rejectsWith(h.rooms.createRoom(bob, { roomAliasName: 'has:colon' }), 400, 'M_INVALID_PARAM');
      await rejectsWith(h.rooms.createRoom(bob, { roomAliasName: 'has space' }), 400, 'M_INVALID_PARAM');
      await rejectsWith(h.rooms.createRoom(bob, { invite: ['not-a-user'] }), 400, 'M_INVALID_PARAM');
      // Power levels that take the creator's power away make the name event impossible.
      await rejectsWith(
        h.rooms.createRoom(bob, { name: 'x', initialState: [{ type: 'm.room.power_levels', stateKey: '', content: { users: {}, state_default: 50 } }] }),
        400,
        'M_INVALID_ROOM_STATE',
      );
      const eventsNow = Number((await h.database.db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
      assert.ok(eventsAfterOne > eventsBefore);
      assert.equal(eventsNow, eventsAfterOne, 'failed creations store nothing');
    });

    test('concurrent creations with one alias: exactly one wins', async () => {
      const results = await Promise.allSettled([
        h.rooms.createRoom(alice, { roomAliasName: 'race' }),
        h.rooms.createRoom(bob, { roomAliasName: 'race' }),
      ]);
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      assert.equal((failed.reason as HearthError).errcode, 'M_ROOM_IN_USE');
    });
  });
}
