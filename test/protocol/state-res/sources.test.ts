// What resolution asks of its event source: batched fetches, the optional auth-chain answer,
// missing and foreign events, and yielding in long loops.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey, type RoomEvent, type StateKey } from '../../../src/protocol/events.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { authDifference } from '../../../src/protocol/state-res/auth-chain.js';
import { AuthGraph, type StateResEventSource } from '../../../src/protocol/state-res/auth-graph.js';
import { resolveState } from '../../../src/protocol/state-res/index.js';
import { EventFactory, ROOM_ID, naiveAuthChain, type EventSpec } from '../../support/room-events.js';

const V10 = roomVersions['10']!;
const ALICE = '@alice:example.org';
const TOPIC = stateKey('m.room.topic', '');
const key = (ev: RoomEvent): StateKey => stateKey(ev.type, ev.state_key!);

/** A source over a map of events that counts its calls and what it was asked for. */
class CountingSource implements StateResEventSource {
  calls = 0;
  asked: string[] = [];
  constructor(readonly events: Map<string, RoomEvent>) {}
  getEvents(ids: readonly string[]): Map<string, RoomEvent> {
    this.calls += 1;
    this.asked.push(...ids);
    const out = new Map<string, RoomEvent>();
    for (const id of ids) {
      const ev = this.events.get(id);
      if (ev !== undefined) out.set(id, ev);
    }
    return out;
  }
}


/**
 * A room with `members` joined users, then two forks: in each, `perFork` new users join and
 * the topic changes. Auth events are chosen by hand (create, power levels, join rules, own
 * membership), which is what selection gives for these events.
 */
function buildRoom(members: number, perFork: number) {
  const f = new EventFactory();
  const events = new Map<string, RoomEvent>();
  const state = new Map<StateKey, string>();
  const add = (spec: EventSpec, into: Map<StateKey, string> | undefined = state): RoomEvent => {
    const ev = f.make(spec);
    events.set(ev.event_id, ev);
    into?.set(key(ev), ev.event_id);
    return ev;
  };
  const create = add({ type: 'm.room.create', sender: ALICE, state_key: '', content: { creator: ALICE } });
  const alice = add({
    type: 'm.room.member',
    sender: ALICE,
    state_key: ALICE,
    content: { membership: 'join' },
    auth_events: [create.event_id],
  });
  const pl = add({
    type: 'm.room.power_levels',
    sender: ALICE,
    state_key: '',
    content: { users: { [ALICE]: 100 } },
    auth_events: [create.event_id, alice.event_id],
  });
  const jr = add({
    type: 'm.room.join_rules',
    sender: ALICE,
    state_key: '',
    content: { join_rule: 'public' },
    auth_events: [create.event_id, pl.event_id, alice.event_id],
  });
  const join = (user: string, into: Map<StateKey, string>): RoomEvent =>
    add(
      {
        type: 'm.room.member',
        sender: user,
        state_key: user,
        content: { membership: 'join' },
        auth_events: [create.event_id, pl.event_id, jr.event_id],
      },
      into,
    );
  for (let i = 0; i < members; i++) join(`@m${i}:example.org`, state);
  const forks = ['a', 'b'].map((name) => {
    const s = new Map(state);
    for (let i = 0; i < perFork; i++) join(`@${name}${i}:example.org`, s);
    add(
      {
        type: 'm.room.topic',
        sender: ALICE,
        state_key: '',
        content: { topic: name },
        auth_events: [create.event_id, pl.event_id, alice.event_id],
      },
      s,
    );
    return s;
  });
  return { events, forks };
}

describe('state resolution and its event source', () => {
  test('auth difference: union of the full auth chains (own events included) minus their intersection', async () => {
    const f = new EventFactory();
    const events = new Map<string, RoomEvent>();
    const mk = (id: string, auth: string[]): void => {
      const spec = { id, type: 'm.room.member', sender: ALICE, state_key: id, auth_events: auth };
      events.set(id, f.make(spec));
    };
    mk('$c', []);
    mk('$shared', ['$c']);
    mk('$a1', ['$shared']);
    mk('$a2', ['$a1', '$c']);
    mk('$b1', ['$shared']);
    mk('$u', ['$shared']);
    // Each set's full chain counts its own events, as the reference server computes it.
    const expected = new Set(['$a1', '$a2', '$b1']);
    const walking = (): [AuthGraph, StateResEventSource] => {
      const source = new CountingSource(events);
      return [new AuthGraph(ROOM_ID, source), source];
    };
    assert.deepEqual(await authDifference(...walking(), ['$u'], [['$a2'], ['$b1']]), expected);
    const store: StateResEventSource = {
      getEvents: (ids) => new CountingSource(events).getEvents(ids),
      getAuthChain: (ids) => naiveAuthChain(events, ids),
    };
    const answered = await authDifference(new AuthGraph(ROOM_ID, store), store, ['$u'], [['$a2'], ['$b1']]);
    assert.deepEqual(answered, expected);
    // An event only one set's chain holds, but the unconflicted chain also holds, is no difference.
    mk('$u2', ['$a1']);
    assert.deepEqual(await authDifference(...walking(), ['$u2'], [['$a2'], ['$b1']]), new Set(['$a2', '$b1']));
  });

  test('fetches in a few batches and never asks for an event twice', async () => {
    const { events, forks } = buildRoom(2000, 300);
    const source = new CountingSource(events);
    const resolved = await resolveState(ROOM_ID, V10, forks, source);
    assert.equal(resolved.size, 4 + 2000 + 600 + 1);
    assert.ok(source.calls <= 12, `${source.calls} calls`);
    assert.equal(new Set(source.asked).size, source.asked.length);
  });

  test('a store answering auth chains gives the same result without walking them', async () => {
    const { events, forks } = buildRoom(300, 50);
    const walking = await resolveState(ROOM_ID, V10, forks, new CountingSource(events));
    const counting = new CountingSource(events);
    const store: StateResEventSource = {
      getEvents: (ids) => counting.getEvents(ids),
      getAuthChain: async (ids) => naiveAuthChain(events, ids),
    };
    assert.deepEqual(await resolveState(ROOM_ID, V10, forks, store), walking);
    // Only the conflicted events and what their checks need were fetched, not the members.
    assert.ok(counting.asked.length < 200, `${counting.asked.length} fetched`);
  });

  test('conflicted events the source lacks, or of another room, take no part', async () => {
    const { events, forks } = buildRoom(3, 0);
    const [a, b] = forks as [Map<StateKey, string>, Map<StateKey, string>];
    const later = events.get(b.get(TOPIC)!)!;
    const earlier = a.get(TOPIC)!;
    const topicWith = async (available: Map<string, RoomEvent>): Promise<string | undefined> =>
      (await resolveState(ROOM_ID, V10, forks, new CountingSource(available))).get(TOPIC);
    assert.equal(await topicWith(events), later.event_id);
    const missing = new Map(events);
    missing.delete(later.event_id);
    assert.equal(await topicWith(missing), earlier);
    const foreign = new Map(events).set(later.event_id, { ...later, room_id: '!other:example.org' });
    assert.equal(await topicWith(foreign), earlier);
  });

  test('a large resolution yields to the event loop', async () => {
    const { events, forks } = buildRoom(5000, 1000);
    let ticks = 0;
    let running = true;
    const tick = (): void => {
      ticks += 1;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    await resolveState(ROOM_ID, V10, forks, new CountingSource(events));
    running = false;
    assert.ok(ticks > 3, `${ticks} ticks`);
  });
});
