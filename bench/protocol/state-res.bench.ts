// State resolution v2 on a large room: 10,000 members, two forks holding 2,000 conflicted state
// events between them. Prints times and memory, asserts nothing.
// Run: node --import tsx bench/protocol/state-res.bench.ts

import { createHash } from 'node:crypto';
import { getHeapStatistics } from 'node:v8';
import { stateKey, type RoomEvent, type StateKey } from '../../src/protocol/events.js';
import type { JsonObject } from '../../src/protocol/json.js';
import { roomVersions } from '../../src/protocol/room-versions.js';
import { resolveState, type StateResEventSource } from '../../src/protocol/state-res/index.js';
import { naiveAuthChain } from '../../test/support/room-events.js';

const MEMBERS = 10_000;
const CONFLICTED_TARGET = 2_000;
const MODERATORS = 40;
const ROOM = '!bench:example.org';
const CREATOR = '@creator:example.org';
const version = roomVersions['10']!;

const user = (name: string): string => `@${name}:example.org`;
let counter = 0;
let clock = 1_700_000_000_000;
const events = new Map<string, RoomEvent>();

interface Room {
  state: Map<StateKey, string>;
  depth: number;
  prev: string;
}

function event(room: Room, type: string, sender: string, sk: string, content: JsonObject): RoomEvent {
  const at = (k: StateKey): string[] => {
    const id = room.state.get(k);
    return id === undefined ? [] : [id];
  };
  const auth = new Set([
    ...at(stateKey('m.room.create', '')),
    ...at(stateKey('m.room.power_levels', '')),
    ...at(stateKey('m.room.member', sender)),
  ]);
  if (type === 'm.room.member') {
    for (const id of at(stateKey('m.room.member', sk))) auth.add(id);
    const m = content.membership;
    if (m === 'join' || m === 'invite') for (const id of at(stateKey('m.room.join_rules', ''))) auth.add(id);
  }
  counter += 1;
  clock += 1 + (counter % 7);
  const ev: RoomEvent = {
    event_id: '$' + createHash('sha256').update(String(counter)).digest('base64url'),
    room_id: ROOM,
    sender,
    type,
    state_key: sk,
    content,
    origin_server_ts: clock,
    depth: ++room.depth,
    auth_events: type === 'm.room.create' ? [] : [...auth],
    prev_events: room.prev === '' ? [] : [room.prev],
  };
  events.set(ev.event_id, ev);
  room.state.set(stateKey(type, sk), ev.event_id);
  room.prev = ev.event_id;
  return ev;
}

function powerLevels(mods: readonly string[], extra: JsonObject = {}): JsonObject {
  const users: JsonObject = { [CREATOR]: 100 };
  for (const m of mods) users[m] = 50;
  return { users, kick: 50, ban: 50, events: { 'm.room.name': 50, 'm.room.topic': 50 }, ...extra };
}

/**
 * The shared room, then two forks of `perFork` state events each. Out of every 20 fork events,
 * `kicks` are kicks and bans by a moderator (power events); the rest are new joins, profile
 * changes, leaves, custom state, topics and a few power-levels changes.
 */
function buildRoom(perFork: number, kicks: number): { forks: Map<StateKey, string>[]; conflicted: number } {
  events.clear();
  const room: Room = { state: new Map(), depth: 0, prev: '' };
  event(room, 'm.room.create', CREATOR, '', { room_version: version.id });
  event(room, 'm.room.member', CREATOR, CREATOR, { membership: 'join' });
  event(room, 'm.room.power_levels', CREATOR, '', powerLevels([]));
  event(room, 'm.room.join_rules', CREATOR, '', { join_rule: 'public' });
  event(room, 'm.room.history_visibility', CREATOR, '', { history_visibility: 'shared' });
  const mods: string[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const u = user(`m${i}`);
    event(room, 'm.room.member', u, u, { membership: 'join', displayname: `Member ${i}` });
    // A power-levels change every so often, so members cite different power levels.
    if (i % 250 === 0 && mods.length < MODERATORS) {
      mods.push(u);
      event(room, 'm.room.power_levels', CREATOR, '', powerLevels(mods));
    }
  }

  const forks = ['a', 'b'].map((name, f) => {
    const fork: Room = { state: new Map(room.state), depth: room.depth, prev: room.prev };
    const mod = mods[f]!;
    for (let i = 0; i < perFork; i++) {
      const r = i % 20;
      if (r < kicks) {
        const target = user(`m${f * 5000 + 2500 + i}`);
        event(fork, 'm.room.member', mod, target, { membership: i % 40 === r ? 'ban' : 'leave' });
      } else if (r < 11) {
        const u = user(`${name}${i}`);
        event(fork, 'm.room.member', u, u, { membership: 'join' });
      } else if (r < 15) {
        const u = user(`m${f * 5000 + i}`);
        event(fork, 'm.room.member', u, u, { membership: 'join', displayname: `${name} ${i}` });
      } else if (r < 17) {
        const u = user(`m${f * 5000 + i}`);
        event(fork, 'm.room.member', u, u, { membership: 'leave' });
      } else if (r === 17) {
        event(fork, 'm.room.name', mod, '', { name: `${name} ${i}` });
      } else if (r === 18) {
        event(fork, `org.example.${name}`, mod, String(i), { n: i });
      } else if (i % 100 === 19) {
        event(fork, 'm.room.power_levels', CREATOR, '', powerLevels(mods, { state_default: 50 + (i % 7) }));
      } else {
        event(fork, 'm.room.topic', mod, '', { topic: `${name} ${i}` });
      }
    }
    return fork.state;
  });

  let conflicted = 0;
  const keys = new Set([...forks[0]!.keys(), ...forks[1]!.keys()]);
  for (const k of keys) {
    const a = forks[0]!.get(k);
    const b = forks[1]!.get(k);
    if (a !== b) conflicted += (a === undefined ? 0 : 1) + (b === undefined ? 0 : 1);
  }
  return { forks, conflicted };
}


/** An asynchronous store over the events, as a database-backed one would be. */
function source(withChains: boolean): StateResEventSource {
  const s: StateResEventSource = {
    async getEvents(ids) {
      const out = new Map<string, RoomEvent>();
      for (const id of ids) {
        const ev = events.get(id);
        if (ev !== undefined) out.set(id, ev);
      }
      return out;
    },
  };
  if (withChains) s.getAuthChain = async (ids) => naiveAuthChain(events, ids);
  return s;
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

async function timed(label: string, run: () => Promise<unknown>, rounds: number): Promise<void> {
  const times: number[] = [];
  let peakHeap = 0;
  let sampling = true;
  const sample = (): void => {
    peakHeap = Math.max(peakHeap, getHeapStatistics().used_heap_size);
    if (sampling) setImmediate(sample);
  };
  setImmediate(sample);
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  sampling = false;
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  const ms = (t: number): string => `${t.toFixed(0).padStart(5)} ms`;
  console.log(`  ${label.padEnd(44)} median ${ms(median)}   min ${ms(times[0]!)}   peak heap ${mb(peakHeap)}`);
}

/** The fork length that gives about CONFLICTED_TARGET conflicted state events. */
function buildWithTarget(kicks: number) {
  let perFork = CONFLICTED_TARGET / 2;
  for (;;) {
    const built = buildRoom(perFork, kicks);
    if (built.conflicted <= CONFLICTED_TARGET) return { ...built, perFork };
    perFork = Math.floor((perFork * CONFLICTED_TARGET) / built.conflicted);
  }
}

for (const [label, kicks] of [
  ['mixed forks (5% kicks and bans)', 1],
  ['power-heavy forks (50% kicks and bans)', 10],
] as const) {
  const t0 = performance.now();
  const { forks, conflicted, perFork } = buildWithTarget(kicks);
  const buildMs = performance.now() - t0;
  const t1 = performance.now();
  const result = await resolveState(ROOM, version, forks, source(false));
  const first = performance.now() - t1;
  let joined = 0;
  for (const [k, id] of result) {
    if (k.startsWith('13:m.room.member') && events.get(id)?.content.membership === 'join') joined += 1;
  }
  console.log(
    `\n${label}: ${MEMBERS} members, ${events.size} events, ${perFork} state events per fork, ` +
      `${conflicted} conflicted state events (built in ${buildMs.toFixed(0)} ms); ` +
      `resolved: ${result.size} keys, ${joined} joined`,
  );
  console.log(`  ${'v2, first call in the process'.padEnd(44)}        ${first.toFixed(0).padStart(5)} ms`);
  await timed('v2, auth chains walked', () => resolveState(ROOM, version, forks, source(false)), 7);
  await timed('v2, store answers auth chains', () => resolveState(ROOM, version, forks, source(true)), 7);
  const v1 = roomVersions['1']!;
  await timed('v1 algorithm on the same states (reference)', () => resolveState(ROOM, v1, forks, source(false)), 7);
}

const usage = process.resourceUsage();
const heap = process.memoryUsage();
console.log(`\npeak RSS (maxRSS) ${mb(usage.maxRSS * 1024)}; heap now ${mb(heap.heapUsed)} of ${mb(heap.heapTotal)}`);
