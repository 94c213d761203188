// Property: a room's final state does not depend on the order its events arrive in. Random room
// DAGs with forks (concurrent joins, bans racing joins, power-level changes on both sides, topic
// changes, redactions) are built by two fake remote servers on top of a room this server created;
// each DAG ends with an event merging every fork. Each is fed in many random orders, one event at a
// time (events arriving before the events they cite included), to a fresh copy of the server's
// database. Every order must end with the same current state, the merge as the only forward
// extremity, the same members, and the state equal to an independent computation over the whole
// DAG (ReferenceStates, from the protocol core).
//
// Some members are users of this server: their events are signed with its key and reach it
// through a remote (as a backfill would bring them), and forks race their joins against bans and
// power changes. Each of them, and the room's creator, must get the same initial sync of the room
// whatever the order, as the final state says: the section; in a joined room the current state,
// the summary and every accepted event (as a set: events with no causal order between them arrive
// in any order); in a left room the leave and what the user was there for before it. Soft-failed
// events (which ones depends on the order) are never served and left out of the comparison.

import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { stateKey, type Pdu, type RoomEvent, type StateKey } from '../../src/protocol/events.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import { generateSigningKey } from '../../src/protocol/signing.js';
import { RoomService } from '../../src/rooms/service.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { isJoinedTo } from '../../src/storage/rooms/memberships.js';
import { readSnapshot } from '../../src/storage/rooms/state-snapshots.js';
import type { Schema } from '../../src/storage/schema.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { currentStreamPositions } from '../../src/streams/positions.js';
import { HERO_COUNT } from '../../src/sync/summary.js';
import { SyncService } from '../../src/sync/sync-service.js';
import { AccountDataService } from '../../src/users/account-data.js';
import { FilterService } from '../../src/users/filters.js';
import { PresenceService } from '../../src/users/presence.js';
import { ReceiptService } from '../../src/users/receipts.js';
import { ToDeviceService } from '../../src/users/to-device.js';
import { TypingService } from '../../src/users/typing.js';
import { ReferenceStates } from '../support/reference-states.js';
import { RemoteServer, RoomGraph, type GraphEvent } from '../support/remote-server.js';
import { keyRingOf, remoteEventsOf } from '../support/remote-ports.js';

const DAGS = 30;
/** Arrival orders per DAG (1,500 runs took a minute); HEARTH_PROPERTY_ORDERS asks for more. */
const ORDERS = Number(process.env['HEARTH_PROPERTY_ORDERS'] ?? 20);
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
/** This server's signing key, held by a RemoteServer too so that graphs can sign its users' events. */
const SIGNING_KEY = generateSigningKey();
const home = new RemoteServer({ serverName: SERVER, signingKey: SIGNING_KEY });
const ADMINS = ['@admin:one.test', '@admin:two.test'];
const LOCALS = [`@lu:${SERVER}`, `@lia:${SERVER}`];
const USERS = ['@ann:one.test', '@bea:two.test', '@cid:one.test', '@dan:two.test', ...LOCALS];
/** Whose syncs are compared. */
const VIEWERS = [ALICE, ...LOCALS];

interface Dag {
  readonly roomId: string;
  /** The remote servers' events, in the order they were built. */
  readonly events: readonly GraphEvent[];
  readonly final: GraphEvent;
  readonly expected: ReadonlyMap<StateKey, string>;
  /** Every event of the room, the ones this server created first included. */
  readonly all: ReadonlyMap<string, RoomEvent>;
  readonly reference: ReferenceStates;
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
  const member = (sender: string, target: string, m: string, prev: readonly string[]) =>
    add({ type: 'm.room.member', sender, stateKey: target, content: { membership: m }, prev });
  const power = (sender: string, state: ReadonlyMap<StateKey, RoomEvent>, target: string, prev: readonly string[]) => {
    const pl = state.get(stateKey('m.room.power_levels', ''))!.content;
    const users = { ...(pl.users as Record<string, number>) };
    users[target] = users[target] === 50 ? 0 : 50;
    return add({ type: 'm.room.power_levels', sender, stateKey: '', content: { ...pl, users }, prev });
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
    const action = pick(['join', 'join', 'ban', 'power', 'topic', 'message', 'redact', 'leave', 'invite', 'race', 'race']);
    if (action === 'join') {
      const u = pick(USERS);
      const m = membership(state, u);
      if (m !== 'ban' && m !== 'join') await member(u, u, 'join', prev);
    } else if (action === 'ban' && admins.length > 0) {
      const admin = pick(admins);
      const target = pick([...USERS, ...ADMINS.filter((a) => a !== admin)]);
      if (level(state, target) < level(state, admin) && membership(state, target) !== 'ban') await member(admin, target, 'ban', prev);
    } else if (action === 'power' && admins.length > 0) {
      await power(pick(admins), state, pick(USERS), prev);
    } else if (action === 'topic') {
      const setters = joined.filter((u) => level(state, u) >= 50);
      if (setters.length > 0) await add({ type: 'm.room.topic', sender: pick(setters), stateKey: '', content: { topic: `topic ${i}` }, prev });
    } else if (action === 'message' && joined.length > 0) {
      await add({ type: 'm.room.message', sender: pick(joined), content: { msgtype: 'm.text', body: `message ${i}` }, prev });
    } else if (action === 'redact' && admins.length > 0) {
      const target = built.filter((e) => e.event.type === 'm.room.message' && prev.includes(e.eventId));
      if (target.length > 0) await add({ type: 'm.room.redaction', sender: pick(admins), content: {}, redacts: target[0]!.eventId, prev });
    } else if (action === 'leave') {
      const u = pick(USERS);
      if (membership(state, u) === 'join' || membership(state, u) === 'invite') await member(u, u, 'leave', prev);
    } else if (action === 'invite' && admins.length > 0) {
      const u = pick(USERS);
      if (membership(state, u) === 'leave') await member(pick(admins), u, 'invite', prev);
    } else if (action === 'race') {
      // Two events on the same prev events, about one of this server's users: their own step on
      // one side, an admin's ban or power change on the other. Two steps' worth of events.
      i++;
      const u = pick(LOCALS);
      const m = membership(state, u);
      if (m === 'ban') {
        if (admins.length > 0) await member(pick(admins), u, 'leave', prev);
        continue;
      }
      if (m !== 'join') await member(u, u, 'join', prev);
      else if (rand() < 0.5) await member(u, u, 'leave', prev);
      else await add({ type: 'm.room.message', sender: u, content: { msgtype: 'm.text', body: `still here ${i}` }, prev });
      if (admins.length === 0) continue;
      const admin = pick(admins);
      if (rand() < 0.6 && level(state, u) < level(state, admin)) await member(admin, u, 'ban', prev);
      else await power(admin, state, u, prev);
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
    signingKey: SIGNING_KEY,
    notifier: bus,
    defaultRoomVersion: '10',
    keyRing: keyRingOf(remote1, remote2, home),
    remoteEvents: remoteEventsOf(remote1, remote2),
    // Heads keep two state events parsed beyond the pinned ones: the rest loads when read, as in a big room.
    maxLoadedState: 2,
  });
}

/** The real sync service over the database, with presence off and the other sources empty. */
function syncService(database: Database<Schema>, bus: InProcessBus, rooms: RoomService): SyncService {
  const db = database.db;
  const accountData = new AccountDataService({ db, notifier: bus });
  const isJoined = (userId: string, roomId: string) => isJoinedTo(db, userId, roomId);
  return new SyncService({
    db,
    notifier: bus,
    rooms: rooms.reader,
    accountData,
    filters: new FilterService({ db }),
    typing: new TypingService({ notifier: bus, isJoined }),
    receipts: new ReceiptService({ db, notifier: bus, accountData, isJoined, eventOrder: () => Promise.resolve(undefined) }),
    toDevice: new ToDeviceService({ db, notifier: bus, serverName: SERVER }),
    presence: new PresenceService({ db, notifier: bus, usersSharingRooms: () => Promise.resolve([]), enabled: false }),
  });
}

/** One user's initial sync of one room. */
interface SyncView {
  readonly section: 'join' | 'invite' | 'leave' | 'absent';
  /** join: the room's state as the client holds it after a one-event timeline (key → event id). */
  readonly state?: Record<string, string>;
  readonly summary?: { readonly joined: number | undefined; readonly invited: number | undefined; readonly heroes: string };
  /** join and leave: the ids of the whole timeline's events, sorted. */
  readonly timeline?: string[];
  /** leave: the user's member event as the client holds it (state, then timeline); invite: the invite. */
  readonly member?: string;
}

/** A filter for one room's initial sync (left rooms too), with nothing but the room. */
function roomFilter(roomId: string, limit: number): string {
  return JSON.stringify({
    presence: { types: [] },
    account_data: { types: [] },
    room: { rooms: [roomId], include_leave: true, timeline: { limit }, ephemeral: { types: [] }, account_data: { types: [] } },
  });
}

/** State events folded in order: key → event id, sorted by key. */
function fold(...lists: { events: JsonObject[] }[]): Record<string, string> {
  const out = new Map<string, string>();
  for (const list of lists) {
    for (const e of list.events) {
      if (typeof e.state_key === 'string') out.set(stateKey(e.type as string, e.state_key), e.event_id as string);
    }
  }
  return Object.fromEntries([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The room in `userId`'s initial sync: a whole timeline, and for a joined room also a one-event one. */
async function syncView(sync: SyncService, roomId: string, userId: string, where: string): Promise<SyncView> {
  const whole = await sync.sync({ userId, deviceId: null, filter: roomFilter(roomId, 100) });
  const { join: joined, invite, leave } = whole.rooms;
  if (invite[roomId] !== undefined) {
    const events = invite[roomId].invite_state.events;
    return { section: 'invite', member: events[events.length - 1]!.event_id as string };
  }
  const room = joined[roomId] ?? leave[roomId];
  if (room === undefined) return { section: 'absent' };
  assert.equal(room.timeline.limited, false, `${where}: the whole history fits in one timeline`);
  const timeline = room.timeline.events.map((e) => e.event_id as string).sort();
  if (leave[roomId] !== undefined) {
    return { section: 'leave', timeline, member: fold(room.state, room.timeline)[stateKey('m.room.member', userId)]! };
  }
  // The state a client holds after the last event (the merge, a message): the state before it.
  const last = (await sync.sync({ userId, deviceId: null, filter: roomFilter(roomId, 1) })).rooms.join[roomId];
  assert.ok(last !== undefined, `${where}: still joined`);
  const summary = joined[roomId]!.summary;
  return {
    section: 'join',
    state: fold(last.state, last.timeline),
    summary: { joined: summary['m.joined_member_count'], invited: summary['m.invited_member_count'], heroes: (summary['m.heroes'] ?? []).join(' ') },
    timeline,
  };
}

/** The user's member event in the DAG's final state. */
function finalMember(dag: Dag, userId: string): RoomEvent | undefined {
  const id = dag.expected.get(stateKey('m.room.member', userId));
  return id === undefined ? undefined : dag.all.get(id);
}

/** The events `id` cites, directly or not. */
function ancestors(dag: Dag, id: string): Set<string> {
  const out = new Set<string>();
  const stack = [...dag.all.get(id)!.prev_events];
  while (stack.length > 0) {
    const p = stack.pop()!;
    if (out.has(p)) continue;
    out.add(p);
    stack.push(...dag.all.get(p)!.prev_events);
  }
  return out;
}

/** The section a membership in the final state puts the room in. */
function expectedSection(member: RoomEvent | undefined): SyncView['section'] {
  const m = member?.content.membership;
  if (m === undefined) return 'absent';
  if (m === 'join' || m === 'invite') return m;
  return 'leave';
}

/**
 * What a left room's timeline owes the user whatever the order: the user's own member events
 * before their last, and the events before it sent while they were joined (the state before each
 * says so). Later events, or ones on forks the leave does not cite, depend on where the leave fell
 * on this server's stream.
 */
function owedBeforeLeave(dag: Dag, userId: string, leave: RoomEvent): Set<string> {
  const out = new Set<string>();
  for (const id of [leave.event_id, ...ancestors(dag, leave.event_id)]) {
    const e = dag.all.get(id)!;
    const before = dag.reference.stateBefore(id).get(stateKey('m.room.member', userId));
    const own = e.type === 'm.room.member' && e.state_key === userId;
    if (own || (before !== undefined && dag.all.get(before)!.content.membership === 'join')) out.add(id);
  }
  return out;
}

/** Heroes' candidates: the other members joined or invited, failing those the ones who left. */
function heroCandidates(dag: Dag, userId: string): string[] {
  const others = (memberships: readonly string[]) =>
    [...dag.expected.values()].flatMap((id) => {
      const e = dag.all.get(id)!;
      return e.type === 'm.room.member' && e.state_key !== userId && memberships.includes(e.content.membership as string) ? [e.state_key!] : [];
    });
  const current = others(['join', 'invite']);
  return (current.length > 0 ? current : others(['leave', 'ban'])).sort();
}

const countOf = (dag: Dag, membership: string) => [...dag.expected.values()].filter((id) => dag.all.get(id)!.content.membership === membership).length;

/** Checks one user's view after one order against the DAG's reference. */
function checkView(dag: Dag, userId: string, view: SyncView, arrived: { timeline: ReadonlySet<string>; softFailed: ReadonlySet<string> }, where: string): void {
  const member = finalMember(dag, userId);
  where = `${where}: ${userId}`;
  assert.equal(view.section, expectedSection(member), `${where} is '${member?.content.membership ?? 'absent'}' in the final state`);
  for (const id of view.timeline ?? []) assert.ok(arrived.timeline.has(id), `${where} was served ${id}, not on the timeline`);
  if (view.section === 'invite') assert.equal(view.member, member!.event_id, `${where}: the invite`);
  if (view.section === 'join') {
    // A joined member's client ends with the room's current state, and with history shared
    // sees every event the server accepted.
    assert.deepEqual(view.state, Object.fromEntries([...dag.expected].sort()), `${where}: state`);
    assert.deepEqual(view.timeline, [...arrived.timeline].sort(), `${where}: timeline`);
    const summary = view.summary!;
    assert.equal(summary.joined, countOf(dag, 'join'), `${where}: joined count`);
    assert.equal(summary.invited, countOf(dag, 'invite'), `${where}: invited count`);
    const heroes = summary.heroes === '' ? [] : summary.heroes.split(' ');
    const candidates = heroCandidates(dag, userId);
    assert.equal(heroes.length, Math.min(HERO_COUNT, candidates.length), `${where}: heroes ${summary.heroes} of ${candidates.join(' ')}`);
    for (const h of heroes) assert.ok(candidates.includes(h), `${where}: hero ${h} of ${candidates.join(' ')}`);
  }
  if (view.section === 'leave') {
    if (!arrived.softFailed.has(member!.event_id)) assert.equal(view.member, member!.event_id, `${where}: the leave`);
    for (const id of owedBeforeLeave(dag, userId, member!)) {
      if (!arrived.softFailed.has(id)) assert.ok(view.timeline!.includes(id), `${where}: ${id} is owed`);
    }
  }
}

/**
 * A view as compared across orders: without the events soft-failed in any order (never served,
 * and which ones depends on the order), heroes as the candidates when more than enough, and a
 * left room's timeline cut to what it owes the user.
 */
function comparable(dag: Dag, userId: string, view: SyncView, softFailed: ReadonlySet<string>): SyncView {
  const timeline = (keep: (id: string) => boolean) => view.timeline!.filter((id) => keep(id) && !softFailed.has(id));
  if (view.section === 'join') {
    const candidates = heroCandidates(dag, userId);
    const heroes = candidates.length > HERO_COUNT ? `${HERO_COUNT} of ${candidates.join(' ')}` : view.summary!.heroes.split(' ').sort().join(' ');
    return { ...view, summary: { ...view.summary!, heroes }, timeline: timeline(() => true) };
  }
  if (view.section === 'leave') {
    const leave = finalMember(dag, userId)!;
    const owed = owedBeforeLeave(dag, userId, leave);
    const { member, ...rest } = view;
    return { ...rest, ...(softFailed.has(leave.event_id) ? {} : { member }), timeline: timeline((id) => owed.has(id)) };
  }
  return view;
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
      const g = new RoomGraph(roomId, VERSION, [remote1, remote2, home]);
      const { rows } = await sql<{ json: string }>`select e.json from events e join rooms r on r.room_nid = e.room_nid
        where r.room_id = ${roomId} order by e.stream_ordering`.execute(database.db);
      for (const r of rows) await g.insert(JSON.parse(r.json) as Pdu);
      const dag = await randomDag(g, random(seed));
      if (dag === undefined) continue;
      const reference = await ReferenceStates.compute(VERSION, g.events().map((e) => e.event));
      // Only DAGs whose every event is allowed: what varies is the order, not the verdicts.
      if (reference.rejected.size > 0) continue;
      dags.push({
        roomId,
        events: dag.events,
        final: dag.final,
        expected: reference.stateAfter(dag.final.eventId),
        all: new Map(g.events().map((e) => [e.eventId, e.event])),
        reference,
      });
    }
    await database.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test(`${DAGS} DAGs, each in ${ORDERS} arrival orders: one final state, extremity, member list and sync of the room per local user, equal to the reference`, async () => {
    assert.equal(dags.length, DAGS, 'enough DAGs were built');
    // The forks reach this server's users: some end joined, some removed by an event racing a join of theirs.
    const endJoined = dags.filter((dag) => LOCALS.some((u) => finalMember(dag, u)?.content.membership === 'join'));
    const raced = dags.filter((dag) =>
      LOCALS.some((u) => {
        const last = finalMember(dag, u);
        if (last === undefined || last.content.membership === 'join') return false;
        const joins = [...dag.all.values()].filter((e) => e.type === 'm.room.member' && e.state_key === u && e.content.membership === 'join');
        return joins.some((j) => !ancestors(dag, last.event_id).has(j.event_id) && !ancestors(dag, j.event_id).has(last.event_id));
      }),
    );
    assert.ok(endJoined.length >= 5 && raced.length >= 5, `local users: ${endJoined.length} DAGs end with one joined, ${raced.length} with one removed in a race`);
    let copy = 0;
    for (const [d, dag] of dags.entries()) {
      const seen = new Set<string>();
      /** Events soft-failed in any order. */
      const softFailed = new Set<string>();
      const views: { userId: string; view: SyncView; where: string }[] = [];
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
          const bus = new InProcessBus(await currentStreamPositions(database.db));
          const rooms = service(database, bus);
          for (const e of order) {
            // This server's users' events come back through a remote.
            const server = e.event.sender.slice(e.event.sender.indexOf(':') + 1);
            const [outcome] = await rooms.receive(server === SERVER ? remote1.serverName : server, [e.pdu]);
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

          const statuses = await database.db
            .selectFrom('events as e')
            .innerJoin('rooms as r', 'r.room_nid', 'e.room_nid')
            .select(['e.event_id', 'e.status'])
            .where('r.room_id', '=', dag.roomId)
            .execute();
          const arrived = {
            timeline: new Set(statuses.filter((r) => r.status === 'timeline').map((r) => r.event_id)),
            softFailed: new Set(statuses.filter((r) => r.status === 'soft_failed').map((r) => r.event_id)),
          };
          for (const id of arrived.softFailed) softFailed.add(id);
          const sync = syncService(database, bus, rooms);
          for (const userId of VIEWERS) {
            const view = await syncView(sync, dag.roomId, userId, `${where}: ${userId}`);
            checkView(dag, userId, view, arrived, where);
            views.push({ userId, view, where });
          }
        } finally {
          await database.close();
          rmSync(file, { force: true });
        }
      }
      assert.equal(seen.size, 1, `DAG ${d}: one member list across orders`);
      const first = new Map<string, { view: SyncView; where: string }>();
      for (const { userId, view, where } of views) {
        const c = comparable(dag, userId, view, softFailed);
        const earlier = first.get(userId);
        if (earlier === undefined) first.set(userId, { view: c, where });
        else assert.deepEqual(c, earlier.view, `${where}: ${userId}'s sync differs from ${earlier.where}`);
      }
    }
  });
});
