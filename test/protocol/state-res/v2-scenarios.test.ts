import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { resolveState } from '../../../src/protocol/state-res/index.js';
import { ROOM_ID, RoomGraph, type EventSpec } from '../../support/room-events.js';

const ALICE = '@alice:example.org';
const BOB = '@bob:example.org';
const CAROL = '@carol:example.org';
const EVE = '@eve:example.org';
const PL = stateKey('m.room.power_levels', '');
const JR = stateKey('m.room.join_rules', '');
const TOPIC = stateKey('m.room.topic', '');
const member = (user: string): StateKey => stateKey('m.room.member', user);

const VERSIONS = ['2', '6', '10', '11'];

function graphFor(versionId: string): RoomGraph {
  const version = roomVersions[versionId]!;
  return new RoomGraph(version, (sets, source) => resolveState(ROOM_ID, version, sets, source));
}

function resolve(g: RoomGraph, sets: readonly StateMap[]): Promise<Map<StateKey, string>> {
  return resolveState(ROOM_ID, g.version, sets, g);
}

const join = (user: string, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.member',
  sender: user,
  state_key: user,
  content: { membership: 'join' },
  ...extra,
});
const membership = (sender: string, target: string, m: string, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.member',
  sender,
  state_key: target,
  content: { membership: m },
  ...extra,
});
const powerLevels = (sender: string, content: JsonObject, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.power_levels',
  sender,
  state_key: '',
  content,
  ...extra,
});
const topic = (sender: string, text: string, extra: Partial<EventSpec> = {}): EventSpec => ({
  type: 'm.room.topic',
  sender,
  state_key: '',
  content: { topic: text },
  ...extra,
});

/** create (creator), creator's join, power levels, public join rules, then the others' joins. */
async function baseRoom(
  g: RoomGraph,
  creator: string,
  pl: JsonObject,
  others: readonly string[],
): Promise<RoomEvent> {
  const content: JsonObject = { room_version: g.version.id };
  if (!g.version.implicitRoomCreator) content.creator = creator;
  return g.chain([
    { id: '$create', type: 'm.room.create', sender: creator, state_key: '', content },
    { id: '$creator-join', ...join(creator) },
    { id: '$pl0', ...powerLevels(creator, pl) },
    { id: '$jr0', type: 'm.room.join_rules', sender: creator, state_key: '', content: { join_rule: 'public' } },
    ...others.map((u) => ({ id: `$join-${u.slice(1, u.indexOf(':'))}`, ...join(u) })),
  ]);
}

for (const v of VERSIONS) {
  describe(`state resolution v2, room version ${v}`, () => {
    describe('admins demoting each other at the same time', () => {
      // Carol (100) raises Alice and Bob (60 each) to 80 in two forks, and each then demotes the
      // other. Carol's two changes come first; which demotion is checked first decides.
      async function mutualDemotion(ts: Record<string, number>, ids: Record<string, string>) {
        const g = graphFor(v);
        const base = await baseRoom(g, CAROL, { users: { [CAROL]: 100, [ALICE]: 60, [BOB]: 60 } }, [ALICE, BOB]);
        const users = (a: number, b: number): JsonObject => ({ users: { [CAROL]: 100, [ALICE]: a, [BOB]: b } });
        const a2 = await g.chain(
          [
            powerLevels(CAROL, users(80, 60), { id: ids.a1!, origin_server_ts: ts.a1! }),
            powerLevels(ALICE, users(80, 0), { id: ids.a2!, origin_server_ts: ts.a2! }),
          ],
          [base.event_id],
        );
        const b2 = await g.chain(
          [
            powerLevels(CAROL, users(60, 80), { id: ids.b1!, origin_server_ts: ts.b1! }),
            powerLevels(BOB, users(0, 80), { id: ids.b2!, origin_server_ts: ts.b2! }),
          ],
          [base.event_id],
        );
        const sets = [g.stateAfter(a2.event_id), g.stateAfter(b2.event_id)];
        return { resolved: await resolve(g, sets), a2, b2 };
      }
      const plainIds = { a1: '$a1', a2: '$a2', b1: '$b1', b2: '$b2' };

      test("the earlier fork's demotion is checked first, so the other one wins", async () => {
        const r1 = await mutualDemotion({ a1: 10, a2: 11, b1: 12, b2: 13 }, plainIds);
        assert.equal(r1.resolved.get(PL), r1.b2.event_id);
        const r2 = await mutualDemotion({ b1: 10, b2: 11, a1: 12, a2: 13 }, plainIds);
        assert.equal(r2.resolved.get(PL), r2.a2.event_id);
      });

      test('with equal timestamps the smaller event id is checked first', async () => {
        const same = { a1: 10, a2: 10, b1: 10, b2: 10 };
        const r1 = await mutualDemotion(same, plainIds);
        assert.equal(r1.resolved.get(PL), '$b2');
        const r2 = await mutualDemotion(same, { a1: '$z1', a2: '$z2', b1: '$b1', b2: '$b2' });
        assert.equal(r2.resolved.get(PL), '$z2');
      });

      test('a higher-powered sender is checked first, whatever the timestamps and ids', async () => {
        // Alice (100) lowers the name level; Bob (50) lowers the kick level, earlier and with a
        // smaller id. Alice's change is applied first, so Bob's, still allowed, lands on top.
        const g = graphFor(v);
        const pl0 = { users: { [ALICE]: 100, [BOB]: 50 }, events: { 'm.room.name': 50 }, kick: 50 };
        const base = await baseRoom(g, ALICE, pl0, [BOB]);
        const byBob = await g.add(
          powerLevels(BOB, { ...pl0, kick: 40 }, { id: '$a-bob', origin_server_ts: 10 }),
          [base.event_id],
        );
        const byAlice = await g.add(
          powerLevels(ALICE, { ...pl0, events: { 'm.room.name': 40 } }, { id: '$z-alice', origin_server_ts: 20 }),
          [base.event_id],
        );
        const sets = [g.stateAfter(byAlice.event_id), g.stateAfter(byBob.event_id)];
        assert.equal((await resolve(g, sets)).get(PL), '$a-bob');
      });
    });

    describe('a ban racing a join', () => {
      async function race(banner: string) {
        const g = graphFor(v);
        const base = await baseRoom(g, ALICE, { users: { [ALICE]: 100 } }, [BOB]);
        const ban = await g.add(membership(banner, EVE, 'ban'), [base.event_id]);
        const joined = await g.add(join(EVE), [base.event_id]);
        const resolved = await resolve(g, [g.stateAfter(joined.event_id), g.stateAfter(ban.event_id)]);
        return { resolved, ban, joined };
      }

      test('the ban wins even though the join came later', async () => {
        const { resolved, ban } = await race(ALICE);
        assert.equal(resolved.get(member(EVE)), ban.event_id);
      });

      test('a ban by a user without the ban level is dropped and the join stands', async () => {
        const { resolved, joined } = await race(BOB);
        assert.equal(resolved.get(member(EVE)), joined.event_id);
      });
    });

    describe('conflicting topics', () => {
      test('mainline ordering: a topic based on later power levels wins over a later timestamp', async () => {
        const g = graphFor(v);
        const base = await baseRoom(g, ALICE, { users: { [ALICE]: 100, [BOB]: 50 } }, [BOB]);
        const tA = await g.chain(
          [
            powerLevels(ALICE, { users: { [ALICE]: 100, [BOB]: 50 }, events: { 'm.room.name': 60 } }),
            topic(ALICE, 'from A', { origin_server_ts: 100 }),
          ],
          [base.event_id],
        );
        const tB = await g.add(topic(BOB, 'from B', { origin_server_ts: 200 }), [base.event_id]);
        const resolved = await resolve(g, [g.stateAfter(tB.event_id), g.stateAfter(tA.event_id)]);
        assert.equal(resolved.get(TOPIC), tA.event_id);
      });

      test('on the same mainline position the later timestamp wins', async () => {
        for (const [tsA, tsB, winner] of [
          [100, 200, 'B'],
          [300, 200, 'A'],
        ] as const) {
          const g = graphFor(v);
          const base = await baseRoom(g, ALICE, { users: { [ALICE]: 100, [BOB]: 50 } }, [BOB]);
          const tA = await g.add(topic(ALICE, 'A', { origin_server_ts: tsA }), [base.event_id]);
          const tB = await g.add(topic(BOB, 'B', { origin_server_ts: tsB }), [base.event_id]);
          const resolved = await resolve(g, [g.stateAfter(tA.event_id), g.stateAfter(tB.event_id)]);
          assert.equal(resolved.get(TOPIC), winner === 'A' ? tA.event_id : tB.event_id);
        }
      });
    });

    test('a join-rules change to invite racing a join keeps the joiner out', async () => {
      const g = graphFor(v);
      const base = await baseRoom(g, ALICE, { users: { [ALICE]: 100 } }, [BOB]);
      const jr = await g.add(
        { type: 'm.room.join_rules', sender: ALICE, state_key: '', content: { join_rule: 'invite' } },
        [base.event_id],
      );
      const joined = await g.add(join(EVE), [base.event_id]);
      const resolved = await resolve(g, [g.stateAfter(jr.event_id), g.stateAfter(joined.event_id)]);
      assert.equal(resolved.get(JR), jr.event_id);
      assert.equal(resolved.has(member(EVE)), false);
      assert.equal(resolved.get(member(BOB)), '$join-bob');
    });

    describe('power-level chains', () => {
      // Alice promotes Bob; then Bob promotes Carol, who sets the topic, while in another fork
      // Alice demotes Bob.
      async function chains(withDemotion: boolean) {
        const g = graphFor(v);
        const pl0 = { users: { [ALICE]: 100 }, events: { 'm.room.topic': 50 } };
        const start = await baseRoom(g, ALICE, pl0, [BOB, CAROL]);
        const base = await g.chain(
          [
            powerLevels(ALICE, { ...pl0, users: { [ALICE]: 100, [BOB]: 50 } }, { id: '$pl1' }),
            topic(ALICE, 'first', { id: '$t0' }),
          ],
          [start.event_id],
        );
        const fork1 = await g.chain(
          [
            powerLevels(BOB, { ...pl0, users: { [ALICE]: 100, [BOB]: 50, [CAROL]: 50 } }, { id: '$pl2' }),
            topic(CAROL, 'by carol', { id: '$tc' }),
          ],
          [base.event_id],
        );
        const sets = [g.stateAfter(fork1.event_id)];
        if (withDemotion) {
          const demote = await g.add(
            powerLevels(ALICE, { ...pl0, users: { [ALICE]: 100, [BOB]: 0 } }, { id: '$pl3' }),
            [base.event_id],
          );
          sets.push(g.stateAfter(demote.event_id));
        } else {
          sets.push(g.stateAfter(base.event_id));
        }
        return resolve(g, sets);
      }

      test("the demotion wins and voids Bob's promotion of Carol and Carol's topic", async () => {
        const resolved = await chains(true);
        assert.equal(resolved.get(PL), '$pl3');
        assert.equal(resolved.get(TOPIC), '$t0');
      });

      test("without the demotion, Bob's promotion and Carol's topic stand", async () => {
        const resolved = await chains(false);
        assert.equal(resolved.get(PL), '$pl2');
        assert.equal(resolved.get(TOPIC), '$tc');
      });
    });

    test("the auth difference pulls in an event of one fork's auth chain", async () => {
      // Fork B: Alice changes the name level (earliest). Fork A: Alice promotes Bob (only in A's
      // auth chain), then Bob promotes Carol. Checked in order B, A1, A2, all pass: A2 wins.
      // Without A1 in the full conflicted set, A2 would be checked against B's levels (where Bob
      // has 0) and fail.
      const g = graphFor(v);
      const pl0 = { users: { [ALICE]: 100 } };
      const base = await baseRoom(g, ALICE, pl0, [BOB, CAROL]);
      const b = await g.add(
        powerLevels(ALICE, { ...pl0, events: { 'm.room.name': 60 } }, { id: '$plb', origin_server_ts: 10 }),
        [base.event_id],
      );
      const a2 = await g.chain(
        [
          powerLevels(ALICE, { users: { [ALICE]: 100, [BOB]: 50 } }, { id: '$pla1', origin_server_ts: 20 }),
          powerLevels(BOB, { users: { [ALICE]: 100, [BOB]: 50, [CAROL]: 50 } }, { id: '$pla2', origin_server_ts: 30 }),
        ],
        [base.event_id],
      );
      const resolved = await resolve(g, [g.stateAfter(b.event_id), g.stateAfter(a2.event_id)]);
      assert.equal(resolved.get(PL), '$pla2');
    });

    test('unconflicted state overrides what the checks put in its keys', async () => {
      // Set A holds a topic whose auth events cite a later membership of Carol's (J2) while both
      // sets hold J1: J2 is in the auth difference and passes the checks, but J1 stays.
      const g = graphFor(v);
      const base = await baseRoom(g, ALICE, { users: { [ALICE]: 100 }, events: { 'm.room.topic': 0 } }, [CAROL]);
      const j2 = await g.add(
        { ...join(CAROL), content: { membership: 'join', displayname: 'C' }, id: '$carol-2' },
        [base.event_id],
      );
      const t = await g.add(topic(CAROL, 'hi', { id: '$topic' }), [j2.event_id]);
      const common = g.stateAfter(base.event_id);
      const setA = new Map(common).set(TOPIC, t.event_id);
      const resolved = await resolve(g, [setA, common]);
      assert.equal(resolved.get(member(CAROL)), '$join-carol');
      assert.equal(resolved.get(TOPIC), '$topic');
      for (const [key, id] of common) assert.equal(resolved.get(key), id);
    });

    test('events that fail auth in one fork are dropped', async () => {
      // Bob (level 0) raised himself and set the topic in a fork that accepted both.
      const g = graphFor(v);
      const pl0 = { users: { [ALICE]: 100 } };
      const start = await baseRoom(g, ALICE, pl0, [BOB]);
      const base = await g.add(topic(ALICE, 'ok', { id: '$t0' }), [start.event_id]);
      const bad = await g.chain(
        [
          powerLevels(BOB, { users: { [ALICE]: 100, [BOB]: 100 } }, { id: '$bad-pl' }),
          topic(BOB, 'mine', { id: '$bad-topic' }),
        ],
        [base.event_id],
      );
      const other = await g.add(topic(ALICE, 'newer', { id: '$t1' }), [base.event_id]);
      const resolved = await resolve(g, [g.stateAfter(bad.event_id), g.stateAfter(other.event_id)]);
      assert.equal(resolved.get(PL), '$pl0');
      assert.equal(resolved.get(TOPIC), '$t1');
    });

    test('identical, single and empty inputs', async () => {
      const g = graphFor(v);
      const base = await baseRoom(g, ALICE, { users: { [ALICE]: 100 } }, [BOB]);
      const s = g.stateAfter(base.event_id);
      assert.deepEqual(await resolve(g, [s, s, s]), s);
      assert.deepEqual(await resolve(g, [s]), s);
      assert.deepEqual(await resolve(g, []), new Map());
    });
  });
}
