// The event graphs that state resolution v2 was designed against (the scenarios servers have long
// tested with): a small room, then two branches that meet again at END. Events are created in a
// topological order (ties by node name), each with a timestamp one past the previous, and with
// auth events selected from the state before it. The check compares the state at END, on the
// keys that changed since START plus the keys expected.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { stateKey, type StateKey } from '../../../src/protocol/events.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { resolveState } from '../../../src/protocol/state-res/index.js';
import { EventFactory, ROOM_ID, RoomGraph } from '../../support/room-events.js';

const ALICE = '@alice:example.org';
const BOB = '@bob:example.org';
const CHARLIE = '@charlie:example.org';
const EVELYN = '@evelyn:example.org';
const ZARA = '@zara:example.org';

interface Node {
  id: string;
  sender: string;
  type: string;
  state_key?: string;
  content: JsonObject;
}

const node = (id: string, sender: string, type: string, state_key: string | undefined, content: JsonObject): Node =>
  state_key === undefined ? { id, sender, type, content } : { id, sender, type, state_key, content };
const JOIN = { membership: 'join' };

const INITIAL: Node[] = [
  node('CREATE', ALICE, 'm.room.create', '', { creator: ALICE }),
  node('IMA', ALICE, 'm.room.member', ALICE, JOIN),
  node('IPOWER', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100 } }),
  node('IJR', ALICE, 'm.room.join_rules', '', { join_rule: 'public' }),
  node('IMB', BOB, 'm.room.member', BOB, JOIN),
  node('IMC', CHARLIE, 'm.room.member', CHARLIE, JOIN),
  node('IMZ', ZARA, 'm.room.member', ZARA, JOIN),
  node('START', ZARA, 'm.room.message', undefined, {}),
  node('END', ZARA, 'm.room.message', undefined, {}),
];
const INITIAL_EDGES = ['START', 'IMZ', 'IMC', 'IMB', 'IJR', 'IPOWER', 'IMA', 'CREATE'];

const eventId = (n: string): string => `$${n}:example.org`;

/** Builds the graph (edges: chains of node → prev node) and checks the state at END. */
async function check(versionId: string, nodes: Node[], edges: string[][], expected: string[]): Promise<void> {
  const version = roomVersions[versionId]!;
  const g = new RoomGraph(version, (sets, source) => resolveState(ROOM_ID, version, sets, source), new EventFactory());
  const all = new Map<string, Node>();
  for (const n of [...INITIAL, ...nodes]) all.set(n.id, n);
  const prevs = new Map<string, Set<string>>();
  for (const id of all.keys()) prevs.set(id, new Set());
  for (const chain of [INITIAL_EDGES, ...edges]) {
    for (let i = 0; i + 1 < chain.length; i++) prevs.get(chain[i]!)!.add(chain[i + 1]!);
  }

  // Parents first; among the ready nodes, the smallest name.
  const done = new Set<string>();
  let ts = 0;
  while (done.size < all.size) {
    const ready = [...all.keys()]
      .filter((id) => !done.has(id) && [...prevs.get(id)!].every((p) => done.has(p)))
      .sort();
    const id = ready[0]!;
    const n = all.get(id)!;
    const content = { ...n.content };
    if (n.type === 'm.room.create' && version.implicitRoomCreator) delete content.creator;
    await g.add(
      { ...n, id: eventId(id), content, origin_server_ts: ts++ },
      [...prevs.get(id)!].sort().map(eventId),
    );
    done.add(id);
  }

  const start = g.stateAfter(eventId('START'));
  const end = g.stateAfter(eventId('END'));
  const want = new Map<StateKey, string>();
  for (const id of expected) {
    const ev = g.events.get(eventId(id))!;
    want.set(stateKey(ev.type, ev.state_key!), ev.event_id);
  }
  const got = new Map<StateKey, string>();
  for (const [key, value] of end) if (want.has(key) || start.get(key) !== value) got.set(key, value);
  assert.deepEqual(got, want);
}

for (const v of ['2', '10', '11']) {
  describe(`state resolution v2 on known graphs, room version ${v}`, () => {
    test('a ban against a power-levels change by the banned user', async () => {
      await check(
        v,
        [
          node('PA', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('MA', ALICE, 'm.room.member', ALICE, JOIN),
          node('MB', ALICE, 'm.room.member', BOB, { membership: 'ban' }),
          node('PB', BOB, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
        ],
        [
          ['END', 'MB', 'MA', 'PA', 'START'],
          ['END', 'PB', 'PA'],
        ],
        ['PA', 'MA', 'MB'],
      );
    });

    test('join rules evasion: a join racing a change away from public', async () => {
      await check(
        v,
        [
          // No valid join_rule: the room is no longer public.
          node('JR', ALICE, 'm.room.join_rules', '', { join_rules: 'private' }),
          node('ME', EVELYN, 'm.room.member', EVELYN, JOIN),
        ],
        [
          ['END', 'JR', 'START'],
          ['END', 'ME', 'START'],
        ],
        ['JR'],
      );
    });

    test('off-topic power levels: a chain of delegations outlives the fork', async () => {
      await check(
        v,
        [
          node('PA', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('PB', BOB, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50, [CHARLIE]: 50 } }),
          node('PC', CHARLIE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50, [CHARLIE]: 0 } }),
        ],
        [
          ['END', 'PC', 'PB', 'PA', 'START'],
          ['END', 'PA'],
        ],
        ['PC'],
      );
    });

    test('topics: the demoted user loses the topic to the mainline', async () => {
      await check(
        v,
        [
          node('T1', ALICE, 'm.room.topic', '', {}),
          node('PA1', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('T2', ALICE, 'm.room.topic', '', {}),
          node('PA2', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 0 } }),
          node('PB', BOB, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('T3', BOB, 'm.room.topic', '', {}),
        ],
        [
          ['END', 'PA2', 'T2', 'PA1', 'T1', 'START'],
          ['END', 'T3', 'PB', 'PA1'],
        ],
        ['PA2', 'T2'],
      );
    });

    test('topic reset: a banned user’s topic gives way to the older one', async () => {
      await check(
        v,
        [
          node('T1', ALICE, 'm.room.topic', '', {}),
          node('PA', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('T2', BOB, 'm.room.topic', '', {}),
          node('MB', ALICE, 'm.room.member', BOB, { membership: 'ban' }),
        ],
        [
          ['END', 'MB', 'T2', 'PA', 'T1', 'START'],
          ['END', 'T1'],
        ],
        ['T1', 'MB', 'PA'],
      );
    });

    test('topics across two merges', async () => {
      await check(
        v,
        [
          node('T1', ALICE, 'm.room.topic', '', {}),
          node('PA1', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('T2', ALICE, 'm.room.topic', '', {}),
          node('PA2', ALICE, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 0 } }),
          node('PB', BOB, 'm.room.power_levels', '', { users: { [ALICE]: 100, [BOB]: 50 } }),
          node('T3', BOB, 'm.room.topic', '', {}),
          node('MZ1', ZARA, 'm.room.message', undefined, {}),
          node('T4', ALICE, 'm.room.topic', '', {}),
        ],
        [
          ['END', 'T4', 'MZ1', 'PA2', 'T2', 'PA1', 'T1', 'START'],
          ['END', 'MZ1', 'T3', 'PB', 'PA1'],
        ],
        ['T4', 'PA2'],
      );
    });
  });
}
