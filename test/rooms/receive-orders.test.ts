// Property: a room's final state does not depend on the order its events arrive in. Random room
// DAGs with forks (concurrent joins, bans racing joins, power-level changes on both sides, topic
// changes, redactions) are built by two fake remote servers on top of a room this server created;
// each DAG ends with an event merging every fork. Each is fed in many random orders, one event at a
// time (events arriving before the events they cite included), to a fresh copy of the server's
// database. Every order must end with the same current state, the merge as the only forward
// extremity, the same members, and the state equal to an independent computation over the whole
// DAG (ReferenceStates, from the protocol core).

import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { stateKey, type Pdu, type RoomEvent, type StateKey } from '../../src/protocol/events.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey } from '../../src/protocol/signing.js';
import { RoomService } from '../../src/rooms/service.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { readSnapshot } from '../../src/storage/rooms/state-snapshots.js';
import type { Schema } from '../../src/storage/schema.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { currentStreamPositions } from '../../src/streams/positions.js';
import { ReferenceStates } from '../support/reference-states.js';
import { RemoteServer, RoomGraph, type GraphEvent } from '../support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../support/remote-ports.js';

const DAGS = 30;
const ORDERS = 50;
const VERSION = getRoomVersion('10')!;
const SERVER = 'hs.test';
const ALICE = `@alice:${SERVER}`;

/** A small seeded generator (mulberry32): the same seed, the same DAGs and orders. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const remote1 = new RemoteServer({ serverName: 'one.test' });
const remote2 = new RemoteServer({ serverName: 'two.test' });
const ADMINS = ['@admin:one.test', '@admin:two.test'];
const USERS = ['@ann:one.test', '@bea:two.test', '@cid:one.test', '@dan:two.test'];

interface Dag {
  readonly roomId: string;
  /** The remote servers' events, in the order they were built. */
  readonly events: readonly GraphEvent[];
  readonly final: GraphEvent;
  readonly expected: ReadonlyMap<StateKey, string>;
}

/** The resolved state before an event citing `prev`, as RoomEvents. */
async function stateOf(g: RoomGraph, prev: readonly string[]): Promise<Map<StateKey, RoomEvent>> {
  const ids = await g.resolvePrevStates(prev);
  const events = g.roomEventsById([...ids.values()]);
  return new Map([...ids].map(([k, id]) => [k, events.get(id)!]));
}

function membership(state: ReadonlyMap<StateKey, RoomEvent>, userId: string): string {
  const m = state.get(stateKey('m.room.member', userId))?.content.membership;
  return typeof m === 'string' ? m : 'leave';
}

function level(state: ReadonlyMap<StateKey, RoomEvent>, userId: string): number {
  const users = state.get(stateKey('m.room.power_levels', ''))?.content.users as Record<string, number> | undefined;
  return users?.[userId] ?? 0;
}

/**
 * One random DAG on top of `g` (the room as this server created it). Every event is allowed by the
 * state before it, so that no event is rejected and only the order of arrival varies.
 */
async function randomDag(g: RoomGraph, rand: () => number): Promise<{ events: GraphEvent[]; final: GraphEvent } | undefined> {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const built: GraphEvent[] = [];
  const add = async (spec: Parameters<RoomGraph['event']>[0]) => {
    const e = await g.event(spec);
    built.push(e);
    return e;
  };
  for (const admin of ADMINS) await add({ type: 'm.room.member', sender: admin, stateKey: admin, content: { membership: 'join' } });
  const steps = 6 + Math.floor(rand() * 4);
  for (let i = 0; i < steps; i++) {
    // Prev events: the latest event, or a fork from one of the few before it, or both merged.
    const recent = built.slice(-4).map((e) => e.eventId);
    const first = pick(recent);
    const prev = rand() < 0.25 ? [...new Set([first, pick(recent)])] : [first];
    const state = await stateOf(g, prev);
    const joined = [...ADMINS, ...USERS].filter((u) => membership(state, u) === 'join');
    const admins = ADMINS.filter((a) => membership(state, a) === 'join' && level(state, a) >= 100);
    const action = pick(['join', 'join', 'ban', 'power', 'topic', 'message', 'redact']);
    if (action === 'join') {
      const u = pick(USERS);
      const m = membership(state, u);
      if (m !== 'ban' && m !== 'join') await add({ type: 'm.room.member', sender: u, stateKey: u, content: { membership: 'join' }, prev });
    } else if (action === 'ban' && admins.length > 0) {
      const admin = pick(admins);
      const target = pick([...USERS, ...ADMINS.filter((a) => a !== admin)]);
      if (level(state, target) < level(state, admin) && membership(state, target) !== 'ban') {
        await add({ type: 'm.room.member', sender: admin, stateKey: target, content: { membership: 'ban' }, prev });
      }
    } else if (action === 'power' && admins.length > 0) {
      const admin = pick(admins);
      const pl = state.get(stateKey('m.room.power_levels', ''))!.content;
      const users = { ...(pl.users as Record<string, number>) };
      const target = pick(USERS);
      users[target] = users[target] === 50 ? 0 : 50;
      await add({ type: 'm.room.power_levels', sender: admin, stateKey: '', content: { ...pl, users }, prev });
    } else if (action === 'topic') {
      const setters = joined.filter((u) => level(state, u) >= 50);
      if (setters.length > 0) await add({ type: 'm.room.topic', sender: pick(setters), stateKey: '', content: { topic: `topic ${i}` }, prev });
    } else if (action === 'message' && joined.length > 0) {
      await add({ type: 'm.room.message', sender: pick(joined), content: { msgtype: 'm.text', body: `message ${i}` }, prev });
    } else if (action === 'redact' && admins.length > 0) {
      const target = built.filter((e) => e.event.type === 'm.room.message' && prev.includes(e.eventId));
      if (target.length > 0) await add({ type: 'm.room.redaction', sender: pick(admins), content: {}, redacts: target[0]!.eventId, prev });
    }
  }
  // The merge: every fork cited by one event, from someone the merged state still lets speak.
  const tips = g.extremities();
  const merged = await stateOf(g, tips);
  const speakers = [...ADMINS, ...USERS].filter((u) => membership(merged, u) === 'join');
  if (speakers.length === 0) return undefined;
  const final = await add({ type: 'm.room.message', sender: speakers[0]!, content: { msgtype: 'm.text', body: 'merge' }, prev: tips });
  return { events: built, final };
}

/** The current state of the server's room: key → event id. */
async function currentState(db: Database<Schema>['db'], roomId: string): Promise<Map<StateKey, string>> {
  const room = await db.selectFrom('rooms').select(['room_nid', 'state_snapshot_nid']).where('room_id', '=', roomId).executeTakeFirstOrThrow();
  const nids = await readSnapshot(db, Number(room.state_snapshot_nid));
  const rows = nids.size === 0 ? [] : await db.selectFrom('events').select(['event_nid', 'event_id']).where('event_nid', 'in', [...nids.values()]).execute();
  const idOf = new Map(rows.map((r) => [Number(r.event_nid), r.event_id]));
  return new Map([...nids].map(([k, nid]) => [k, idOf.get(nid)!]));
}

function service(database: Database<Schema>, bus: InProcessBus): RoomService {
  return new RoomService({
    db: database.db,
    dialect: database.dialect,
    serverName: SERVER,
    signingKey: generateSigningKey(),
    notifier: bus,
    defaultRoomVersion: '10',
    keyRing: keyRingOf(remote1, remote2),
    remoteEvents: remoteEventsOf(remote1, remote2),
  });
}

describe('arrival order does not change a room (sqlite)', () => {
  let dir: string;
  let template: string;
  const dags: Dag[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hearth-orders-'));
    template = join(dir, 'template.db');
    const database = openDatabase<Schema>({ connectionString: `file:${template}` });
    await migrateToLatest(database.db as never, database.dialect);
    const rooms = service(database, new InProcessBus(await currentStreamPositions(database.db)));
    const actor = { userId: ALICE, deviceId: 'DEV', isGuest: false, isAdmin: false };
    for (let seed = 1; dags.length < DAGS && seed < DAGS * 4; seed++) {
      const { roomId } = await rooms.createRoom(actor, {
        preset: 'public_chat',
        powerLevelContentOverride: { users: { [ALICE]: 100, [ADMINS[0]!]: 100, [ADMINS[1]!]: 100 } },
      });
      const g = new RoomGraph(roomId, VERSION, [remote1, remote2]);
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} order by e.stream_ordering`.execute(database.db);
      for (const r of rows) await g.insert(JSON.parse(r.json) as Pdu);
      const dag = await randomDag(g, random(seed));
      if (dag === undefined) continue;
      const reference = await ReferenceStates.compute(VERSION, g.events().map((e) => e.event));
      // Only DAGs whose every event is allowed: what varies is the order, not the verdicts.
      if (reference.rejected.size > 0) continue;
      dags.push({ roomId, events: dag.events, final: dag.final, expected: reference.stateAfter(dag.final.eventId) });
    }
    await database.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test(`${DAGS} DAGs, each in ${ORDERS} arrival orders: one final state, extremity and member list, equal to the reference`, async () => {
    assert.equal(dags.length, DAGS, 'enough DAGs were built');
    let copy = 0;
    for (const [d, dag] of dags.entries()) {
      const seen = new Set<string>();
      for (let o = 0; o < ORDERS; o++) {
        const rand = random(10_000 * (d + 1) + o);
        const order = [...dag.events];
        for (let i = order.length - 1; i > 0; i--) {
          const j = Math.floor(rand() * (i + 1));
          [order[i], order[j]] = [order[j]!, order[i]!];
        }
        const file = join(dir, `copy-${copy++}.db`);
        copyFileSync(template, file);
        const database = openDatabase<Schema>({ connectionString: `file:${file}` });
        try {
          const rooms = service(database, new InProcessBus(await currentStreamPositions(database.db)));
          for (const e of order) {
            const origin = e.event.sender.slice(e.event.sender.indexOf(':') + 1);
            const [outcome] = await rooms.receive(origin, [e.pdu]);
            assert.notEqual(outcome!.status, 'dropped', `${outcome!.reason}`);
            assert.notEqual(outcome!.status, 'rejected', `${e.eventId} rejected: ${outcome!.reason}`);
          }
          const state = await currentState(database.db, dag.roomId);
          const where = `DAG ${d}, order ${o}: ${order.map((e) => dag.events.indexOf(e)).join(',')}`;
          assert.deepEqual(new Map([...state].sort()), new Map([...dag.expected].sort()), where);
          const { rows } = await sql<{ event_id: string }>`select e.event_id from forward_extremities x join events e on e.event_nid = x.event_nid
            join rooms r on r.room_nid = x.room_nid where r.room_id = ${dag.roomId}`.execute(database.db);
          assert.deepEqual(rows.map((r) => r.event_id), [dag.final.eventId], where);
          const members = await database.db
            .selectFrom('room_memberships as m')
            .innerJoin('rooms as r', 'r.room_nid', 'm.room_nid')
            .select(['m.user_id', 'm.membership'])
            .where('r.room_id', '=', dag.roomId)
            .orderBy('m.user_id')
            .execute();
          const expectedMembers = [...dag.expected]
            .filter(([k]) => k.startsWith('m.room.member'))
            .map(([, id]) => dag.events.find((e) => e.eventId === id)?.event ?? undefined);
          for (const m of members) {
            const event = expectedMembers.find((e) => e?.state_key === m.user_id);
            if (event !== undefined) assert.equal(m.membership, event.content.membership, `${where}: ${m.user_id}`);
          }
          seen.add(JSON.stringify(members));
        } finally {
          await database.close();
          rmSync(file, { force: true });
        }
      }
      assert.equal(seen.size, 1, `DAG ${d}: one member list across orders`);
    }
  });
});
