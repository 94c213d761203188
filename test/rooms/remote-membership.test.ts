// The resident server's side of joins and leaves over federation: make_join / send_join and
// make_leave / send_leave through a real room service, with a fake remote server signing the
// templates it is given. A join is answered with the state before it and a complete auth chain,
// and counts once; refusals come from the auth rules, the origin, the room version and the
// signatures.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { referenceIds, type Pdu } from '../../src/protocol/events.js';
import { computeEventId } from '../../src/protocol/hashes.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import type { SendJoinResponse } from '../../src/rooms/service.js';
import { storageBackends } from '../support/databases.js';
import { RemoteServer, tamper } from '../support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../support/remote-ports.js';
import { rejectsWith, useRoomsHarness, user } from './helpers.js';

const REMOTE = 'remote.test';
const VERSION = getRoomVersion('10')!;

for (const backend of await storageBackends()) {
  describe(`joins and leaves over federation on ${backend.name}`, { skip: backend.skip }, () => {
    const remote = new RemoteServer({ serverName: REMOTE });
    const h = useRoomsHarness(backend, { defaultRoomVersion: '10', keyRing: keyRingOf(remote), remoteEvents: remoteEventsOf(remote) });
    const alice = user('alice');
    let n = 0;
    /** A fresh remote user per test, so that rooms and memberships do not mix. */
    const remoteUser = () => `@user${++n}:${REMOTE}`;

    async function publicRoom(): Promise<string> {
      const { roomId } = await h.rooms.createRoom(alice, { preset: 'public_chat', name: 'A room', topic: 'of alice' });
      await h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body: 'before anyone came' });
      return roomId;
    }

    /** The template filled in and signed by the remote, as a joining server does. */
    function sign(template: JsonObject, content: JsonObject = {}): { eventId: string; pdu: Pdu } {
      const filled = { ...template, content: { ...(template['content'] as JsonObject), ...content } };
      return remote.forge(filled as unknown as Pdu, VERSION);
    }

    async function extremities(roomId: string): Promise<string[]> {
      const rows = await h.database.db
        .selectFrom('forward_extremities as f')
        .innerJoin('rooms as r', 'r.room_nid', 'f.room_nid')
        .innerJoin('events as e', 'e.event_nid', 'f.event_nid')
        .select('e.event_id')
        .where('r.room_id', '=', roomId)
        .execute();
      return rows.map((r) => r.event_id).sort();
    }

    async function join(roomId: string, userId: string): Promise<{ eventId: string; pdu: Pdu; answer: SendJoinResponse }> {
      const { event } = await h.rooms.makeMembershipForServer(REMOTE, roomId, userId, 'join', ['9', '10']);
      const signed = sign(event, { displayname: 'Remote user' });
      const answer = await h.rooms.sendMembershipForServer(REMOTE, roomId, signed.eventId, signed.pdu, 'join');
      return { ...signed, answer };
    }

    const idOf = (pdu: Pdu) => computeEventId(pdu, VERSION);

    test('make_join gives an unsigned template built on the room head, as a local event would be', async () => {
      const roomId = await publicRoom();
      const bob = remoteUser();
      const tips = await extremities(roomId);
      const { room_version, event } = await h.rooms.makeMembershipForServer(REMOTE, roomId, bob, 'join', ['10']);
      assert.equal(room_version, '10');
      assert.equal(event['room_id'], roomId);
      assert.equal(event['type'], 'm.room.member');
      assert.equal(event['sender'], bob);
      assert.equal(event['state_key'], bob);
      assert.deepEqual(event['content'], { membership: 'join' });
      assert.deepEqual([...(event['prev_events'] as string[])].sort(), tips);
      const tip = await h.rooms.reader.event(tips[0]!);
      assert.equal(event['depth'], tip!.pdu.depth + 1);
      assert.equal(typeof event['origin_server_ts'], 'number');
      assert.equal(event['hashes'], undefined);
      assert.equal(event['signatures'], undefined);
      // Auth events: create, power levels and join rules (bob has no member event yet).
      const state = await h.rooms.state(alice, roomId);
      const current = (type: string) => state.find((e) => e['type'] === type && e['state_key'] === '')!['event_id'];
      assert.deepEqual(
        [...(event['auth_events'] as string[])].sort(),
        [current('m.room.create'), current('m.room.power_levels'), current('m.room.join_rules')].sort(),
      );
      // The template leaves the room as it was.
      assert.deepEqual(await extremities(roomId), tips);
    });

    test('send_join: the state before the join and a complete auth chain; the user is then joined', async () => {
      const roomId = await publicRoom();
      const bob = remoteUser();
      const before = await h.rooms.state(alice, roomId);
      const { eventId, answer } = await join(roomId, bob);

      // The state is the room's state before the join, exactly.
      const stateIds = answer.state.map(idOf).sort();
      assert.deepEqual(stateIds, before.map((e) => e['event_id'] as string).sort());
      assert.ok(!stateIds.includes(eventId));
      // The auth chain: everything the state's and the join's auth events reach, nothing else.
      const byId = new Map([...answer.state, ...answer.auth_chain].map((p) => [idOf(p), p]));
      const joinPdu = answer.event!;
      assert.equal(idOf(joinPdu), eventId);
      const reached = new Set<string>();
      const stack = [...answer.state, joinPdu].flatMap((p) => referenceIds(p.auth_events));
      while (stack.length > 0) {
        const id = stack.pop()!;
        if (reached.has(id)) continue;
        reached.add(id);
        const p = byId.get(id);
        assert.ok(p !== undefined, `auth event ${id} is in neither state nor auth_chain`);
        stack.push(...referenceIds(p.auth_events));
      }
      assert.deepEqual(answer.auth_chain.map(idOf).sort(), [...reached].sort());
      // Served as to other servers: no unsigned data.
      for (const p of [...answer.state, ...answer.auth_chain]) assert.equal(p.unsigned, undefined);
      assert.equal(answer.members_omitted, false);
      assert.deepEqual(answer.servers_in_room, ['hs.test']);

      // Bob is joined, with the content his server filled in.
      const members = await h.rooms.joinedMembers(alice, roomId);
      assert.deepEqual(Object.keys(members).sort(), [alice.userId, bob].sort());
      assert.equal(members[bob]!.display_name, 'Remote user');
      assert.deepEqual(await extremities(roomId), [eventId]);
    });

    test('send_join again: the same answer, the join stored once', async () => {
      const roomId = await publicRoom();
      const bob = remoteUser();
      const first = await join(roomId, bob);
      const again = await h.rooms.sendMembershipForServer(REMOTE, roomId, first.eventId, first.pdu, 'join');
      assert.deepEqual(again.state.map(idOf).sort(), first.answer.state.map(idOf).sort());
      assert.deepEqual(again.auth_chain.map(idOf).sort(), first.answer.auth_chain.map(idOf).sort());
      const rows = await h.database.db.selectFrom('events').select('status').where('event_id', '=', first.eventId).execute();
      assert.deepEqual(rows, [{ status: 'timeline' }]);
    });

    test('make_leave / send_leave after a join: the member is gone', async () => {
      const roomId = await publicRoom();
      const bob = remoteUser();
      await join(roomId, bob);
      const { room_version, event } = await h.rooms.makeMembershipForServer(REMOTE, roomId, bob, 'leave', undefined);
      assert.equal(room_version, '10');
      assert.deepEqual(event['content'], { membership: 'leave' });
      const signed = sign(event);
      // A leave sent to send_join is the wrong membership.
      await rejectsWith(h.rooms.sendMembershipForServer(REMOTE, roomId, signed.eventId, signed.pdu, 'join'), 400, 'M_INVALID_PARAM');
      assert.deepEqual(await h.rooms.sendMembershipForServer(REMOTE, roomId, signed.eventId, signed.pdu, 'leave'), {});
      assert.deepEqual(Object.keys(await h.rooms.joinedMembers(alice, roomId)), [alice.userId]);
      // A user never in the room cannot leave it.
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, roomId, remoteUser(), 'leave', undefined), 403, 'M_FORBIDDEN');
    });

    test('make_join is refused by the auth rules: invite-only without invite, banned user', async () => {
      const { roomId: privateRoom } = await h.rooms.createRoom(alice, { preset: 'private_chat' });
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, privateRoom, remoteUser(), 'join', ['10']), 403, 'M_FORBIDDEN', /invite/);

      const roomId = await publicRoom();
      const mallory = remoteUser();
      // A template taken before the ban, signed and sent after it, is refused too.
      const { event } = await h.rooms.makeMembershipForServer(REMOTE, roomId, mallory, 'join', ['10']);
      await h.rooms.ban(alice, roomId, mallory);
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, roomId, mallory, 'join', ['10']), 403, 'M_FORBIDDEN', /banned/);
      const signed = sign(event);
      await rejectsWith(h.rooms.sendMembershipForServer(REMOTE, roomId, signed.eventId, signed.pdu, 'join'), 403, 'M_FORBIDDEN');
      assert.ok(!(mallory in (await h.rooms.joinedMembers(alice, roomId))));
    });

    test('refusals: another server’s user, an unknown room, an unsupported version, a restricted room it cannot vouch for', async () => {
      const roomId = await publicRoom();
      const bob = remoteUser();
      await rejectsWith(h.rooms.makeMembershipForServer('other.test', roomId, bob, 'join', ['10']), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, roomId, 'not-a-user', 'join', ['10']), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, '!nowhere:hs.test', bob, 'join', ['10']), 404, 'M_NOT_FOUND');
      const incompatible = await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, roomId, bob, 'join', ['1', '2']), 400, 'M_INCOMPATIBLE_ROOM_VERSION');
      assert.equal(incompatible.extra['room_version'], '10');
      // Without `ver`, only version 1 is assumed.
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, roomId, bob, 'join', undefined), 400, 'M_INCOMPATIBLE_ROOM_VERSION');

      // send_join of bob's event by another server.
      const { event } = await h.rooms.makeMembershipForServer(REMOTE, roomId, bob, 'join', ['10']);
      const signed = sign(event);
      await rejectsWith(h.rooms.sendMembershipForServer('other.test', roomId, signed.eventId, signed.pdu, 'join'), 403, 'M_FORBIDDEN');

      const { roomId: restricted } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await h.rooms.sendState(alice, restricted, 'm.room.join_rules', '', { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: roomId }] });
      // Not in the allowed room, which this server is in: refused.
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, restricted, bob, 'join', ['10']), 403, 'M_FORBIDDEN', /allows/);
      // Allowed rooms this server is not in: it cannot tell.
      await h.rooms.sendState(alice, restricted, 'm.room.join_rules', '', { join_rule: 'restricted', allow: [{ type: 'm.room_membership', room_id: '!elsewhere:other.test' }] });
      await rejectsWith(h.rooms.makeMembershipForServer(REMOTE, restricted, bob, 'join', ['10']), 400, 'M_UNABLE_TO_AUTHORISE_JOIN');
    });

    test('send_join refuses an event whose id is not the path’s, or whose signature does not hold', async () => {
      const roomId = await publicRoom();
      const bob = remoteUser();
      const { event } = await h.rooms.makeMembershipForServer(REMOTE, roomId, bob, 'join', ['10']);
      const signed = sign(event);
      await rejectsWith(h.rooms.sendMembershipForServer(REMOTE, roomId, '$not-this-one', signed.pdu, 'join'), 400, 'M_BAD_JSON');
      const { roomId: other } = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      await rejectsWith(h.rooms.sendMembershipForServer(REMOTE, other, signed.eventId, signed.pdu, 'join'), 400, 'M_INVALID_PARAM');
      // The signature covers the redacted form, not the id: the id still matches.
      const forged = tamper.signature(signed.pdu, VERSION, REMOTE);
      assert.equal(idOf(forged), signed.eventId);
      await rejectsWith(h.rooms.sendMembershipForServer(REMOTE, roomId, signed.eventId, forged, 'join'), 403, 'M_FORBIDDEN');
      assert.ok(!(bob in (await h.rooms.joinedMembers(alice, roomId))));
      // The genuine one still joins.
      await h.rooms.sendMembershipForServer(REMOTE, roomId, signed.eventId, signed.pdu, 'join');
      assert.ok(bob in (await h.rooms.joinedMembers(alice, roomId)));
    });
  });
}
