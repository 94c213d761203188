// /sync over real HTTP against a real server, on SQLite and PostgreSQL: the room sections
// (join, invite, leave), initial and incremental, timelines and their limits, state, summaries,
// history visibility and ignored users.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, timelineOf, typesOf } from './sync-client.js';

/**
 * Invite or knock state: StrippedStateEvents (exactly these four keys, nothing of the full event),
 * then the user's own member event whole, as the reference server serves it: with its id and
 * timestamp (clients date the invite by it), without room_id or the stripped state in unsigned.
 */
function assertStripped(events: any[], userId: string, membership: string): void {
  assert.ok(events.length > 1);
  for (const e of events.slice(0, -1)) assert.deepEqual(Object.keys(e).sort(), ['content', 'sender', 'state_key', 'type'], JSON.stringify(e));
  const own = events.at(-1);
  assert.deepEqual(Object.keys(own).sort(), ['content', 'event_id', 'origin_server_ts', 'sender', 'state_key', 'type', 'unsigned'], JSON.stringify(own));
  assert.equal(own.type, 'm.room.member');
  assert.equal(own.state_key, userId);
  assert.equal(own.content.membership, membership);
  assert.match(own.event_id, /^\$/);
  assert.ok(own.origin_server_ts > Date.now() - 600_000 && own.origin_server_ts <= Date.now(), `a real timestamp: ${own.origin_server_ts}`);
  assert.equal(typeof own.unsigned.age, 'number');
  assert.equal(own.unsigned.invite_room_state, undefined);
  assert.equal(own.unsigned.knock_room_state, undefined);
}

/** Events without their ages, which move between two responses. */
function ageless(events: any[]): any[] {
  return events.map((e) => (e.unsigned === undefined ? e : { ...e, unsigned: { ...e.unsigned, age: undefined } }));
}

for (const { backend, skip } of await serverBackends()) {
  describe(`sync rooms on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('initial sync shows a created room with its timeline, summary and counts', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ invite: [bob.userId] });
      const named = await alice.createRoom({ name: 'Hearth' });
      const s = await alice.sync();
      assert.match(s.next_batch, /^s\d+(_\d+){6}$/);
      const room = s.rooms.join[roomId];
      assert.ok(room, 'the room is in rooms.join');
      const types = typesOf(room.timeline.events);
      assert.equal(types[0], 'm.room.create');
      for (const t of ['m.room.member', 'm.room.power_levels', 'm.room.join_rules', 'm.room.history_visibility']) {
        assert.ok(types.includes(t), `timeline has ${t}: ${types.join(',')}`);
      }
      const invite = room.timeline.events.find((e: any) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.equal(invite.content.membership, 'invite');
      assert.equal(room.timeline.limited, false);
      assert.equal(typeof room.timeline.prev_batch, 'string');
      for (const e of room.timeline.events) {
        assert.equal(e.room_id, undefined, 'events inside a room section carry no room_id');
        assert.match(e.event_id, /^\$/);
        assert.equal(typeof e.origin_server_ts, 'number');
        assert.equal(typeof e.unsigned.age, 'number');
      }
      // Everything is in the timeline, so the state before it is empty.
      assert.deepEqual(room.state.events, []);
      assert.deepEqual(room.summary, { 'm.heroes': [bob.userId], 'm.joined_member_count': 1, 'm.invited_member_count': 1 });
      // A named room needs no heroes.
      assert.deepEqual(s.rooms.join[named].summary, { 'm.joined_member_count': 1, 'm.invited_member_count': 0 });
      assert.ok(typesOf(s.rooms.join[named].timeline.events).includes('m.room.name'));
      assert.deepEqual(room.unread_notifications, { notification_count: 0, highlight_count: 0 });
      assert.deepEqual(room.ephemeral, { events: [] });
      assert.deepEqual(room.account_data, { events: [] });
      assert.deepEqual(s.device_lists, { changed: [], left: [] });
      assert.deepEqual(s.to_device, { events: [] });
      assert.deepEqual(s.rooms.invite, {});
    });

    test('a limited initial timeline has the state at its start, and prev_batch pages back through /messages', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({ name: 'Paging' });
      const sent: string[] = [];
      for (let i = 0; i < 6; i++) sent.push(await alice.text(roomId, `m${i}`));
      const s = await alice.sync({ filter: { room: { timeline: { limit: 3 } } } });
      const room = s.rooms.join[roomId];
      assert.equal(room.timeline.limited, true);
      assert.deepEqual(room.timeline.events.map((e: any) => e.event_id), sent.slice(3));
      const stateTypes = typesOf(room.state.events);
      for (const t of ['m.room.create', 'm.room.member', 'm.room.power_levels', 'm.room.name']) assert.ok(stateTypes.includes(t), t);
      assert.equal(room.state.events.find((e: any) => e.type === 'm.room.name').content.name, 'Paging');
      const page = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=3&from=${enc(room.timeline.prev_batch)}`);
      assert.deepEqual(page.chunk.map((e: any) => e.event_id), sent.slice(0, 3).reverse());
    });

    test('an incremental sync returns only what is new, and nothing twice', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({});
      const s1 = await alice.sync();
      const m1 = await alice.text(roomId, 'one');
      const s2 = await alice.sync({ since: s1.next_batch });
      assert.deepEqual(timelineOf(s2, roomId).map((e: any) => e.event_id), [m1]);
      assert.equal(s2.rooms.join[roomId].timeline.limited, false);
      assert.deepEqual(s2.rooms.join[roomId].state.events, []);
      assert.equal(s2.rooms.join[roomId].timeline.events[0].unsigned.transaction_id !== undefined, true, 'the sender sees its txn id');
      const s3 = await alice.sync({ since: s2.next_batch });
      assert.equal(s3.rooms.join[roomId], undefined);
      assert.equal(s3.next_batch, s2.next_batch);
      const m2 = await alice.text(roomId, 'two');
      const m3 = await alice.text(roomId, 'three');
      const s4 = await alice.sync({ since: s3.next_batch });
      assert.deepEqual(timelineOf(s4, roomId).map((e: any) => e.event_id), [m2, m3]);
      // The same token again gives the same answer.
      const again = await alice.sync({ since: s3.next_batch });
      assert.deepEqual(timelineOf(again, roomId).map((e: any) => e.event_id), [m2, m3]);
    });

    test('a limited incremental timeline brings the state changed in the gap', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({ name: 'Before' });
      const s1 = await alice.sync();
      await alice.ok('PUT', `/rooms/${enc(roomId)}/state/m.room.name/`, { name: 'After' });
      const sent: string[] = [];
      for (let i = 0; i < 12; i++) sent.push(await alice.text(roomId, `n${i}`));
      const s2 = await alice.sync({ since: s1.next_batch });
      const room = s2.rooms.join[roomId];
      assert.equal(room.timeline.limited, true);
      assert.deepEqual(room.timeline.events.map((e: any) => e.event_id), sent.slice(2));
      assert.deepEqual(room.state.events.map((e: any) => [e.type, e.content.name]), [['m.room.name', 'After']]);
      const page = await alice.ok('GET', `/rooms/${enc(roomId)}/messages?dir=b&limit=2&from=${enc(room.timeline.prev_batch)}`);
      assert.deepEqual(page.chunk.map((e: any) => e.event_id), [sent[1], sent[0]]);
    });

    test('an invite shows in rooms.invite; joining moves the room to rooms.join with full state', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ name: 'Invited' });
      const b1 = await bob.sync();
      await alice.text(roomId, 'before the invite');
      await alice.invite(roomId, bob.userId);
      const b2 = await bob.sync({ since: b1.next_batch });
      const invited = b2.rooms.invite[roomId];
      assert.ok(invited, 'the room is in rooms.invite');
      assert.equal(b2.rooms.join[roomId], undefined);
      const stripped = invited.invite_state.events;
      assert.equal(stripped.find((e: any) => e.type === 'm.room.name').content.name, 'Invited');
      assert.ok(stripped.some((e: any) => e.type === 'm.room.create'));
      const own = stripped.find((e: any) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.equal(own.content.membership, 'invite');
      assert.equal(own.sender, alice.userId);
      assertStripped(stripped, bob.userId, 'invite');
      // The inviter's member event rides along; the invitee's own comes last.
      assert.ok(stripped.some((e: any) => e.type === 'm.room.member' && e.state_key === alice.userId));
      assert.equal(stripped.at(-1), own);
      // The invite is the event that put bob's membership in the room's state.
      const inState = await alice.ok('GET', `/rooms/${enc(roomId)}/state/m.room.member/${enc(bob.userId)}?format=event`);
      assert.equal(own.event_id, inState.event_id);
      assert.equal(own.origin_server_ts, inState.origin_server_ts);
      // An initial sync shows the same stripped state.
      assert.deepEqual(ageless((await bob.sync()).rooms.invite[roomId].invite_state.events), ageless(stripped));
      // Nothing of the room's timeline reaches an invitee.
      assert.deepEqual(b2.rooms.leave, {});

      await bob.join(roomId);
      const b3 = await bob.sync({ since: b2.next_batch, filter: { room: { timeline: { limit: 1 } } } });
      assert.equal(b3.rooms.invite[roomId], undefined);
      const joined = b3.rooms.join[roomId];
      assert.ok(joined);
      assert.deepEqual(typesOf(joined.timeline.events), ['m.room.member']);
      assert.equal(joined.timeline.events[0].state_key, bob.userId);
      const state = new Map(joined.state.events.map((e: any) => [`${e.type}|${e.state_key}`, e]));
      for (const key of ['m.room.create|', 'm.room.power_levels|', 'm.room.join_rules|', 'm.room.name|', `m.room.member|${alice.userId}`]) {
        assert.ok(state.has(key), `state has ${key}`);
      }
      assert.deepEqual(joined.summary, { 'm.joined_member_count': 2, 'm.invited_member_count': 0 });
      // With history shared, the joiner's unlimited timeline reaches back to before the invite.
      const b4 = await bob.sync({ since: b2.next_batch });
      assert.ok(timelineOf(b4, roomId).some((e: any) => e.content.body === 'before the invite'));
    });

    test('leaving shows in rooms.leave; later events of the room do not reach the leaver', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const b1 = await bob.sync();
      const m = await alice.text(roomId, 'bye');
      await bob.leave(roomId);
      const b2 = await bob.sync({ since: b1.next_batch });
      assert.equal(b2.rooms.join[roomId], undefined);
      const left = b2.rooms.leave[roomId];
      assert.ok(left, 'the room is in rooms.leave');
      const events = left.timeline.events;
      assert.deepEqual(events.map((e: any) => e.event_id)[0], m);
      assert.equal(events[events.length - 1].type, 'm.room.member');
      assert.equal(events[events.length - 1].content.membership, 'leave');
      await alice.text(roomId, 'after');
      const b3 = await bob.sync({ since: b2.next_batch });
      assert.deepEqual(b3.rooms.leave, {});
      assert.deepEqual(b3.rooms.join, {});
      // An initial sync shows left rooms only when the filter asks.
      assert.equal((await bob.sync()).rooms.leave[roomId], undefined);
      const withLeave = await bob.sync({ filter: { room: { include_leave: true } } });
      const archived = withLeave.rooms.leave[roomId];
      assert.ok(archived);
      assert.ok(!archived.timeline.events.some((e: any) => e.content.body === 'after'));
      assert.ok(archived.state.events.some((e: any) => e.type === 'm.room.create') || archived.timeline.events.some((e: any) => e.type === 'm.room.create'));
    });

    test('a rejected invite shows in rooms.leave with the leave and no room state', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ invite: [bob.userId] });
      await alice.text(roomId, 'private');
      const b1 = await bob.sync();
      assert.ok(b1.rooms.invite[roomId]);
      await bob.leave(roomId);
      const b2 = await bob.sync({ since: b1.next_batch });
      const left = b2.rooms.leave[roomId];
      assert.ok(left);
      assert.deepEqual(left.state.events, []);
      assert.ok(!left.timeline.events.some((e: any) => e.content.body === 'private'));
      assert.equal(left.timeline.events.at(-1).content.membership, 'leave');
    });

    test('a knock shows in rooms.knock with the stripped state; an ignored inviter is not shown', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ name: 'Knock here', initial_state: [{ type: 'm.room.join_rules', state_key: '', content: { join_rule: 'knock' } }] });
      const b1 = await bob.sync();
      await bob.ok('POST', `/knock/${enc(roomId)}`, {});
      const b2 = await bob.sync({ since: b1.next_batch });
      const knocked = b2.rooms.knock[roomId];
      assert.ok(knocked);
      const events = knocked.knock_state.events;
      assert.equal(events.find((e: any) => e.type === 'm.room.name').content.name, 'Knock here');
      assert.equal(events.find((e: any) => e.type === 'm.room.join_rules').content.join_rule, 'knock');
      assert.equal(events.at(-1).type, 'm.room.member');
      assert.equal(events.at(-1).content.membership, 'knock');
      assert.equal(events.at(-1).state_key, bob.userId);
      assertStripped(events, bob.userId, 'knock');
      assert.deepEqual(b2.rooms.join, {});
      // Initial syncs show the knock too.
      assert.ok((await bob.sync()).rooms.knock[roomId]);

      const carol = await user('carol');
      await bob.ok('PUT', `/user/${enc(bob.userId)}/account_data/m.ignored_user_list`, { ignored_users: { [carol.userId]: {} } });
      const b3 = await bob.sync({ since: b2.next_batch });
      const fromCarol = await carol.createRoom({ invite: [bob.userId] });
      const b4 = await bob.sync({ since: b3.next_batch });
      assert.equal(b4.rooms.invite[fromCarol], undefined);
      const fromAlice = await alice.createRoom({ invite: [bob.userId] });
      const invited = (await bob.sync({ since: b4.next_batch })).rooms.invite[fromAlice];
      assert.ok(invited);
      // Invited at creation: the same stripped form as a later invite.
      assertStripped(invited.invite_state.events, bob.userId, 'invite');
      assert.equal(invited.invite_state.events.at(-1).sender, alice.userId);
    });

    test('history visibility "joined" hides what was said before the join', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat', initial_state: [{ type: 'm.room.history_visibility', state_key: '', content: { history_visibility: 'joined' } }] });
      await alice.text(roomId, 'secret');
      await bob.join(roomId);
      const after = await alice.text(roomId, 'welcome');
      const s = await bob.sync();
      const bodies = timelineOf(s, roomId).map((e: any) => e.content.body);
      assert.ok(!bodies.includes('secret'), 'a message before the join is hidden');
      assert.ok(timelineOf(s, roomId).some((e: any) => e.event_id === after));
      assert.ok(timelineOf(s, roomId).some((e: any) => e.type === 'm.room.member' && e.state_key === bob.userId));
    });

    test("an ignored user's messages are dropped", async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await bob.ok('PUT', `/user/${enc(bob.userId)}/account_data/m.ignored_user_list`, { ignored_users: { [alice.userId]: {} } });
      const b1 = await bob.sync();
      await alice.text(roomId, 'ignored');
      const mine = await bob.text(roomId, 'heard');
      const b2 = await bob.sync({ since: b1.next_batch });
      assert.deepEqual(timelineOf(b2, roomId).map((e: any) => e.event_id), [mine]);
    });

    test('filters: timeline limit and types, stored filter ids, room lists', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({ name: 'Filtered' });
      const other = await alice.createRoom({ name: 'Other' });
      for (let i = 0; i < 4; i++) await alice.text(roomId, `f${i}`);
      const limited = await alice.sync({ filter: { room: { timeline: { limit: 2 } } } });
      assert.deepEqual(timelineOf(limited, roomId).map((e: any) => e.content.body), ['f2', 'f3']);
      const { filter_id } = await alice.ok('POST', `/user/${enc(alice.userId)}/filter`, { room: { timeline: { types: ['m.room.message'] }, rooms: [roomId] } });
      const typed = await alice.sync({ filter: filter_id });
      assert.deepEqual(typesOf(timelineOf(typed, roomId)), ['m.room.message', 'm.room.message', 'm.room.message', 'm.room.message']);
      assert.equal(typed.rooms.join[other], undefined, 'the room list leaves the other room out');
      assert.ok(typed.rooms.join[roomId].state.events.some((e: any) => e.type === 'm.room.create'), 'state excluded from the timeline is in state');
    });

    test('bad tokens, filters and parameters are 400', async () => {
      const alice = await user('alice');
      for (const since of ['nonsense', 's1_2', 't5', 's1_2_3_4_5_6_x']) {
        const r = await alice.syncRaw({ since });
        assert.equal(r.status, 400, since);
        assert.equal(r.body.errcode, 'M_INVALID_PARAM');
      }
      assert.equal((await alice.syncRaw({ filter: '{nope' })).body.errcode, 'M_NOT_JSON');
      assert.equal((await alice.syncRaw({ filter: '12345' })).body.errcode, 'M_INVALID_PARAM');
      assert.equal((await alice.syncRaw({ filter: { room: { timeline: { limit: -1 } } } })).body.errcode, 'M_BAD_JSON');
      assert.equal((await alice.syncRaw({ filter: { room: { timeline: { types: 'm.room.message' } } } })).body.errcode, 'M_BAD_JSON');
      assert.equal((await alice.syncRaw({ timeout: 'soon' })).body.errcode, 'M_INVALID_PARAM');
      assert.equal((await alice.syncRaw({ set_presence: 'busy' })).body.errcode, 'M_INVALID_PARAM');
      assert.equal((await alice.syncRaw({ full_state: 'yes' })).body.errcode, 'M_INVALID_PARAM');
      const noToken = await new HttpClient(hs.baseUrl).get('/sync');
      assert.equal(noToken.status, 401);
    });

    test('served under r0 and /_chat too; full_state gives every joined room whole', async () => {
      const alice = await user('alice');
      const roomId = await alice.createRoom({ name: 'Whole' });
      const s1 = await alice.sync();
      for (const prefix of ['/_matrix/client/r0', '/_chat/client/v3']) {
        const r = await alice.call('GET', `${prefix}/sync?since=${enc(s1.next_batch)}&full_state=true`);
        assert.equal(r.status, 200);
        const room = r.body.rooms.join[roomId];
        assert.ok(room, prefix);
        assert.deepEqual(room.timeline.events, []);
        assert.ok(room.state.events.some((e: any) => e.type === 'm.room.name' && e.content.name === 'Whole'));
      }
    });

    test('a profile change shows in member events', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      const a1 = await alice.sync();
      await bob.ok('PUT', `/profile/${enc(bob.userId)}/displayname`, { displayname: 'Robert' });
      const a2 = await alice.sync({ since: a1.next_batch });
      const member = timelineOf(a2, roomId).find((e: any) => e.type === 'm.room.member' && e.state_key === bob.userId);
      assert.ok(member, 'the new member event is in the timeline');
      assert.equal(member.content.displayname, 'Robert');
      assert.equal(member.content.membership, 'join');
      assert.equal(member.unsigned.prev_content.membership, 'join');
      assert.notEqual(member.unsigned.prev_content.displayname, 'Robert');
    });
  });
}
