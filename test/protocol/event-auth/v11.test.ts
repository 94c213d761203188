// Room version 11: the create event's sender is the creator (rule 1.4 gone, 4.3.1 and the default
// levels follow the sender, `content.creator` means nothing).

import { describe, test } from 'node:test';
import type { JsonObject } from '../../../src/protocol/json.js';
import type { RoomVersion } from '../../../src/protocol/room-versions.js';
import { ALICE, assertAuth, BOB, Room, runAuthCases, VERSIONS_BEFORE_12, type AuthCase } from './room.js';

// Alice sends the create event; its content names Bob as creator.
const misnamed = { createContent: { creator: BOB }, powerLevels: null, joinRule: 'public' as const };
const name = (sender: string) => ({ type: 'm.room.name', sender, state_key: '', content: { name: 'n' } });

const cases: AuthCase[] = [
  {
    name: 'without power levels the create sender has 100 from v11',
    room: misnamed,
    event: name(ALICE),
    expect: (v) => (v.implicitRoomCreator ? true : /needs level 50; the sender has 0/),
  },
  {
    name: 'without power levels content.creator has 100 before v11',
    room: { ...misnamed, members: { [BOB]: 'join' } },
    event: name(BOB),
    expect: (v) => (v.implicitRoomCreator ? /needs level 50; the sender has 0/ : true),
  },
  {
    name: 'a create event without creator is allowed from v11',
    event: (r) => ({ type: 'm.room.create', sender: ALICE, state_key: '', content: { room_version: r.version.id }, prev_events: [] }),
    expect: (v) => (v.implicitRoomCreator ? true : /no creator/),
  },
];

runAuthCases('v11: the creator is the create event’s sender', cases, VERSIONS_BEFORE_12);

describe('4.3.1 the first join follows the creator of the version', () => {
  const bare = (v: RoomVersion, createContent: JsonObject): Room => {
    const room = new Room(v, { powerLevels: null, joinRule: null, createContent });
    for (const [key, e] of room.state) if (e.type !== 'm.room.create') room.state.delete(key);
    room.last = room.create.event_id;
    return room;
  };
  const join = (user: string) => ({ type: 'm.room.member', sender: user, state_key: user, content: { membership: 'join' } });
  for (const version of VERSIONS_BEFORE_12) {
    test(`room version ${version.id}`, () => {
      const room = bare(version, { creator: BOB });
      assertAuth(room.check(join(ALICE)), version.implicitRoomCreator ? true : /not invited/);
      assertAuth(room.check(join(BOB)), version.implicitRoomCreator ? /not invited/ : true);
    });
  }
});
