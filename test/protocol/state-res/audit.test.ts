// State resolution v2 checked against the spec's text (rooms/fragments/v2-state-res.md): targeted
// cases for each definition and step, and a comparison on random forked rooms with a direct,
// slow transcription of the algorithm (every definition computed as written, no shortcuts).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { authTypesForEvent } from '../../../src/protocol/auth-events.js';
import { checkEventAuth } from '../../../src/protocol/event-auth.js';
import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions, type RoomVersion } from '../../../src/protocol/room-versions.js';
import { isPowerEvent, resolveState, type StateResEventSource } from '../../../src/protocol/state-res/index.js';
import { EventFactory, ROOM_ID, RoomGraph, type EventSpec } from '../../support/room-events.js';

const ALICE = '@alice:example.org';
const BOB = '@bob:example.org';
const CAROL = '@carol:example.org';
const CREATE = stateKey('m.room.create', '');
const PL = stateKey('m.room.power_levels', '');
const JR = stateKey('m.room.join_rules', '');
const TOPIC = stateKey('m.room.topic', '');
const member = (user: string): StateKey => stateKey('m.room.member', user);

/** A source over a fixed set of events, optionally naming the rejected ones. */
class MapSource implements StateResEventSource {
  readonly events = new Map<string, RoomEvent>();
  constructor(
    events: readonly RoomEvent[],
    private readonly rejected?: ReadonlySet<string>,
  ) {
    for (const e of events) this.events.set(e.event_id, e);
  }
  getEvents(ids: readonly string[]): Map<string, RoomEvent> {
    const out = new Map<string, RoomEvent>();
    for (const id of ids) {
      const e = this.events.get(id);
      if (e !== undefined) out.set(id, e);
    }
    return out;
  }
  rejectedAmong(ids: readonly string[]): Set<string> {
    return new Set(ids.filter((id) => this.rejected?.has(id) === true));
  }
}

/** A hand-built room: create, Alice's join, power levels, public join rules, Bob's join. */
function smallRoom(version: RoomVersion, f: EventFactory, plContent: JsonObject) {
  const createContent: JsonObject = version.implicitRoomCreator ? {} : { creator: ALICE };
  const create = f.make({ id: '$create', type: 'm.room.create', sender: ALICE, state_key: '', content: createContent });
  const aliceJoin = f.make({
    id: '$alice-join', type: 'm.room.member', sender: ALICE, state_key: ALICE,
    content: { membership: 'join' }, auth_events: ['$create'],
  });
  const pl = f.make({
    id: '$pl', type: 'm.room.power_levels', sender: ALICE, state_key: '',
    content: plContent, auth_events: ['$create', '$alice-join'],
  });
  const jr = f.make({
    id: '$jr', type: 'm.room.join_rules', sender: ALICE, state_key: '',
    content: { join_rule: 'public' }, auth_events: ['$create', '$alice-join', '$pl'],
  });
  const bobJoin = f.make({
    id: '$bob-join', type: 'm.room.member', sender: BOB, state_key: BOB,
    content: { membership: 'join' }, auth_events: ['$create', '$pl', '$jr'],
  });
  const state = new Map<StateKey, string>([
    [CREATE, create.event_id],
    [member(ALICE), aliceJoin.event_id],
    [PL, pl.event_id],
    [JR, jr.event_id],
    [member(BOB), bobJoin.event_id],
  ]);
  return { events: [create, aliceJoin, pl, jr, bobJoin], state };
}

const VERSIONS = ['2', '10', '11'];

for (const v of VERSIONS) {
  const version = roomVersions[v]!;

  describe(`state resolution v2 against the spec, room version ${v}`, () => {
    test('conflicted state: a key missing from one set is conflicted and must pass auth', async () => {
      // "If a given key K is present in every S_i with the same value V ... unconflicted;
      // otherwise V belongs to the conflicted state set."
      const f = new EventFactory();
      const room = smallRoom(version, f, { users: { [ALICE]: 100 }, events: { 'm.room.topic': 50 } });
      const topicByBob = f.make({
        id: '$topic-bob', type: 'm.room.topic', sender: BOB, state_key: '',
        content: { topic: 'x' }, auth_events: ['$create', '$pl', '$bob-join'],
      });
      const topicByAlice = f.make({
        id: '$topic-alice', type: 'm.room.topic', sender: ALICE, state_key: '',
        content: { topic: 'y' }, auth_events: ['$create', '$pl', '$alice-join'],
      });
      const source = new MapSource([...room.events, topicByBob, topicByAlice]);
      const withBob = new Map(room.state).set(TOPIC, topicByBob.event_id);
      const withAlice = new Map(room.state).set(TOPIC, topicByAlice.event_id);
      // Bob (0) lacks the topic level: as the only holder of the key, his topic is still checked.
      const r1 = await resolveState(ROOM_ID, version, [withBob, room.state], source);
      assert.equal(r1.has(TOPIC), false);
      // Alice's passes.
      const r2 = await resolveState(ROOM_ID, version, [withAlice, room.state], source);
      assert.equal(r2.get(TOPIC), topicByAlice.event_id);
    });

    test('iterative auth checks: the partial state wins over the event’s own auth events', async () => {
      // Bob's topic cites the power levels that let him set it; the conflicted power levels that
      // the checks apply first take that away. The state, not the citation, decides.
      const f = new EventFactory();
      const pl0 = { users: { [ALICE]: 100, [BOB]: 50 }, events: { 'm.room.topic': 50 } };
      const room = smallRoom(version, f, pl0);
      const demote = f.make({
        id: '$pl-demote', type: 'm.room.power_levels', sender: ALICE, state_key: '',
        content: { ...pl0, users: { [ALICE]: 100 } }, auth_events: ['$create', '$alice-join', '$pl'],
      });
      const topic = f.make({
        id: '$topic-bob', type: 'm.room.topic', sender: BOB, state_key: '',
        content: { topic: 'x' }, auth_events: ['$create', '$pl', '$bob-join'],
      });
      const source = new MapSource([...room.events, demote, topic]);
      const a = new Map(room.state).set(PL, demote.event_id);
      const b = new Map(room.state).set(TOPIC, topic.event_id);
      const resolved = await resolveState(ROOM_ID, version, [a, b], source);
      assert.equal(resolved.get(PL), demote.event_id);
      assert.equal(resolved.has(TOPIC), false);
      // Without the demotion the same topic stands.
      const again = await resolveState(ROOM_ID, version, [room.state, b], source);
      assert.equal(again.get(TOPIC), topic.event_id);
    });

    test('iterative auth checks: a key the state lacks comes from unrejected auth events', async () => {
      // No state holds Carol's membership, yet her join is in every set's auth chain (through her
      // topic in one set and her room name in the other), so it is not in the full conflicted
      // set either. "If a (event_type, state_key) key that is required ... is not present in the
      // state, then the appropriate state event from the event's auth_events is used if the auth
      // event is not rejected."
      const f = new EventFactory();
      const room = smallRoom(version, f, { users: { [ALICE]: 100 }, events: { 'm.room.topic': 0, 'm.room.name': 0 } });
      const carolJoin = f.make({
        id: '$carol-join', type: 'm.room.member', sender: CAROL, state_key: CAROL,
        content: { membership: 'join' }, auth_events: ['$create', '$pl', '$jr'],
      });
      const topic = f.make({
        id: '$topic-carol', type: 'm.room.topic', sender: CAROL, state_key: '',
        content: { topic: 'x' }, auth_events: ['$create', '$pl', '$carol-join'],
      });
      const name = f.make({
        id: '$name-carol', type: 'm.room.name', sender: CAROL, state_key: '',
        content: { name: 'n' }, auth_events: ['$create', '$pl', '$carol-join'],
      });
      const all = [...room.events, carolJoin, topic, name];
      const sets = [
        new Map(room.state).set(TOPIC, topic.event_id),
        new Map(room.state).set(stateKey('m.room.name', ''), name.event_id),
      ];
      const accepted = await resolveState(ROOM_ID, version, sets, new MapSource(all));
      assert.equal(accepted.get(TOPIC), topic.event_id);
      assert.equal(accepted.get(stateKey('m.room.name', '')), name.event_id);
      assert.equal(accepted.has(member(CAROL)), false);
      const rejected = await resolveState(ROOM_ID, version, sets, new MapSource(all, new Set(['$carol-join'])));
      assert.equal(rejected.has(TOPIC), false);
      assert.equal(rejected.has(stateKey('m.room.name', '')), false);
    });

    test('power ordering: citing no power levels, the creator counts 100', async () => {
      // Two join-rules changes: Alice's cites no power levels (so her level comes from the
      // create event: 100), Bob's cites power levels giving him 50. Alice's is ordered first
      // even though it is later, so Bob's, applied last, stands. (Were Alice counted 0, Bob's
      // join, which only Bob's change cites and so is in the auth difference, and then Bob's
      // change would go first.)
      const f = new EventFactory();
      const pl0 = { users: { [ALICE]: 100, [BOB]: 50 } };
      const room = smallRoom(version, f, pl0);
      const byAlice = f.make({
        id: '$jr-alice', type: 'm.room.join_rules', sender: ALICE, state_key: '',
        content: { join_rule: 'invite' }, auth_events: ['$create', '$alice-join'], origin_server_ts: 50,
      });
      const byBob = f.make({
        id: '$jr-bob', type: 'm.room.join_rules', sender: BOB, state_key: '',
        content: { join_rule: 'knock' }, auth_events: ['$create', '$pl', '$bob-join'], origin_server_ts: 40,
      });
      const source = new MapSource([...room.events, byAlice, byBob]);
      const sets = [new Map(room.state).set(JR, byAlice.event_id), new Map(room.state).set(JR, byBob.event_id)];
      assert.equal((await resolveState(ROOM_ID, version, sets, source)).get(JR), byBob.event_id);
    });

    test('mainline ordering: same position, same timestamp: the smaller event id is applied first', async () => {
      const f = new EventFactory();
      const room = smallRoom(version, f, { users: { [ALICE]: 100 }, events: { 'm.room.topic': 0 } });
      const topic = (id: string, text: string): RoomEvent =>
        f.make({
          id, type: 'm.room.topic', sender: ALICE, state_key: '', content: { topic: text },
          auth_events: ['$create', '$pl', '$alice-join'], origin_server_ts: 77,
        });
      const t1 = topic('$topic-a', 'a');
      const t2 = topic('$topic-b', 'b');
      const source = new MapSource([...room.events, t1, t2]);
      const sets = [new Map(room.state).set(TOPIC, t2.event_id), new Map(room.state).set(TOPIC, t1.event_id)];
      // $topic-a < $topic-b: a is applied first, b last.
      assert.equal((await resolveState(ROOM_ID, version, sets, source)).get(TOPIC), '$topic-b');
    });

    test('mainline ordering: an event citing no power levels sorts before those that do', async () => {
      // Position ∞ is the greatest, so such an event is applied first and the other one wins,
      // whatever the timestamps.
      const f = new EventFactory();
      const room = smallRoom(version, f, { users: { [ALICE]: 100 }, events: { 'm.room.topic': 0 } });
      const noPl = f.make({
        id: '$topic-nopl', type: 'm.room.topic', sender: ALICE, state_key: '', content: { topic: 'a' },
        auth_events: ['$create', '$alice-join'], origin_server_ts: 90,
      });
      const withPl = f.make({
        id: '$topic-pl', type: 'm.room.topic', sender: ALICE, state_key: '', content: { topic: 'b' },
        auth_events: ['$create', '$pl', '$alice-join'], origin_server_ts: 10,
      });
      const source = new MapSource([...room.events, noPl, withPl]);
      const sets = [new Map(room.state).set(TOPIC, noPl.event_id), new Map(room.state).set(TOPIC, withPl.event_id)];
      assert.equal((await resolveState(ROOM_ID, version, sets, source)).get(TOPIC), withPl.event_id);
    });
  });
}

describe('power events', () => {
  const f = new EventFactory();
  const ev = (spec: EventSpec): RoomEvent => f.make(spec);
  test('power levels and join rules are; kicks and bans by another are; the rest is not', () => {
    assert.equal(isPowerEvent(ev({ type: 'm.room.power_levels', sender: ALICE, state_key: '' })), true);
    assert.equal(isPowerEvent(ev({ type: 'm.room.join_rules', sender: ALICE, state_key: '' })), true);
    const m = (sender: string, target: string, membership: string): RoomEvent =>
      ev({ type: 'm.room.member', sender, state_key: target, content: { membership } });
    assert.equal(isPowerEvent(m(ALICE, BOB, 'leave')), true);
    assert.equal(isPowerEvent(m(ALICE, BOB, 'ban')), true);
    assert.equal(isPowerEvent(m(BOB, BOB, 'leave')), false);
    assert.equal(isPowerEvent(m(BOB, BOB, 'ban')), false);
    assert.equal(isPowerEvent(m(ALICE, BOB, 'invite')), false);
    assert.equal(isPowerEvent(m(BOB, BOB, 'join')), false);
    assert.equal(isPowerEvent(ev({ type: 'm.room.topic', sender: ALICE, state_key: '' })), false);
    // Not state: no power event.
    assert.equal(isPowerEvent(ev({ type: 'm.room.power_levels', sender: ALICE })), false);
  });
});

// ---------------------------------------------------------------------------------------------
// A direct transcription of the spec's algorithm, to compare with on random rooms.

function authChainOf(events: ReadonlyMap<string, RoomEvent>, id: string, memo: Map<string, Set<string>>): Set<string> {
  const known = memo.get(id);
  if (known !== undefined) return known;
  const out = new Set<string>();
  for (const a of events.get(id)?.auth_events ?? []) {
    out.add(a);
    for (const x of authChainOf(events, a, memo)) out.add(x);
  }
  memo.set(id, out);
  return out;
}

function specPowerEvent(e: RoomEvent): boolean {
  if (e.state_key === undefined) return false;
  if (e.type === 'm.room.power_levels' || e.type === 'm.room.join_rules') return true;
  return e.type === 'm.room.member' && (e.content.membership === 'leave' || e.content.membership === 'ban') &&
    e.sender !== e.state_key;
}

/** The sender's level "when looking at their auth_events" (these rooms use integer levels). */
function specSenderLevel(events: ReadonlyMap<string, RoomEvent>, e: RoomEvent, version: RoomVersion): number {
  const auth = e.auth_events.map((a) => events.get(a)).filter((a): a is RoomEvent => a !== undefined);
  const pl = auth.find((a) => a.type === 'm.room.power_levels' && a.state_key === '');
  if (pl !== undefined) {
    const users = pl.content.users as Record<string, number> | undefined;
    return users?.[e.sender] ?? (pl.content.users_default as number | undefined) ?? 0;
  }
  const create = auth.find((a) => a.type === 'm.room.create' && a.state_key === '');
  if (create === undefined) return 0;
  const creator = version.implicitRoomCreator ? create.sender : create.content.creator;
  return creator === e.sender ? 100 : 0;
}

function plOf(events: ReadonlyMap<string, RoomEvent>, e: RoomEvent): string | undefined {
  return e.auth_events.find((a) => {
    const x = events.get(a);
    return x?.type === 'm.room.power_levels' && x.state_key === '';
  });
}

function specIterative(
  events: ReadonlyMap<string, RoomEvent>,
  version: RoomVersion,
  base: ReadonlyMap<StateKey, string>,
  list: readonly string[],
): Map<StateKey, string> {
  const state = new Map(base);
  for (const id of list) {
    const e = events.get(id)!;
    const authState = new Map<StateKey, RoomEvent>();
    for (const a of e.auth_events) {
      const x = events.get(a);
      if (x?.state_key !== undefined) authState.set(stateKey(x.type, x.state_key), x);
    }
    for (const k of authTypesForEvent(e, version)) {
      const inState = state.get(k);
      if (inState !== undefined) authState.set(k, events.get(inState)!);
    }
    if (checkEventAuth(e, authState, version).allowed) state.set(stateKey(e.type, e.state_key!), id);
  }
  return state;
}

function specResolve(
  events: ReadonlyMap<string, RoomEvent>,
  version: RoomVersion,
  sets: readonly StateMap[],
): Map<StateKey, string> {
  const memo = new Map<string, Set<string>>();
  // Unconflicted state map and conflicted state set.
  const keys = new Set<StateKey>();
  for (const s of sets) for (const k of s.keys()) keys.add(k);
  const unconflicted = new Map<StateKey, string>();
  const conflicted = new Set<string>();
  for (const k of keys) {
    const values = sets.map((s) => s.get(k));
    if (values.every((x) => x !== undefined && x === values[0])) unconflicted.set(k, values[0]!);
    else for (const x of values) if (x !== undefined) conflicted.add(x);
  }
  // Auth difference: ∪C_i − ∩C_i, C_i S_i's events and the union of their auth chains (the
  // reference server counts a set's own events in its chain).
  const chains = sets.map((s) => {
    const c = new Set<string>(s.values());
    for (const id of s.values()) for (const x of authChainOf(events, id, memo)) c.add(x);
    return c;
  });
  const full = new Set(conflicted);
  for (const c of chains) for (const x of c) if (!chains.every((o) => o.has(x))) full.add(x);

  // 1.
  const x = new Set<string>();
  for (const id of full) {
    if (!specPowerEvent(events.get(id)!)) continue;
    x.add(id);
    for (const a of authChainOf(events, id, memo)) if (full.has(a)) x.add(a);
  }
  const less = (p: string, q: string): boolean => {
    const ep = events.get(p)!;
    const eq = events.get(q)!;
    const lp = specSenderLevel(events, ep, version);
    const lq = specSenderLevel(events, eq, version);
    if (lp !== lq) return lp > lq;
    if (ep.origin_server_ts !== eq.origin_server_ts) return ep.origin_server_ts < eq.origin_server_ts;
    return p < q;
  };
  const sortedX: string[] = [];
  const left = new Set(x);
  while (left.size > 0) {
    // Kahn's algorithm: the candidates have no auth ancestor left to place; take the smallest.
    const candidates = [...left].filter((id) => ![...authChainOf(events, id, memo)].some((a) => left.has(a)));
    let best = candidates[0]!;
    for (const c of candidates) if (less(c, best)) best = c;
    sortedX.push(best);
    left.delete(best);
  }
  // 2.
  const partial = specIterative(events, version, unconflicted, sortedX);
  // 3.
  const mainline: string[] = [];
  for (let p = partial.get(PL); p !== undefined; p = plOf(events, events.get(p)!)) mainline.push(p);
  const position = (id: string): number => {
    for (let e = plOf(events, events.get(id)!); e !== undefined; e = plOf(events, events.get(e)!)) {
      const i = mainline.indexOf(e);
      if (i >= 0) return i;
    }
    return Infinity;
  };
  const rest = [...full].filter((id) => !x.has(id));
  rest.sort((p, q) => {
    const pp = position(p);
    const pq = position(q);
    if (pp !== pq) return pp > pq ? -1 : 1;
    const tp = events.get(p)!.origin_server_ts;
    const tq = events.get(q)!.origin_server_ts;
    if (tp !== tq) return tp - tq;
    return p < q ? -1 : 1;
  });
  // 4.
  const resolved = specIterative(events, version, partial, rest);
  // 5.
  for (const [k, id] of unconflicted) resolved.set(k, id);
  return resolved;
}

const USERS = [ALICE, BOB, CAROL, '@dave:example.org', '@eve:example.org'];
const KINDS = ['topic', 'join', 'leave', 'ban', 'kick', 'invite', 'pl', 'jr', 'merge'] as const;
interface Op {
  kind: (typeof KINDS)[number];
  actor: number;
  target: number;
  level: number;
  ts: number;
  other: number;
}
const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom(...KINDS),
  actor: fc.nat({ max: USERS.length - 1 }),
  target: fc.nat({ max: USERS.length - 1 }),
  level: fc.constantFrom(0, 25, 50, 75, 100),
  ts: fc.integer({ min: 1, max: 5 }),
  other: fc.nat({ max: 1000 }),
});

function opSpec(o: Op): EventSpec {
  const actor = USERS[o.actor]!;
  const target = USERS[o.target]!;
  const s = (type: string, state_key: string, content: JsonObject): EventSpec => ({
    type, sender: actor, state_key, content, origin_server_ts: o.ts,
  });
  switch (o.kind) {
    case 'topic':
      return s('m.room.topic', '', { topic: `t${o.other}` });
    case 'join':
      return s('m.room.member', actor, { membership: 'join' });
    case 'leave':
      return s('m.room.member', actor, { membership: 'leave' });
    case 'ban':
      return s('m.room.member', target, { membership: 'ban' });
    case 'kick':
      return s('m.room.member', target, { membership: 'leave' });
    case 'invite':
      return s('m.room.member', target, { membership: 'invite' });
    case 'pl':
      return s('m.room.power_levels', '', {
        users: { [ALICE]: 100, [BOB]: 75, [target]: o.level },
        ban: o.other % 2 === 0 ? 50 : 25,
        events: { 'm.room.topic': o.other % 3 === 0 ? 0 : 50 },
      });
    case 'jr':
    case 'merge':
      return s('m.room.join_rules', '', { join_rule: o.level >= 50 ? 'public' : 'invite' });
  }
}

for (const v of ['2', '6', '10', '11']) {
  test(`room version ${v}: the same result as a direct transcription of the spec, on random forks`, async () => {
    const version = roomVersions[v]!;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(opArb, { minLength: 1, maxLength: 7 }), { minLength: 2, maxLength: 3 }),
        async (forks) => {
          const g = new RoomGraph(version, (sets, source) => resolveState(ROOM_ID, version, sets, source));
          const createContent: JsonObject = version.implicitRoomCreator ? {} : { creator: ALICE };
          const base = await g.chain([
            { type: 'm.room.create', sender: ALICE, state_key: '', content: createContent },
            { type: 'm.room.member', sender: ALICE, state_key: ALICE, content: { membership: 'join' } },
            {
              type: 'm.room.power_levels', sender: ALICE, state_key: '',
              content: { users: { [ALICE]: 100, [BOB]: 75 } },
            },
            { type: 'm.room.join_rules', sender: ALICE, state_key: '', content: { join_rule: 'public' } },
            { type: 'm.room.member', sender: BOB, state_key: BOB, content: { membership: 'join' } },
            { type: 'm.room.member', sender: CAROL, state_key: CAROL, content: { membership: 'join' } },
          ]);
          // Every fork starts at the base; a 'merge' op joins the fork's tip with another fork's.
          const tips: string[] = forks.map(() => base.event_id);
          const steps = Math.max(...forks.map((f) => f.length));
          for (let i = 0; i < steps; i++) {
            for (const [fi, ops] of forks.entries()) {
              const o = ops[i];
              if (o === undefined) continue;
              const prevs = [tips[fi]!];
              if (o.kind === 'merge') {
                const other = tips[o.other % tips.length]!;
                if (!prevs.includes(other)) prevs.push(other);
              }
              tips[fi] = (await g.add(opSpec(o), prevs)).event_id;
            }
          }
          const sets = [...new Set(tips)].map((t) => g.stateAfter(t));
          const ours = await resolveState(ROOM_ID, version, sets, g);
          const spec = sets.length === 1 ? new Map(sets[0]) : specResolve(g.events, version, sets);
          const order = (m: ReadonlyMap<StateKey, string>): [StateKey, string][] =>
            [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
          assert.deepEqual(order(ours), order(spec));
        },
      ),
      { numRuns: 120 },
    );
  });
}
