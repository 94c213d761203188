// Serving a room's events to other servers (GET /event, /state, /state_ids, /event_auth,
// /backfill, POST /get_missing_events, without HTTP), through a real room service on a real
// database. The room is alice's; bob joins it from a fake remote (remote.test) whose graph mirrors
// the room, so the remote's own computation of states and auth chains checks ours. other.test has
// no one in the room.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Pdu } from '../../src/protocol/events.js';
import { computeEventId } from '../../src/protocol/hashes.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { storageBackends } from '../support/databases.js';
import { RemoteServer, RoomGraph, type GraphEvent } from '../support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../support/remote-ports.js';
import type { CreateRoomRequest } from '../../src/rooms/perform/create.js';
import { rejectsWith, useRoomsHarness, user } from './helpers.js';

const REMOTE = 'remote.test';
const OTHER = 'other.test';
const BOB = `@bob:${REMOTE}`;
const VERSION = getRoomVersion('10')!;

const idOf = (pdu: Pdu): string => computeEventId(pdu, VERSION);
const ids = (pdus: readonly Pdu[]): string[] => pdus.map(idOf);
const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

for (const backend of await storageBackends()) {
  describe(`serving events to servers on ${backend.name}`, { skip: backend.skip }, () => {
    const remote = new RemoteServer({ serverName: REMOTE });
    const h = useRoomsHarness(backend, { defaultRoomVersion: '10', keyRing: keyRingOf(remote), remoteEvents: remoteEventsOf(remote) });
    const alice = user('alice');

    /** Adds this server's timeline events of the room that the graph lacks, in stream order. */
    async function mirror(roomId: string, g: RoomGraph): Promise<void> {
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} and e.stream_ordering is not null order by e.stream_ordering`.execute(h.database.db);
      for (const r of rows) {
        const pdu = JSON.parse(r.json) as Pdu;
        if (g.get(idOf(pdu)) === undefined) await g.insert(pdu);
      }
    }

    /** Alice's room (`request`), with bob joined from the remote after `before` ran; the remote's graph. */
    async function roomWithBob(
      request: CreateRoomRequest = { preset: 'public_chat' },
      before: (roomId: string) => Promise<void> = async () => {},
    ): Promise<{ roomId: string; g: RoomGraph; join: GraphEvent }> {
      const { roomId } = await h.rooms.createRoom(alice, request);
      await before(roomId);
      const g = new RoomGraph(roomId, VERSION, [remote]);
      await mirror(roomId, g);
      const join = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'join' } });
      const [outcome] = await h.rooms.receive(REMOTE, [join.pdu]);
      assert.equal(outcome!.status, 'timeline', outcome!.reason);
      return { roomId, g, join };
    }

    async function say(roomId: string, body: string): Promise<string> {
      return h.rooms.sendMessage(alice, roomId, 'm.room.message', { msgtype: 'm.text', body });
    }

    async function sayMany(roomId: string, n: number, body = 'message'): Promise<string[]> {
      const out: string[] = [];
      for (let i = 1; i <= n; i++) out.push(await say(roomId, `${body} ${i}`));
      return out;
    }

    async function depthOf(eventId: string): Promise<number> {
      const row = await h.database.db.selectFrom('events').select('depth').where('event_id', '=', eventId).executeTakeFirstOrThrow();
      return Number(row.depth);
    }

    /** Whether a served PDU is the redacted form (no content beyond what redaction keeps). */
    const isPruned = (pdu: Pdu): boolean => pdu.type === 'm.room.message' && Object.keys(pdu.content).length === 0;

    test('GET /event: the PDU as stored, signed and hashed, without unsigned', async () => {
      const { roomId, join } = await roomWithBob();
      const mine = await say(roomId, 'hello');
      const pdu = await h.rooms.eventForServer(REMOTE, mine);
      assert.equal(idOf(pdu), mine, 'the hash-derived id survives serving');
      assert.equal(pdu.content.body, 'hello');
      assert.equal(pdu.unsigned, undefined);
      assert.ok(pdu.signatures['hs.test'] !== undefined && pdu.hashes.sha256 !== undefined);
      assert.deepEqual(await h.rooms.eventForServer(REMOTE, join.eventId), join.pdu);
    });

    test('GET /state_ids and /state: the state before the event (not its own change) and the auth chain, as the remote computes them', async () => {
      const { roomId, g } = await roomWithBob();
      await h.rooms.sendState(alice, roomId, 'm.room.name', '', { name: 'first' });
      const rename = await h.rooms.sendState(alice, roomId, 'm.room.name', '', { name: 'second' });
      const msg = await say(roomId, 'after the rename');
      await mirror(roomId, g);
      for (const at of [rename, msg]) {
        const answer = await h.rooms.stateIdsForServer(REMOTE, roomId, at);
        const expected = [...g.stateBefore(at).values()];
        assert.deepEqual(sorted(answer.pdu_ids), sorted(expected));
        assert.deepEqual(sorted(answer.auth_chain_ids), sorted(g.authChain(expected)));
        const full = await h.rooms.stateForServer(REMOTE, roomId, at);
        assert.deepEqual(sorted(ids(full.pdus)), sorted(expected));
        assert.deepEqual(sorted(ids(full.auth_chain)), sorted(answer.auth_chain_ids));
        assert.ok(full.pdus.every((p) => p.unsigned === undefined));
      }
      // At the rename, the name is the first one; after it, the second.
      const before = await h.rooms.stateForServer(REMOTE, roomId, rename);
      assert.equal(before.pdus.find((p) => p.type === 'm.room.name')?.content.name, 'first');
      assert.ok(!(await h.rooms.stateIdsForServer(REMOTE, roomId, rename)).pdu_ids.includes(rename));
      assert.ok((await h.rooms.stateIdsForServer(REMOTE, roomId, msg)).pdu_ids.includes(rename));
    });

    test('GET /event_auth: the full auth chain of the event, oldest first', async () => {
      const { roomId, g, join } = await roomWithBob();
      const msg = await say(roomId, 'authorised');
      await mirror(roomId, g);
      for (const id of [msg, join.eventId]) {
        const { auth_chain } = await h.rooms.eventAuthForServer(REMOTE, roomId, id);
        assert.deepEqual(sorted(ids(auth_chain)), sorted(g.authChain([id])));
        const depths = auth_chain.map((p) => p.depth);
        assert.deepEqual(depths, [...depths].sort((a, b) => a - b));
        assert.equal(auth_chain[0]!.type, 'm.room.create');
      }
    });

    test('GET /backfill: the given events and those before them, deepest first, at most limit (capped at 100)', async () => {
      const { roomId } = await roomWithBob();
      const msgs = await sayMany(roomId, 8);
      const five = await h.rooms.backfillForServer(REMOTE, roomId, [msgs[7]!], 5);
      assert.equal(five.origin, 'hs.test');
      assert.equal(typeof five.origin_server_ts, 'number');
      assert.deepEqual(ids(five.pdus), [...msgs].reverse().slice(0, 5));
      // Two starting points: both included, the walk shared.
      const two = await h.rooms.backfillForServer(REMOTE, roomId, [msgs[7]!, msgs[3]!], 3);
      assert.deepEqual(ids(two.pdus), [msgs[7], msgs[6], msgs[5]]);
      // The whole room: down to the create event, depths never rising.
      const all = await h.rooms.backfillForServer(REMOTE, roomId, [msgs[7]!], 100);
      const depths = all.pdus.map((p) => p.depth);
      assert.deepEqual(depths, [...depths].sort((a, b) => b - a));
      assert.equal(all.pdus.at(-1)!.type, 'm.room.create');
      assert.equal((await h.rooms.backfillForServer(REMOTE, roomId, [msgs[7]!], 0)).pdus.length, 0);
      assert.deepEqual((await h.rooms.backfillForServer(REMOTE, roomId, ['$unknown'], 10)).pdus, []);
    });

    test('GET /backfill: a limit above 100 serves 100', async () => {
      const { roomId } = await roomWithBob();
      const msgs = await sayMany(roomId, 100);
      const { pdus } = await h.rooms.backfillForServer(REMOTE, roomId, [msgs[99]!], 1000);
      assert.equal(pdus.length, 100);
      assert.deepEqual(ids(pdus), [...msgs].reverse());
    });

    test('POST /get_missing_events: back from latest (excluded) to earliest (excluded), oldest first; limit and min_depth', async () => {
      const { roomId } = await roomWithBob();
      const m = await sayMany(roomId, 8);
      const between = await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [m[1]!], latest_events: [m[6]!] });
      assert.deepEqual(ids(between.events), m.slice(2, 6));
      // The limit keeps the events nearest latest.
      const two = await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [m[1]!], latest_events: [m[6]!], limit: 2 });
      assert.deepEqual(ids(two.events), [m[4], m[5]]);
      // min_depth: nothing shallower, and the walk does not pass it.
      const deep = await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [], latest_events: [m[6]!], min_depth: await depthOf(m[3]!) });
      assert.deepEqual(ids(deep.events), m.slice(3, 6));
      // Default limit 10; a larger one is capped at 20.
      const more = await sayMany(roomId, 25, 'more');
      assert.equal((await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [], latest_events: [more[24]!] })).events.length, 10);
      const capped = await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [], latest_events: [more[24]!], limit: 100 });
      assert.deepEqual(ids(capped.events), more.slice(4, 24));
      // What the receiving side asks for to fill a gap: the events it lacks, in an order it can apply.
      const depths = capped.events.map((p) => p.depth);
      assert.deepEqual(depths, [...depths].sort((a, b) => a - b));
    });

    test('history visibility "joined": events before the server\'s user joined are pruned, its own join and later events whole', async () => {
      let early = '';
      const { roomId, join } = await roomWithBob(
        { preset: 'public_chat', initialState: [{ type: 'm.room.history_visibility', stateKey: '', content: { history_visibility: 'joined' } }] },
        async (id) => {
          early = await say(id, 'before bob');
        },
      );
      const late = await say(roomId, 'after bob');
      const back = await h.rooms.backfillForServer(REMOTE, roomId, [late], 50);
      const byId = new Map(back.pdus.map((p) => [idOf(p), p]));
      assert.equal(byId.get(late)!.content.body, 'after bob');
      assert.deepEqual(byId.get(join.eventId), join.pdu);
      assert.ok(isPruned(byId.get(early)!), JSON.stringify(byId.get(early)));
      // Pruned, the event keeps what its id and signatures cover.
      assert.equal(idOf(byId.get(early)!), early);
      assert.ok(byId.get(early)!.signatures['hs.test'] !== undefined);
      // Alice's name event before bob's join: pruned to what redaction keeps.
      const missing = await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [], latest_events: [late], limit: 20 });
      const m = new Map(missing.events.map((p) => [idOf(p), p]));
      assert.ok(isPruned(m.get(early)!));
      assert.deepEqual(m.get(join.eventId), join.pdu);
      // By id: pruned too (the reference server serves the redacted form, not a refusal).
      assert.ok(isPruned(await h.rooms.eventForServer(REMOTE, early)));
      assert.equal((await h.rooms.eventForServer(REMOTE, late)).content.body, 'after bob');
      // State and auth chains are served whole.
      const state = await h.rooms.stateForServer(REMOTE, roomId, late);
      assert.equal(state.pdus.find((p) => p.type === 'm.room.history_visibility')?.content.history_visibility, 'joined');
    });

    test('history visibility "invited": events after the invite are whole, events before it pruned', async () => {
      let early = '';
      let afterInvite = '';
      const { roomId } = await roomWithBob(
        { preset: 'public_chat', initialState: [{ type: 'm.room.history_visibility', stateKey: '', content: { history_visibility: 'invited' } }] },
        async (id) => {
          early = await say(id, 'before the invite');
          await h.rooms.invite(alice, id, BOB);
          afterInvite = await say(id, 'bob is invited');
        },
      );
      const late = await say(roomId, 'bob joined');
      const { pdus } = await h.rooms.backfillForServer(REMOTE, roomId, [late], 50);
      const byId = new Map(pdus.map((p) => [idOf(p), p]));
      assert.ok(isPruned(byId.get(early)!));
      assert.equal(byId.get(afterInvite)!.content.body, 'bob is invited');
      assert.equal(byId.get(late)!.content.body, 'bob joined');
    });

    test('history visibility "shared": history before the join is served whole', async () => {
      let early = '';
      const { roomId } = await roomWithBob({ preset: 'public_chat' }, async (id) => {
        early = await say(id, 'shared history');
      });
      const late = await say(roomId, 'later');
      const { pdus } = await h.rooms.backfillForServer(REMOTE, roomId, [late], 50);
      assert.equal(pdus.find((p) => idOf(p) === early)!.content.body, 'shared history');
      assert.ok(pdus.every((p) => !isPruned(p)));
      assert.equal((await h.rooms.eventForServer(REMOTE, early)).content.body, 'shared history');
    });

    test('a redacted event is served redacted', async () => {
      const { roomId } = await roomWithBob();
      const msg = await say(roomId, 'oops');
      await h.rooms.redact(alice, roomId, msg);
      assert.ok(isPruned(await h.rooms.eventForServer(REMOTE, msg)));
    });

    test('a server with no one in the room is refused every operation (403)', async () => {
      const { roomId, join } = await roomWithBob();
      const msg = await say(roomId, 'members only');
      await rejectsWith(h.rooms.eventForServer(OTHER, msg), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.stateIdsForServer(OTHER, roomId, msg), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.stateForServer(OTHER, roomId, msg), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.eventAuthForServer(OTHER, roomId, msg), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.backfillForServer(OTHER, roomId, [msg], 10), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.missingEventsForServer(OTHER, roomId, { earliest_events: [join.eventId], latest_events: [msg] }), 403, 'M_FORBIDDEN');
    });

    test('a server whose users left: refused by id and for state, still served the history where it was joined', async () => {
      const { roomId, g } = await roomWithBob();
      const msg = await say(roomId, 'while bob was here');
      await mirror(roomId, g);
      const leave = g.eventSync({ type: 'm.room.member', sender: BOB, stateKey: BOB, content: { membership: 'leave' } });
      assert.equal((await h.rooms.receive(REMOTE, [leave.pdu]))[0]!.status, 'timeline');
      await say(roomId, 'after bob left');
      await rejectsWith(h.rooms.eventForServer(REMOTE, msg), 403, 'M_FORBIDDEN');
      await rejectsWith(h.rooms.stateIdsForServer(REMOTE, roomId, msg), 403, 'M_FORBIDDEN');
      // Joined in the state after the events it names: /backfill and /get_missing_events answer.
      const { pdus } = await h.rooms.backfillForServer(REMOTE, roomId, [msg], 3);
      assert.equal(idOf(pdus[0]!), msg);
      assert.ok((await h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [], latest_events: [msg], limit: 3 })).events.length > 0);
      // Named events after the leave do not let it in.
      await rejectsWith(h.rooms.backfillForServer(REMOTE, roomId, [leave.eventId], 3), 403, 'M_FORBIDDEN');
    });

    test('a server the room\'s ACL denies is refused every operation (403), though its user is joined', async () => {
      const { roomId, join } = await roomWithBob();
      const msg = await say(roomId, 'before the ACL');
      await h.rooms.sendState(alice, roomId, 'm.room.server_acl', '', { allow: ['*'], deny: ['evil.test'] });
      assert.equal(idOf(await h.rooms.eventForServer(REMOTE, msg)), msg, 'an ACL that does not name the server lets it in');
      await h.rooms.sendState(alice, roomId, 'm.room.server_acl', '', { allow: ['*'], deny: ['*.test'] });
      await rejectsWith(h.rooms.eventForServer(REMOTE, msg), 403, 'M_FORBIDDEN', /ACL/);
      await rejectsWith(h.rooms.stateIdsForServer(REMOTE, roomId, msg), 403, 'M_FORBIDDEN', /ACL/);
      await rejectsWith(h.rooms.stateForServer(REMOTE, roomId, msg), 403, 'M_FORBIDDEN', /ACL/);
      await rejectsWith(h.rooms.eventAuthForServer(REMOTE, roomId, msg), 403, 'M_FORBIDDEN', /ACL/);
      await rejectsWith(h.rooms.backfillForServer(REMOTE, roomId, [msg], 10), 403, 'M_FORBIDDEN', /ACL/);
      await rejectsWith(h.rooms.missingEventsForServer(REMOTE, roomId, { earliest_events: [join.eventId], latest_events: [msg] }), 403, 'M_FORBIDDEN', /ACL/);
      // A server outside the room learns nothing of the ACL: it is refused for not being in the room.
      await rejectsWith(h.rooms.stateIdsForServer(OTHER, roomId, msg), 403, 'M_FORBIDDEN', /not in room/);
    });

    test('unknown rooms and events: 404; an event of another room or a rejected one: 404', async () => {
      const { roomId, g } = await roomWithBob();
      const other = await h.rooms.createRoom(alice, { preset: 'public_chat' });
      const elsewhere = await say(other.roomId, 'another room');
      await rejectsWith(h.rooms.eventForServer(REMOTE, '$nope'), 404, 'M_NOT_FOUND');
      for (const unknownRoom of ['!nope:hs.test']) {
        await rejectsWith(h.rooms.stateIdsForServer(REMOTE, unknownRoom, '$nope'), 404, 'M_NOT_FOUND');
        await rejectsWith(h.rooms.stateForServer(REMOTE, unknownRoom, '$nope'), 404, 'M_NOT_FOUND');
        await rejectsWith(h.rooms.eventAuthForServer(REMOTE, unknownRoom, '$nope'), 404, 'M_NOT_FOUND');
        await rejectsWith(h.rooms.backfillForServer(REMOTE, unknownRoom, ['$nope'], 10), 404, 'M_NOT_FOUND');
        await rejectsWith(h.rooms.missingEventsForServer(REMOTE, unknownRoom, { earliest_events: [], latest_events: ['$nope'] }), 404, 'M_NOT_FOUND');
      }
      await rejectsWith(h.rooms.stateIdsForServer(REMOTE, roomId, '$nope'), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.eventAuthForServer(REMOTE, roomId, '$nope'), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.stateIdsForServer(REMOTE, roomId, elsewhere), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.eventAuthForServer(REMOTE, roomId, elsewhere), 404, 'M_NOT_FOUND');
      // Bob may not change the power levels: the event is rejected, and never served.
      await mirror(roomId, g);
      const coup = g.eventSync({ type: 'm.room.power_levels', sender: BOB, stateKey: '', content: { users: { [BOB]: 100 } } });
      assert.equal((await h.rooms.receive(REMOTE, [coup.pdu]))[0]!.status, 'rejected');
      await rejectsWith(h.rooms.eventForServer(REMOTE, coup.eventId), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.stateIdsForServer(REMOTE, roomId, coup.eventId), 404, 'M_NOT_FOUND');
      await rejectsWith(h.rooms.eventAuthForServer(REMOTE, roomId, coup.eventId), 404, 'M_NOT_FOUND');
    });

    test('served PDUs are exactly those the remote\'s graph holds (as signed), for the whole room', async () => {
      const { roomId, g } = await roomWithBob();
      const msgs = await sayMany(roomId, 5);
      await mirror(roomId, g);
      const { pdus } = await h.rooms.backfillForServer(REMOTE, roomId, [msgs[4]!], 100);
      for (const p of pdus) assert.deepEqual(p, g.get(idOf(p))!.pdu);
      assert.equal(pdus.length, g.events().length);
    });
  });
}
