import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { resolveState } from '../../../src/protocol/state-res/index.js';
import { ROOM_ID, RoomGraph, type EventSpec } from '../../support/room-events.js';

const ALICE = '@alice:example.org';
const BOB = '@bob:example.org';
const EVE = '@eve:example.org';
const PL = stateKey('m.room.power_levels', '');
const JR = stateKey('m.room.join_rules', '');
const TOPIC = stateKey('m.room.topic', '');
const member = (user: string): StateKey => stateKey('m.room.member', user);
const V1 = roomVersions['1']!;
const V2 = roomVersions['2']!;

function graph(): RoomGraph {
  return new RoomGraph(V1, (sets, source) => resolveState(ROOM_ID, V1, sets, source));
}
const resolve = (g: RoomGraph, sets: readonly StateMap[], version = V1): Promise<Map<StateKey, string>> =>
  resolveState(ROOM_ID, version, sets, g);

const spec = (sender: string, type: string, state_key: string, content: JsonObject, id?: string): EventSpec =>
  id === undefined ? { type, sender, state_key, content } : { id, type, sender, state_key, content };
const filler = (n: number): EventSpec[] =>
  Array.from({ length: n }, () => spec(ALICE, 'm.room.name', '', { name: 'x' }));

/** A v1 room: Alice (creator, 100), Bob and Eve joined; power levels `pl`; public. */
async function baseRoom(g: RoomGraph, pl: JsonObject): Promise<RoomEvent> {
  return g.chain([
    spec(ALICE, 'm.room.create', '', { creator: ALICE }, '$create'),
    spec(ALICE, 'm.room.member', ALICE, { membership: 'join' }, '$alice'),
    spec(ALICE, 'm.room.power_levels', '', pl, '$pl0'),
    spec(ALICE, 'm.room.join_rules', '', { join_rule: 'public' }, '$jr0'),
    spec(ALICE, 'm.room.topic', '', { topic: 'start' }, '$t0'),
    spec(BOB, 'm.room.member', BOB, { membership: 'join' }, '$bob'),
  ]);
}

/** Two forks from `base`: `a` after `padA` filler events, `b` after `padB`; returns their states. */
async function forks(g: RoomGraph, base: RoomEvent, a: EventSpec[], padA: number, b: EventSpec[], padB: number) {
  const endA = await g.chain([...filler(padA), ...a], [base.event_id]);
  const endB = await g.chain([...filler(padB), ...b], [base.event_id]);
  return [g.stateAfter(endA.event_id), g.stateAfter(endB.event_id)];
}

describe('state resolution v1', () => {
  describe('power levels', () => {
    const pl0 = { users: { [ALICE]: 100, [BOB]: 50 }, events: { 'm.room.name': 50 }, kick: 50 };
    const byAlice = spec(ALICE, 'm.room.power_levels', '', { ...pl0, events: { 'm.room.name': 40 } }, '$pl-alice');
    const byBob = spec(BOB, 'm.room.power_levels', '', { ...pl0, kick: 40 }, '$pl-bob');

    test('ascending depth: each allowed event replaces the previous, so the deepest wins', async () => {
      const g1 = graph();
      const s1 = await forks(g1, await baseRoom(g1, pl0), [byAlice], 0, [byBob], 2);
      assert.equal((await resolve(g1, s1)).get(PL), '$pl-bob');
      const g2 = graph();
      const s2 = await forks(g2, await baseRoom(g2, pl0), [byAlice], 2, [byBob], 0);
      assert.equal((await resolve(g2, s2)).get(PL), '$pl-alice');
    });

    test('the first event that fails stops the pass', async () => {
      // Alice demotes Bob (shallower); Bob's later change fails against that and is not taken.
      const g = graph();
      const demote = spec(ALICE, 'm.room.power_levels', '', { ...pl0, users: { [ALICE]: 100 } }, '$demote');
      const sets = await forks(g, await baseRoom(g, pl0), [demote], 0, [byBob], 2);
      assert.equal((await resolve(g, sets)).get(PL), '$demote');
    });

    test('at equal depth, descending sha1(event_id) order: the smallest hash is applied last', async () => {
      const ids = ['$one', '$two'];
      const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');
      const last = [...ids].sort((x, y) => (sha1(x) < sha1(y) ? -1 : 1))[0]!;
      for (const [idAlice, idBob] of [ids, [...ids].reverse()]) {
        const g = graph();
        const sets = await forks(
          g,
          await baseRoom(g, pl0),
          [{ ...byAlice, id: idAlice! }],
          1,
          [{ ...byBob, id: idBob! }],
          1,
        );
        assert.equal((await resolve(g, sets)).get(PL), last);
      }
    });

    test('a pass stops at the first failure, even if a later event would pass', async () => {
      // Three states: Alice demotes Bob (shallowest), Bob's change then fails, and a deeper
      // change of Alice's is never reached.
      const g = graph();
      const base = await baseRoom(g, pl0);
      const demote = spec(ALICE, 'm.room.power_levels', '', { ...pl0, users: { [ALICE]: 100 } }, '$demote');
      const [sa, sb] = await forks(g, base, [demote], 0, [byBob], 2);
      const endC = await g.chain([...filler(4), byAlice], [base.event_id]);
      const resolved = await resolve(g, [sa!, sb!, g.stateAfter(endC.event_id)]);
      assert.equal(resolved.get(PL), '$demote');
    });

    test('the resolved power levels allow what the unconflicted state alone would not', async () => {
      // Alice promotes Bob, who then sets the topic deeper than Alice's topic in the other fork.
      const g = graph();
      const pl = { users: { [ALICE]: 100 } };
      const promote = spec(ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }, '$promote');
      const bobTopic = spec(BOB, 'm.room.topic', '', { topic: 'bob' }, '$t-bob');
      const aliceTopic = spec(ALICE, 'm.room.topic', '', { topic: 'alice' }, '$t-alice');
      const sets = await forks(g, await baseRoom(g, pl), [promote, bobTopic], 0, [aliceTopic], 0);
      const resolved = await resolve(g, sets);
      assert.equal(resolved.get(PL), '$promote');
      assert.equal(resolved.get(TOPIC), '$t-bob');
    });

    test('the resolved power levels govern the other keys', async () => {
      // Alice demotes Bob while Bob (50) sets the topic, at greater depth.
      const pl = { users: { [ALICE]: 100, [BOB]: 50 } };
      const g = graph();
      const demote = spec(ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100 } }, '$demote');
      const bobTopic = spec(BOB, 'm.room.topic', '', { topic: 'bob' }, '$t-bob');
      const sets = await forks(g, await baseRoom(g, pl), [demote], 0, [bobTopic], 3);
      const resolved = await resolve(g, sets);
      assert.equal(resolved.get(PL), '$demote');
      assert.equal(resolved.get(TOPIC), '$t0');
    });
  });

  describe('memberships', () => {
    const pl = { users: { [ALICE]: 100 } };
    async function kickRace(kickPad: number, renamePad: number) {
      const g = graph();
      const base = await g.chain(
        [spec(EVE, 'm.room.member', EVE, { membership: 'join' }, '$eve')],
        [(await baseRoom(g, pl)).event_id],
      );
      const kick = spec(ALICE, 'm.room.member', EVE, { membership: 'leave' }, '$kick');
      const rename = spec(EVE, 'm.room.member', EVE, { membership: 'join', displayname: 'E' }, '$rename');
      return { g, sets: await forks(g, base, [kick], kickPad, [rename], renamePad) };
    }

    test('depth decides a kick racing a profile change; v2 applies the kick first either way', async () => {
      // The profile change is a join, which a public room allows after a kick.
      const shallowKick = await kickRace(0, 2);
      assert.equal((await resolve(shallowKick.g, shallowKick.sets)).get(member(EVE)), '$rename');
      assert.equal((await resolve(shallowKick.g, shallowKick.sets, V2)).get(member(EVE)), '$rename');
      const deepKick = await kickRace(2, 0);
      assert.equal((await resolve(deepKick.g, deepKick.sets)).get(member(EVE)), '$kick');
      assert.equal((await resolve(deepKick.g, deepKick.sets, V2)).get(member(EVE)), '$rename');
    });

    test('a ban racing a join: the ban wins at either depth', async () => {
      for (const [banPad, joinPad] of [
        [0, 2],
        [2, 0],
      ] as const) {
        const g = graph();
        const ban = spec(ALICE, 'm.room.member', EVE, { membership: 'ban' }, '$ban');
        const joined = spec(EVE, 'm.room.member', EVE, { membership: 'join' }, '$eve');
        const base = await baseRoom(g, pl);
        // The join must be a conflict: Eve left in the ban's fork before being banned.
        const sets = await forks(g, base, [{ ...joined, id: '$eve-0' }, ban], banPad, [joined], joinPad + 1);
        assert.equal((await resolve(g, sets)).get(member(EVE)), '$ban');
      }
    });

    test('a key only one state holds is no conflict: a join evades the join-rules change', async () => {
      const g = graph();
      // Eve's join is in R, so her topic (deeper than Alice's) passes too.
      const invite = spec(ALICE, 'm.room.join_rules', '', { join_rule: 'invite' }, '$jr-invite');
      const aliceTopic = spec(ALICE, 'm.room.topic', '', { topic: 'a' }, '$t-alice');
      const joined = spec(EVE, 'm.room.member', EVE, { membership: 'join' }, '$eve');
      const eveTopic = spec(EVE, 'm.room.topic', '', { topic: 'e' }, '$t-eve');
      const base = await baseRoom(g, { ...pl, events: { 'm.room.topic': 0 } });
      const sets = await forks(g, base, [invite, aliceTopic], 0, [joined, eveTopic], 1);
      const resolved = await resolve(g, sets);
      assert.equal(resolved.get(JR), '$jr-invite');
      assert.equal(resolved.get(member(EVE)), '$eve');
      assert.equal(resolved.get(TOPIC), '$t-eve');
      // v2 counts the absence as a conflict and rejects the join.
      assert.equal((await resolve(g, sets, V2)).has(member(EVE)), false);
    });
  });

  describe('join rules', () => {
    test('a later join-rules change by a user without the level is not taken', async () => {
      const g = graph();
      const byAlice = spec(ALICE, 'm.room.join_rules', '', { join_rule: 'invite' }, '$jr-alice');
      const byBob = spec(BOB, 'm.room.join_rules', '', { join_rule: 'public' }, '$jr-bob');
      const sets = await forks(g, await baseRoom(g, { users: { [ALICE]: 100 } }), [byAlice], 0, [byBob], 2);
      assert.equal((await resolve(g, sets)).get(JR), '$jr-alice');
    });
  });

  describe('other events', () => {
    const topicBy = (sender: string, id: string) => spec(sender, 'm.room.topic', '', { topic: id }, id);

    test('the deepest event that passes auth wins', async () => {
      const g = graph();
      const base = await baseRoom(g, { users: { [ALICE]: 100, [BOB]: 50 } });
      const sets = await forks(g, base, [topicBy(ALICE, '$ta')], 0, [topicBy(BOB, '$tb')], 2);
      assert.equal((await resolve(g, sets)).get(TOPIC), '$tb');
    });

    test('a deeper event that fails auth is passed over', async () => {
      const g = graph();
      const base = await baseRoom(g, { users: { [ALICE]: 100 } });
      const sets = await forks(g, base, [topicBy(ALICE, '$ta')], 0, [topicBy(BOB, '$tb')], 2);
      assert.equal((await resolve(g, sets)).get(TOPIC), '$ta');
    });

    test('when none passes, the shallowest is taken', async () => {
      const g = graph();
      const base = await baseRoom(g, { users: { [ALICE]: 100 } });
      const sets = await forks(g, base, [topicBy(BOB, '$tb1')], 0, [topicBy(BOB, '$tb2')], 2);
      assert.equal((await resolve(g, sets)).get(TOPIC), '$tb1');
    });
  });

  test('a conflicted event the source lacks drops out', async () => {
    const g = graph();
    const base = await baseRoom(g, { users: { [ALICE]: 100 } });
    const sets = await forks(
      g,
      base,
      [spec(ALICE, 'm.room.topic', '', {}, '$ta')],
      0,
      [spec(ALICE, 'm.room.topic', '', {}, '$tb')],
      2,
    );
    g.events.delete('$tb');
    assert.equal((await resolve(g, sets)).get(TOPIC), '$ta');
  });

  test('unconflicted state is kept as is', async () => {
    const g = graph();
    const base = await baseRoom(g, { users: { [ALICE]: 100 } });
    const topicA = spec(ALICE, 'm.room.topic', '', {}, '$ta');
    const nameB = spec(ALICE, 'm.room.name', '', {}, '$nb');
    const sets = await forks(g, base, [topicA], 0, [nameB], 0);
    const resolved = await resolve(g, sets);
    for (const [key, id] of g.stateAfter(base.event_id)) {
      if (key !== TOPIC) assert.equal(resolved.get(key), id);
    }
    assert.equal(resolved.get(stateKey('m.room.name', '')), '$nb');
  });
});
