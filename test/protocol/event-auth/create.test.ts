// Rule 1: m.room.create.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authTypesForEvent, checkAuthEventsList } from '../../../src/protocol/auth-events.js';
import {
  checkEventAuth,
  checkStateDependentAuth,
  checkStateIndependentAuth,
} from '../../../src/protocol/event-auth.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import type { RoomVersion } from '../../../src/protocol/room-versions.js';
import { EventFactory, type EventSpec } from '../../support/room-events.js';
import { ALICE, assertAuth, VERSIONS_BEFORE_12, type Expectation } from './room.js';

interface CreateCase {
  name: string;
  roomId?: string;
  spec: (version: RoomVersion) => Partial<EventSpec> & { content?: JsonObject };
  expect: (version: RoomVersion) => Expectation;
}

const fullContent = (v: RoomVersion): JsonObject => ({ creator: ALICE, room_version: v.id });

const cases: CreateCase[] = [
  { name: '1.5 a well-formed create event is allowed', spec: (v) => ({ content: fullContent(v) }), expect: () => true },
  {
    name: '1.1 prev_events are not allowed',
    spec: (v) => ({ content: fullContent(v), prev_events: ['$earlier'] }),
    expect: () => /prev_events/,
  },
  {
    name: '1.2 the room id must be of the sender’s server',
    roomId: '!room:elsewhere.test',
    spec: (v) => ({ content: fullContent(v) }),
    expect: () => /different servers/,
  },
  {
    name: '1.2 a room id without a server name is refused',
    roomId: '!roomwithoutdomain',
    spec: (v) => ({ content: fullContent(v) }),
    expect: () => /different servers/,
  },
  {
    name: '1.3 an unknown room_version is refused',
    spec: () => ({ content: { creator: ALICE, room_version: '99' } }),
    expect: () => /unknown room version/,
  },
  {
    name: '1.3 a room_version that is not a string is refused',
    spec: () => ({ content: { creator: ALICE, room_version: 5 } }),
    expect: () => /unknown room version/,
  },
  {
    name: '1.3 room_version may be absent',
    spec: () => ({ content: { creator: ALICE } }),
    expect: () => true,
  },
  {
    name: '1.4 creator is required before v11, not from v11',
    spec: (v) => ({ content: { room_version: v.id } }),
    expect: (v) => (v.implicitRoomCreator ? true : /no creator/),
  },
];

for (const version of VERSIONS_BEFORE_12) {
  describe(`create event, room version ${version.id}`, () => {
    for (const c of cases) {
      test(c.name, () => {
        const factory = new EventFactory(c.roomId);
        const event = factory.make({ type: 'm.room.create', sender: ALICE, state_key: '', ...c.spec(version) });
        const expected = c.expect(version);
        // The create event is judged without state, by every entry point alike.
        assertAuth(checkStateIndependentAuth(event, version), expected, 'independent');
        assertAuth(checkStateDependentAuth(event, new Map(), version), expected, 'dependent');
        assertAuth(checkEventAuth(event, new Map(), version), expected, 'both');
      });
    }

    test('has no auth event types, and rule 2 does not apply to it', () => {
      const event = new EventFactory().make({
        type: 'm.room.create',
        sender: ALICE,
        state_key: '',
        content: fullContent(version),
      });
      assert.deepEqual(authTypesForEvent(event, version), []);
      assert.deepEqual(checkAuthEventsList(event, [], version), { allowed: true });
    });
  });
}
