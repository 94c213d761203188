// State resolution v2.1 (room version 12), against v2 (room version 11) on graphs of the same
// shape: (a) the first iterative auth checks start from an empty state, not the unconflicted state
// map (MSC4297 problem A); (b) the full conflicted set takes the conflicted state subgraph, the
// events on auth paths between conflicted events, even when every state set's auth chain holds
// them (MSC4297 problem B); (c) creators' infinite power orders their events first in the reverse
// topological power ordering.
//
// In v12 the room id names the create event: the graphs here call it `$create` in room `!create`,
// and no event cites it (RoomGraph selects auth events with authTypesForEvent, which leaves it out).
// The v11 graphs use the usual `!room:example.org`, where every event cites the create event.
// A state set holding an older event than its own auth chains is what a server gets from a partial
// synchronisation (/state_ids from a faulty or stale server): the scenarios MSC4297 was written for.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions, type RoomVersion } from '../../../src/protocol/room-versions.js';
import { resolveState } from '../../../src/protocol/state-res/index.js';
import { EventFactory, naiveAuthChain, ROOM_ID, RoomGraph, type EventSpec } from '../../support/room-events.js';

const ALICE = '@alice:example.org';
const BOB = '@bob:example.org';
const CAROL = '@carol:example.org';
const CHARLIE = '@charlie:example.org';
const PL = stateKey('m.room.power_levels', '');
const JR = stateKey('m.room.join_rules', '');
const TOPIC = stateKey('m.room.topic', '');
const CREATE = stateKey('m.room.create', '');
const member = (user: string): StateKey => stateKey('m.room.member', user);

const V11 = roomVersions['11']!;
const V12 = roomVersions['12']!;
const V12_ROOM = '!create';

function roomIdOf(version: RoomVersion): string {
  return version.createEventRoomId ? V12_ROOM : ROOM_ID;
}

function graphFor(version: RoomVersion): RoomGraph {
  const roomId = roomIdOf(version);
  return new RoomGraph(version, (sets, source) => resolveState(roomId, version, sets, source), new EventFactory(roomId));
}

function resolve(g: RoomGraph, sets: readonly StateMap[]): Promise<Map<StateKey, string>> {
  return resolveState(roomIdOf(g.version), g.version, sets, g);
}

/** A state set as a partial synchronisation might give it: `state` with some keys set to older events. */
function stale(state: ReadonlyMap<StateKey, string>, changes: ReadonlyArray<[StateKey, string]>): Map<StateKey, string> {
  const out = new Map(state);
  for (const [k, id] of changes) out.set(k, id);
  return out;
}

/** The full auth chain of a state set: its events and their auth chains. */
function fullAuthChain(g: RoomGraph, set: StateMap): Set<string> {
  const ids = [...set.values()];
  return new Set([...ids, ...naiveAuthChain(g.events, ids)]);
}

/**
 * A `users` object for the version: `creators` (with their levels) are listed before v12 only; in
 * v12 their level is infinite and they may not be listed. `others` are listed in every version.
 */
function users(version: RoomVersion, creators: Record<string, number>, others: Record<string, number>): JsonObject {
  return version.privilegedCreators ? { ...others } : { ...creators, ...others };
}

const join = (user: string, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.member',
  sender: user,
  state_key: user,
  content: { membership: 'join' },
  ...extra,
});
const leave = (user: string, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.member',
  sender: user,
  state_key: user,
  content: { membership: 'leave' },
  ...extra,
});
const powerLevels = (sender: string, content: JsonObject, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.power_levels',
  sender,
  state_key: '',
  content,
  ...extra,
});
const joinRules = (sender: string, rule: string, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.join_rules',
  sender,
  state_key: '',
  content: { join_rule: rule },
  ...extra,
});
const createEvent = (g: RoomGraph, creator: string, content: JsonObject = {}): EventSpec => ({
  id: '$create',
  type: 'm.room.create',
  sender: creator,
  state_key: '',
  content: { room_version: g.version.id, ...content },
});

describe('the v12 graphs are v12 rooms', () => {
  test('the room id names $create, and no event cites it', async () => {
    const g = graphFor(V12);
    const last = await g.chain([createEvent(g, ALICE), join(ALICE), powerLevels(ALICE, {}), joinRules(ALICE, 'public'), join(BOB)]);
    assert.equal(g.events.get('$create')!.room_id, '!create');
    for (const ev of g.events.values()) assert.equal(ev.auth_events.includes('$create'), false, ev.event_id);
    assert.equal(g.stateAfter(last.event_id).get(CREATE), '$create');
  });
});

describe('(a) v2.1: the first iterative auth checks start from an empty state', () => {
  // MSC4297 problem A. Alice sets the join rule twice (public, then invite) and leaves; Bob stays.
  // One state set has the current join rule; the other, from a partial synchronisation, the
  // outdated one. Both agree that Alice has left.
  //
  //   conflicted:   m.room.join_rules  {$jr-invite, $jr-public}
  //   unconflicted: Alice's member event = $alice-leave, power levels, Bob's join, …
  //   auth difference: {$jr-invite}  ($jr-public is in both chains: Bob's join cites it)
  //   X (power events): [$jr-public, $jr-invite]  (same sender; $jr-public is older)
  //
  // v2, step 2 from the unconflicted state: Alice is not joined there (she left), so both join
  //   rules events fail rule 6 ("sender is not joined"). Step 5 restores nothing for the key,
  //   which is conflicted. The room is left without join rules: a state reset.
  // v2.1, step 2 from an empty state: each event reads the keys the state lacks from its own auth
  //   events, where Alice is joined (and, in v12, a creator). Both pass, in order, and
  //   $jr-invite, the later one, is the room's join rule. Step 5 then puts back $alice-leave.
  async function problemA(version: RoomVersion) {
    const g = graphFor(version);
    const last = await g.chain([
      createEvent(g, ALICE),
      join(ALICE, { id: '$alice-join' }),
      powerLevels(ALICE, { users: users(version, { [ALICE]: 100 }, { [BOB]: 50 }) }, { id: '$pl0' }),
      joinRules(ALICE, 'public', { id: '$jr-public' }),
      join(BOB, { id: '$bob-join' }),
      joinRules(ALICE, 'invite', { id: '$jr-invite' }),
      leave(ALICE, { id: '$alice-leave' }),
    ]);
    const current = g.stateAfter(last.event_id);
    const outdated = stale(current, [[JR, '$jr-public']]);
    return { g, resolved: await resolve(g, [current, outdated]), resolvedOtherOrder: await resolve(g, [outdated, current]) };
  }

  test('v2 (room version 11) loses the join rules', async () => {
    const { resolved, resolvedOtherOrder } = await problemA(V11);
    assert.equal(resolved.has(JR), false, `join rules: ${resolved.get(JR)}`);
    assert.equal(resolvedOtherOrder.has(JR), false);
    assert.equal(resolved.get(member(ALICE)), '$alice-leave');
  });

  test('v2.1 (room version 12) keeps the current join rule; Alice stays gone', async () => {
    const { resolved, resolvedOtherOrder } = await problemA(V12);
    assert.equal(resolved.get(JR), '$jr-invite');
    assert.deepEqual(resolvedOtherOrder, resolved);
    assert.equal(resolved.get(member(ALICE)), '$alice-leave');
    assert.equal(resolved.get(member(BOB)), '$bob-join');
    assert.equal(resolved.get(PL), '$pl0');
    assert.equal(resolved.get(CREATE), '$create');
  });

  // A power-levels variant. Alice raises Bob to 50 ($pl1); Bob, now allowed, sets the join rule
  // to invite ($jr-bob); later Alice demotes him back to 0 ($pl2). One state set holds the old
  // join rule $jr0 again. The power levels ($pl2) are unconflicted.
  //
  //   conflicted:   m.room.join_rules  {$jr-bob, $jr0}
  //   X: [$jr0 (Alice: 100 in v11, infinite in v12), $jr-bob (Bob: 50 per its $pl1)]
  //
  // v2: the checks read power levels from the unconflicted $pl2, where Bob has 0 and the join
  //   rules need 50: $jr-bob fails, and $jr0 is the result: Bob's change, made while he had the
  //   power, is undone by a demotion that came after it.
  // v2.1: $jr0 passes on its own auth events; $jr-bob then reads the power levels its own auth
  //   events give ($pl1: the state has none, as no power levels event is in X), passes, and wins.
  //   Step 5 puts back $pl2.
  async function demotedAfterwards(version: RoomVersion) {
    const g = graphFor(version);
    const creator = { [ALICE]: 100 };
    const last = await g.chain([
      createEvent(g, ALICE),
      join(ALICE),
      powerLevels(ALICE, { users: users(version, creator, {}) }, { id: '$pl0' }),
      joinRules(ALICE, 'public', { id: '$jr0' }),
      join(BOB, { id: '$bob-join' }),
      powerLevels(ALICE, { users: users(version, creator, { [BOB]: 50 }) }, { id: '$pl1' }),
      joinRules(BOB, 'invite', { id: '$jr-bob' }),
      powerLevels(ALICE, { users: users(version, creator, { [BOB]: 0 }) }, { id: '$pl2' }),
    ]);
    assert.ok(g.events.get('$jr-bob')!.auth_events.includes('$pl1'));
    const current = g.stateAfter(last.event_id);
    return resolve(g, [current, stale(current, [[JR, '$jr0']])]);
  }

  test('v2 (room version 11): the later demotion undoes the join-rule change', async () => {
    const resolved = await demotedAfterwards(V11);
    assert.equal(resolved.get(JR), '$jr0');
    assert.equal(resolved.get(PL), '$pl2');
  });

  test('v2.1 (room version 12): the join-rule change stands, judged by its own auth events', async () => {
    const resolved = await demotedAfterwards(V12);
    assert.equal(resolved.get(JR), '$jr-bob');
    assert.equal(resolved.get(PL), '$pl2');
  });
});

describe('(b) v2.1: the conflicted state subgraph joins the full conflicted set', () => {
  // MSC4297 problem B. Alice (the creator) raises Bob to 100 ($pl1); Bob raises Charlie to 50
  // ($pl2); Charlie sets the topic. One state set, from a partial synchronisation, holds the
  // first power levels $pl0 again, but the topic in it cites $pl2.
  //
  //   conflicted:   m.room.power_levels {$pl2, $pl0}
  //   both full auth chains hold $pl0, $pl1 and $pl2 (through the topic), so the auth
  //   difference is empty and v2's full conflicted set is {$pl0, $pl2}.
  //   The conflicted state subgraph: the auth path $pl2 → $pl1 → $pl0, so v2.1's full conflicted
  //   set is {$pl0, $pl1, $pl2}.
  //
  // v2: X = [$pl0, $pl2] ($pl0 is an auth ancestor of $pl2). $pl0 passes (the first power levels).
  //   $pl2 is then judged against $pl0, where Bob has 0: rejected. Result $pl0: Charlie's and
  //   Bob's promotions are lost, a state reset.
  // v2.1: X = [$pl0, $pl1, $pl2]. $pl0 passes, $pl1 (Alice, a creator) passes, and $pl2 is judged
  //   against $pl1, where Bob has 100: it passes. Result $pl2. Without $pl1 in X, v2.1 too would
  //   judge $pl2 against $pl0 and end at $pl0 (the empty start changes nothing here: every key
  //   the checks read is the same in the unconflicted state and in the events' auth events).
  async function problemB(version: RoomVersion) {
    const g = graphFor(version);
    const creator = { [ALICE]: 100 };
    const last = await g.chain([
      createEvent(g, ALICE),
      join(ALICE),
      powerLevels(ALICE, { users: users(version, creator, {}) }, { id: '$pl0' }),
      joinRules(ALICE, 'public'),
      join(BOB),
      join(CHARLIE),
      powerLevels(ALICE, { users: users(version, creator, { [BOB]: 100 }) }, { id: '$pl1' }),
      powerLevels(BOB, { users: users(version, creator, { [BOB]: 100, [CHARLIE]: 50 }) }, { id: '$pl2' }),
      { id: '$topic', type: 'm.room.topic', sender: CHARLIE, state_key: '', content: { topic: 'by Charlie' } },
    ]);
    assert.deepEqual(
      g.events.get('$pl2')!.auth_events.filter((id) => g.events.get(id)!.type === 'm.room.power_levels'),
      ['$pl1'],
    );
    assert.ok(g.events.get('$topic')!.auth_events.includes('$pl2'));
    const current = g.stateAfter(last.event_id);
    const outdated = stale(current, [[PL, '$pl0']]);
    // The premise: $pl1 is in neither state set, and in every full auth chain (so not in the auth
    // difference); only the subgraph brings it in.
    for (const set of [current, outdated]) {
      assert.equal([...set.values()].includes('$pl1'), false);
      assert.ok(fullAuthChain(g, set).has('$pl1'));
    }
    return { resolved: await resolve(g, [current, outdated]), resolvedOtherOrder: await resolve(g, [outdated, current]) };
  }

  test('v2 (room version 11) resets the power levels to the first ones', async () => {
    const { resolved, resolvedOtherOrder } = await problemB(V11);
    assert.equal(resolved.get(PL), '$pl0');
    assert.equal(resolvedOtherOrder.get(PL), '$pl0');
  });

  test('v2.1 (room version 12) replays $pl1 between them and keeps $pl2', async () => {
    const { resolved, resolvedOtherOrder } = await problemB(V12);
    assert.equal(resolved.get(PL), '$pl2');
    assert.deepEqual(resolvedOtherOrder, resolved);
    assert.equal(resolved.get(TOPIC), '$topic');
  });

  test('a longer path: every event between the two ends is replayed, member events too', async () => {
    // Alice raises Bob ($pl1); Carol joins; Bob raises Carol ($pl2, citing Carol's join); Carol,
    // now at 100, raises Charlie ($pl3). One state set holds $pl0. The path $pl3 → $pl2 → $pl1 →
    // $pl0 runs through no event the sets disagree on but its ends, and each step needs the one
    // before: v2.1 replays all and keeps $pl3; v2 judges $pl3 against $pl0 and keeps $pl0.
    for (const [version, expected] of [
      [V11, '$pl0'],
      [V12, '$pl3'],
    ] as const) {
      const g = graphFor(version);
      const creator = { [ALICE]: 100 };
      const last = await g.chain([
        createEvent(g, ALICE),
        join(ALICE),
        powerLevels(ALICE, { users: users(version, creator, {}) }, { id: '$pl0' }),
        joinRules(ALICE, 'public'),
        join(BOB),
        join(CHARLIE),
        powerLevels(ALICE, { users: users(version, creator, { [BOB]: 100 }) }, { id: '$pl1' }),
        join(CAROL, { id: '$carol-join' }),
        powerLevels(BOB, { users: users(version, creator, { [BOB]: 100, [CAROL]: 100 }) }, { id: '$pl2' }),
        powerLevels(CAROL, { users: users(version, creator, { [BOB]: 100, [CAROL]: 100, [CHARLIE]: 50 }) }, { id: '$pl3' }),
        { id: '$topic', type: 'm.room.topic', sender: CHARLIE, state_key: '', content: { topic: 't' } },
      ]);
      assert.ok(g.events.get('$pl3')!.auth_events.includes('$carol-join'));
      const current = g.stateAfter(last.event_id);
      const resolved = await resolve(g, [current, stale(current, [[PL, '$pl0']])]);
      assert.equal(resolved.get(PL), expected, `room version ${version.id}`);
    }
  });
});

describe("(c) creators' infinite power orders their events first", () => {
  // Two concurrent power-levels changes on top of $pl0: one by a creator, one by Bob (100, the
  // highest listed level). Bob's is older and has the smaller id, so on power alone being equal
  // it would be checked first. Both pass whichever comes first (neither touches the other's
  // entry), so the one checked last is the result.
  //
  // v12: the creator's power is infinite, so its event comes first in the reverse topological
  //   power ordering; Bob's comes last and wins.
  // v11: the creator is listed at 100 like Bob; equal power, Bob's older event comes first and
  //   the creator's wins.
  async function race(version: RoomVersion, options: { creator: string; additional?: string[]; ids?: [string, string]; bobTs?: number }) {
    const g = graphFor(version);
    const [creatorId, bobId] = options.ids ?? ['$z-creator', '$a-bob'];
    const listed: Record<string, number> = { [ALICE]: 100 };
    for (const u of options.additional ?? []) listed[u] = 100;
    const pl0: JsonObject = { users: users(version, listed, { [BOB]: 100 }), kick: 50, events: { 'm.room.name': 50 } };
    const base = await g.chain([
      createEvent(g, ALICE, options.additional === undefined ? {} : { additional_creators: options.additional }),
      join(ALICE),
      powerLevels(ALICE, pl0, { id: '$pl0' }),
      joinRules(ALICE, 'public'),
      join(BOB),
      ...(options.additional ?? []).map((u) => join(u)),
    ]);
    const byCreator = await g.add(
      powerLevels(options.creator, { ...pl0, events: { 'm.room.name': 60 } }, { id: creatorId, origin_server_ts: 5_000 }),
      [base.event_id],
    );
    const byBob = await g.add(
      powerLevels(BOB, { ...pl0, kick: 40 }, { id: bobId, origin_server_ts: options.bobTs ?? 4_000 }),
      [base.event_id],
    );
    const sets = [g.stateAfter(byCreator.event_id), g.stateAfter(byBob.event_id)];
    const resolved = await resolve(g, sets);
    assert.deepEqual(await resolve(g, [...sets].reverse()), resolved, 'the order of the state sets does not matter');
    return resolved.get(PL);
  }

  test("v12: the creator's change is checked first, so Bob's lands on top", async () => {
    assert.equal(await race(V12, { creator: ALICE }), '$a-bob');
  });

  test("v12: so is an additional creator's", async () => {
    assert.equal(await race(V12, { creator: CAROL, additional: [CAROL] }), '$a-bob');
  });

  test("v11: the creator at 100 ties with Bob; Bob's older change comes first and the creator's wins", async () => {
    assert.equal(await race(V11, { creator: ALICE }), '$z-creator');
  });

  test('v12: between two creators (both infinite) the older event comes first', async () => {
    // Carol (an additional creator) plays Bob's part: equal, infinite power, then timestamps.
    const g = graphFor(V12);
    const pl0: JsonObject = { users: {}, kick: 50, events: { 'm.room.name': 50 } };
    const base = await g.chain([
      createEvent(g, ALICE, { additional_creators: [CAROL] }),
      join(ALICE),
      powerLevels(ALICE, pl0),
      joinRules(ALICE, 'public'),
      join(CAROL),
    ]);
    const run = async (aliceTs: number, carolTs: number, suffix: string) => {
      const a = await g.add(powerLevels(ALICE, { ...pl0, kick: 40 }, { id: `$alice-${suffix}`, origin_server_ts: aliceTs }), [base.event_id]);
      const c = await g.add(powerLevels(CAROL, { ...pl0, kick: 30 }, { id: `$carol-${suffix}`, origin_server_ts: carolTs }), [base.event_id]);
      return (await resolve(g, [g.stateAfter(a.event_id), g.stateAfter(c.event_id)])).get(PL);
    };
    assert.equal(await run(10_000, 20_000, '1'), '$carol-1');
    assert.equal(await run(30_000, 20_000, '2'), '$alice-2');
  });

  test("v12: the creator's demotion comes first, so Bob's concurrent join-rule change fails", async () => {
    // Alice demotes Bob from 100 to 0 ($demote, ts 5000); Bob, concurrently and earlier (ts
    // 4000), sets the join rule to invite ($jr-bob). The sets disagree on the power levels and on
    // the join rules ($jr0 / $jr-bob); Bob's join, on the auth path $jr-bob → $bob-join → $jr0, is
    // in the conflicted state subgraph.
    //   X sorted: $jr0 (Alice, infinite), $demote (Alice, infinite), $bob-join (Bob: 100 per
    //   $pl0), $jr-bob (Bob: 100). Infinite power puts $demote before Bob's events although it
    //   is the newer one; $jr-bob is then judged against $demote, where Bob has 0: rejected.
    //   Had Bob's events come first (were Alice's power finite and below his), $jr-bob would
    //   have passed against $pl0 and been the join rule.
    const g = graphFor(V12);
    const pl0: JsonObject = { users: { [BOB]: 100 } };
    const base = await g.chain([
      createEvent(g, ALICE),
      join(ALICE),
      powerLevels(ALICE, pl0, { id: '$pl0' }),
      joinRules(ALICE, 'public', { id: '$jr0' }),
      join(BOB, { id: '$bob-join' }),
    ]);
    const demote = await g.add(powerLevels(ALICE, { users: { [BOB]: 0 } }, { id: '$demote', origin_server_ts: 5_000 }), [base.event_id]);
    const change = await g.add(joinRules(BOB, 'invite', { id: '$jr-bob', origin_server_ts: 4_000 }), [base.event_id]);
    const sets = [g.stateAfter(change.event_id), g.stateAfter(demote.event_id)];
    for (const resolved of [await resolve(g, sets), await resolve(g, [...sets].reverse())]) {
      assert.equal(resolved.get(PL), '$demote');
      assert.equal(resolved.get(JR), '$jr0');
      assert.equal(resolved.get(member(BOB)), '$bob-join');
    }
  });

  test('v12: a kick by the creator and a ban by a user at 100 of the same target, ordered by power', async () => {
    // Alice kicks Dave; Bob (100) bans Dave, earlier. The kick, by infinite power, is checked
    // first and passes; the ban is then checked (Bob can ban Dave, who has left) and passes too:
    // the ban is the result. In v11, with Alice at 100 too, the ban (older) comes first and the
    // kick then passes (100 ≥ the ban level is needed to unban: she has it): the kick wins.
    const DAVE = '@dave:example.org';
    const outcome = async (version: RoomVersion): Promise<RoomEvent | undefined> => {
      const g = graphFor(version);
      const base = await g.chain([
        createEvent(g, ALICE),
        join(ALICE),
        powerLevels(ALICE, { users: users(version, { [ALICE]: 100 }, { [BOB]: 100 }) }),
        joinRules(ALICE, 'public'),
        join(BOB),
        join(DAVE),
      ]);
      const kick = await g.add(
        { id: '$z-kick', type: 'm.room.member', sender: ALICE, state_key: DAVE, content: { membership: 'leave' }, origin_server_ts: 5_000 },
        [base.event_id],
      );
      const ban = await g.add(
        { id: '$a-ban', type: 'm.room.member', sender: BOB, state_key: DAVE, content: { membership: 'ban' }, origin_server_ts: 4_000 },
        [base.event_id],
      );
      const resolved = await resolve(g, [g.stateAfter(kick.event_id), g.stateAfter(ban.event_id)]);
      const id = resolved.get(member(DAVE));
      return id === undefined ? undefined : g.events.get(id);
    };
    assert.equal((await outcome(V12))?.event_id, '$a-ban');
    assert.equal((await outcome(V11))?.event_id, '$z-kick');
  });
});
