// Property: resolution depends on the states, not on the order they are given in, nor on the
// order in which the source hands events back, nor on whether the source answers auth chains.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { stateKey, type RoomEvent, type StateKey, type StateMap } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { resolveState, type StateResEventSource } from '../../../src/protocol/state-res/index.js';
import { ROOM_ID, RoomGraph, naiveAuthChain, type EventSpec } from '../../support/room-events.js';

const USERS = ['@alice:example.org', '@bob:example.org', '@carol:example.org', '@dave:example.org', '@eve:example.org'];
const KINDS = ['topic', 'name', 'join', 'leave', 'ban', 'kick', 'invite', 'pl', 'jr'] as const;

interface Op {
  kind: (typeof KINDS)[number];
  actor: number;
  target: number;
  level: number;
  ts: number;
}
const op: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom(...KINDS),
  actor: fc.nat({ max: USERS.length - 1 }),
  target: fc.nat({ max: USERS.length - 1 }),
  level: fc.constantFrom(0, 50, 100),
  // Few distinct timestamps, so that ties are common and event ids must break them.
  ts: fc.integer({ min: 1, max: 4 }),
});
const forkPlan = fc.record({ from: fc.nat({ max: 4 }), ops: fc.array(op, { minLength: 1, maxLength: 6 }) });

function toSpec(o: Op): EventSpec {
  const actor = USERS[o.actor]!;
  const target = USERS[o.target]!;
  const state = (type: string, state_key: string, content: JsonObject): EventSpec => ({
    type,
    sender: actor,
    state_key,
    content,
    origin_server_ts: o.ts,
  });
  switch (o.kind) {
    case 'topic':
      return state('m.room.topic', '', { topic: `t${o.level}` });
    case 'name':
      return state('m.room.name', '', { name: `n${o.level}` });
    case 'join':
      return state('m.room.member', actor, { membership: 'join' });
    case 'leave':
      return state('m.room.member', actor, { membership: 'leave' });
    case 'ban':
      return state('m.room.member', target, { membership: 'ban' });
    case 'kick':
      return state('m.room.member', target, { membership: 'leave' });
    case 'invite':
      return state('m.room.member', target, { membership: 'invite' });
    case 'pl':
      return state('m.room.power_levels', '', { users: { [USERS[0]!]: 100, [USERS[1]!]: 50, [target]: o.level } });
    case 'jr':
      return state('m.room.join_rules', '', { join_rule: o.level === 0 ? 'invite' : 'public' });
  }
}

/** The base room, then forks: each starts at the base or part-way along the first fork. */
async function build(versionId: string, plans: { from: number; ops: Op[] }[]) {
  const version = roomVersions[versionId]!;
  const g = new RoomGraph(version, (sets, source) => resolveState(ROOM_ID, version, sets, source));
  const [alice, bob, carol] = USERS as [string, string, string];
  const createContent: JsonObject = version.implicitRoomCreator ? {} : { creator: alice };
  const base = await g.chain([
    { type: 'm.room.create', sender: alice, state_key: '', content: createContent },
    { type: 'm.room.member', sender: alice, state_key: alice, content: { membership: 'join' } },
    { type: 'm.room.power_levels', sender: alice, state_key: '', content: { users: { [alice]: 100, [bob]: 50 } } },
    { type: 'm.room.join_rules', sender: alice, state_key: '', content: { join_rule: 'public' } },
    { type: 'm.room.member', sender: bob, state_key: bob, content: { membership: 'join' } },
    { type: 'm.room.member', sender: carol, state_key: carol, content: { membership: 'join' } },
  ]);
  const firstFork: string[] = [];
  const states: StateMap[] = [];
  for (const [i, plan] of plans.entries()) {
    let prev = i === 0 || firstFork.length === 0 ? base.event_id : firstFork[Math.min(plan.from, firstFork.length - 1)]!;
    for (const o of plan.ops) {
      const ev = await g.add(toSpec(o), [prev]);
      prev = ev.event_id;
      if (i === 0) firstFork.push(prev);
    }
    states.push(g.stateAfter(prev));
  }
  return { g, states };
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

/** A source that hands events back in an order given by `seed`, optionally answering auth chains. */
function shuffledSource(events: ReadonlyMap<string, RoomEvent>, seed: number, chains: boolean): StateResEventSource {
  const source: StateResEventSource = {
    getEvents(ids) {
      const found = ids.filter((id) => events.has(id));
      const order = found.map((id, i) => ({ id, k: (i * 7919 + seed * 104729) % (found.length + 13) }));
      order.sort((a, b) => a.k - b.k || (a.id < b.id ? -1 : 1));
      return Promise.resolve(new Map(order.map(({ id }) => [id, events.get(id)!])));
    },
  };
  if (chains) {
    source.getAuthChain = (ids) => naiveAuthChain(events, ids);
  }
  return source;
}

const sorted = (m: ReadonlyMap<StateKey, string>): [StateKey, string][] =>
  [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

for (const versionId of ['1', '2', '10', '11']) {
  describe(`state resolution properties, room version ${versionId}`, () => {
    test('order of state sets and of fetched events does not matter; unconflicted state is kept', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(forkPlan, { minLength: 2, maxLength: 3 }), fc.nat(), async (plans, seed) => {
          const { g, states } = await build(versionId, plans);
          const version = g.version;
          const reference = await resolveState(ROOM_ID, version, states, g);
          for (const [i, perm] of permutations(states).entries()) {
            const source = shuffledSource(g.events, seed + i, i % 2 === 1);
            const other = await resolveState(ROOM_ID, version, perm, source);
            assert.deepEqual(sorted(other), sorted(reference));
          }
          // Keys every state holds with the same event keep it.
          for (const [k, id] of states[0]!) {
            if (states.every((s) => s.get(k) === id)) assert.equal(reference.get(k), id);
          }
          assert.equal(reference.get(stateKey('m.room.create', '')), states[0]!.get(stateKey('m.room.create', '')));
        }),
        { numRuns: 150 },
      );
    });
  });
}
