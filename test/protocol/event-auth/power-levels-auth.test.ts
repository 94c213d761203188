// Rule 9 (v1–v5: 10): changes to m.room.power_levels.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { JsonObject } from '../../../src/protocol/json.js';
import { roomVersions } from '../../../src/protocol/room-versions.js';
import { ALICE, BOB, CAROL, DAVE, ERIN, Room, runAuthCases, VERSIONS_BEFORE_12, type AuthCase } from './room.js';

const pl = (sender: string, content: JsonObject) => ({
  type: 'm.room.power_levels',
  sender,
  state_key: '',
  content,
});
/** The current levels with `extra` merged in: alice 100, bob 50 (joined, sends the changes). */
const base = (extra: JsonObject = {}, users: JsonObject = {}): JsonObject => ({
  ...extra,
  users: { [ALICE]: 100, [BOB]: 50, ...users },
});
const room = (current: JsonObject) => ({ powerLevels: current, members: { [BOB]: 'join' } });

const cases: AuthCase[] = [
  // 9.3 (v1–v9: users only, 10.1 / 9.1).
  { name: '9.3 a users key that is not a user id is refused', event: pl(ALICE, base({}, { carol: 10 })), expect: /not a valid user id/ },
  { name: '9.3 a users value that is not a level is refused', event: pl(ALICE, base({}, { [CAROL]: 'ten' })), expect: /"users.@carol:example.org" is not a valid level/ },
  { name: '9.3 users that is not an object is refused', event: pl(ALICE, { users: 5 }), expect: /"users" is not an object/ },
  {
    name: '9.3 a string users value: accepted to v9, refused from v10',
    event: pl(ALICE, base({}, { [CAROL]: '10' })),
    expect: (v) => (v.enforceIntPowerLevels ? /not a valid level/ : true),
  },
  {
    name: '9.3 a float users value: accepted to v5, refused from v6',
    event: pl(ALICE, base({}, { [CAROL]: 10.5 })),
    expect: (v) => (v.strictCanonicalJson ? /not a valid level/ : true),
  },
  // 9.1–9.2 (v10+).
  {
    name: '9.1 a string top-level level: accepted to v9, refused from v10',
    event: pl(ALICE, base({ kick: '40' })),
    expect: (v) => (v.enforceIntPowerLevels ? /"kick" is not an integer/ : true),
  },
  {
    name: '9.1 a null top-level level: ignored to v9, refused from v10',
    event: pl(ALICE, base({ state_default: null })),
    expect: (v) => (v.enforceIntPowerLevels ? /"state_default" is not an integer/ : true),
  },
  {
    name: '9.2 a string events entry: accepted to v9, refused from v10',
    event: pl(ALICE, base({ events: { 'm.room.name': '50' } })),
    expect: (v) => (v.enforceIntPowerLevels ? /"events.m.room.name" is not a valid level/ : true),
  },
  {
    name: '9.2 a string notifications entry: accepted to v9, refused from v10',
    event: pl(ALICE, base({ notifications: { room: '50' } })),
    expect: (v) => (v.enforceIntPowerLevels ? /"notifications.room" is not a valid level/ : true),
  },
  {
    name: '9.2 events that is not an object: ignored to v9, refused from v10',
    event: pl(ALICE, base({ events: ['m.room.name'] })),
    expect: (v) => (v.enforceIntPowerLevels ? /"events" is not an object/ : true),
  },
  {
    name: 'floats outside a double’s range reject the event (v1–v5 float rules)',
    event: pl(ALICE, base({ ban: Number.POSITIVE_INFINITY })),
    expect: /ban/,
  },

  // 9.4.
  { name: '9.4 the first power_levels event is allowed whatever it grants', room: { powerLevels: null }, event: pl(ALICE, { users: { [ALICE]: 100, [CAROL]: 1000 }, ban: 1000 }), expect: true },
  { name: '9.4 … but rule 7 still needs state_default (50) for it', room: { powerLevels: null, members: { [BOB]: 'join' } }, event: pl(BOB, { users: { [BOB]: 100 } }), expect: /needs level 50; the sender has 0/ },
  { name: '7 a power_levels change needs its own required level', room: room(base({ events: { 'm.room.power_levels': 100 } })), event: pl(BOB, base({ events: { 'm.room.power_levels': 100 } })), expect: /needs level 100/ },

  // 9.5 top-level levels.
  { name: '9.5 lowering kick within one’s level is allowed', room: room(base()), event: pl(BOB, base({ kick: 40 })), expect: true },
  { name: '9.5 adding a level at one’s own level is allowed', room: room(base()), event: pl(BOB, base({ invite: 50 })), expect: true },
  { name: '9.5.2 adding a level above one’s own is refused', room: room(base()), event: pl(BOB, base({ invite: 51 })), expect: /cannot set "invite" to 51/ },
  { name: '9.5.2 raising ban above one’s own level is refused', room: room(base({ ban: 50 })), event: pl(BOB, base({ ban: 60 })), expect: /cannot set "ban" to 60/ },
  { name: '9.5.1 lowering redact from above one’s level is refused', room: room(base({ redact: 75 })), event: pl(BOB, base({ redact: 50 })), expect: /cannot change "redact" from 75/ },
  { name: '9.5.1 removing a level above one’s own is refused', room: room(base({ kick: 75 })), event: pl(BOB, base()), expect: /cannot change "kick" from 75/ },
  { name: '9.5 removing a level within one’s own is allowed', room: room(base({ kick: 25 })), event: pl(BOB, base()), expect: true },
  { name: '9.5 an unchanged level above one’s own is no alteration', room: room(base({ ban: 75 })), event: pl(BOB, base({ ban: 75, kick: 20 })), expect: true },
  {
    name: '9.5 users_default and events_default are guarded too',
    room: room(base()),
    event: pl(BOB, base({ users_default: 60 })),
    expect: /cannot set "users_default" to 60/,
  },
  {
    name: '9.5 state_default is guarded too',
    room: room(base({ state_default: 50 })),
    event: pl(BOB, base({ state_default: 51 })),
    expect: /cannot set "state_default" to 51/,
  },
  {
    name: '9.5 "75" and 75 are the same level before v10 (no alteration)',
    only: (v) => !v.enforceIntPowerLevels,
    room: room(base({ ban: 75 })),
    event: pl(BOB, base({ ban: '75' })),
    expect: true,
  },

  // 9.6–9.7 events.
  { name: '9.7 adding an events entry at one’s level is allowed', room: room(base()), event: pl(BOB, base({ events: { 'm.room.topic': 50 } })), expect: true },
  { name: '9.7 adding an events entry above one’s level is refused', room: room(base()), event: pl(BOB, base({ events: { 'm.room.topic': 60 } })), expect: /cannot set "events.m.room.topic" to 60/ },
  { name: '9.6 lowering an events entry from above one’s level is refused', room: room(base({ events: { 'm.room.name': 60 } })), event: pl(BOB, base({ events: { 'm.room.name': 50 } })), expect: /cannot change "events.m.room.name" from 60/ },
  { name: '9.6 raising an events entry within one’s level is allowed', room: room(base({ events: { 'm.room.name': 40 } })), event: pl(BOB, base({ events: { 'm.room.name': 50 } })), expect: true },
  { name: '9.6 removing an events entry above one’s level is refused', room: room(base({ events: { 'm.room.name': 60 } })), event: pl(BOB, base({ events: {} })), expect: /cannot change "events.m.room.name" from 60/ },
  { name: '9.6 removing an events entry within one’s level is allowed', room: room(base({ events: { 'm.room.name': 40 } })), event: pl(BOB, base()), expect: true },
  { name: '9.6 keeping an events entry above one’s level is allowed', room: room(base({ events: { 'm.room.tombstone': 100 } })), event: pl(BOB, base({ events: { 'm.room.tombstone': 100, 'm.room.name': 50 } })), expect: true },

  // 9.6–9.7 notifications: guarded from v6.
  {
    name: '9.6 lowering notifications.room from above one’s level: refused from v6',
    room: room(base({ notifications: { room: 60 } })),
    event: pl(BOB, base({ notifications: { room: 50 } })),
    expect: (v) => (v.limitNotificationsPowerLevels ? /cannot change "notifications.room" from 60/ : true),
  },
  {
    name: '9.7 adding notifications.room above one’s level: refused from v6',
    room: room(base()),
    event: pl(BOB, base({ notifications: { room: 60 } })),
    expect: (v) => (v.limitNotificationsPowerLevels ? /cannot set "notifications.room" to 60/ : true),
  },
  {
    name: '9.7 adding notifications.room within one’s level is allowed',
    room: room(base()),
    event: pl(BOB, base({ notifications: { room: 20 } })),
    expect: true,
  },

  // 9.8–9.9 users.
  { name: '9.9 raising another user up to one’s own level is allowed', room: room(base()), event: pl(BOB, base({}, { [CAROL]: 50 })), expect: true },
  { name: '9.9 raising another user above one’s level is refused', room: room(base()), event: pl(BOB, base({}, { [CAROL]: 51 })), expect: /cannot give @carol:example.org level 51/ },
  { name: '9.9 raising oneself is refused', room: room(base()), event: pl(BOB, base({}, { [BOB]: 51 })), expect: /cannot give @bob:example.org level 51/ },
  { name: '9.8 lowering oneself is allowed', room: room(base()), event: pl(BOB, base({}, { [BOB]: 10 })), expect: true },
  { name: '9.8 removing one’s own entry is allowed', room: room(base()), event: pl(BOB, { users: { [ALICE]: 100 } }), expect: true },
  { name: '9.8 lowering a user below one’s level is allowed', room: room(base({}, { [CAROL]: 40 })), event: pl(BOB, base({}, { [CAROL]: 0 })), expect: true },
  { name: '9.8 removing a user below one’s level is allowed', room: room(base({}, { [CAROL]: 40 })), event: pl(BOB, base()), expect: true },
  { name: '9.8 lowering a user at one’s own level is refused', room: room(base({}, { [ERIN]: 50 })), event: pl(BOB, base({}, { [ERIN]: 10 })), expect: /cannot change @erin:example.org's level 50/ },
  { name: '9.8 lowering a user above one’s level is refused', room: room(base()), event: pl(BOB, base({}, { [ALICE]: 10 })), expect: /cannot change @alice:example.org's level 100/ },
  { name: '9.8 removing a user above one’s level is refused', room: room(base()), event: pl(BOB, { users: { [BOB]: 50 } }), expect: /cannot change @alice:example.org's level 100/ },
  { name: '9.8 an unchanged user above one’s level is no alteration', room: room(base()), event: pl(BOB, base({}, { [DAVE]: 5 })), expect: true },
  {
    name: '9.8 "50" and 50 are the same level before v10',
    only: (v) => !v.enforceIntPowerLevels,
    room: room(base({}, { [ERIN]: 50 })),
    event: pl(BOB, base({}, { [ERIN]: '50' })),
    expect: true,
  },
  { name: '9.10 the creator may reshape everything', room: room(base({ ban: 75, events: { x: 90 } })), event: pl(ALICE, { users: { [ALICE]: 100, [CAROL]: 100 }, ban: 0, events: {} }), expect: true },
];

runAuthCases('power_levels changes', cases, VERSIONS_BEFORE_12);

// Whatever a change rule lets through never hands anyone more than the sender has.
describe('power_levels changes never grant above the sender', () => {
  const users = [ALICE, BOB, CAROL, ERIN];
  const level = fc.integer({ min: -5, max: 120 });
  const usersArb = fc.dictionary(fc.constantFrom(...users), level);
  for (const id of ['1', '6', '10', '11']) {
    const version = roomVersions[id]!;
    test(`room version ${id}`, () => {
      fc.assert(
        fc.property(usersArb, usersArb, level, level, fc.constantFrom(...users), (oldUsers, newUsers, oldBan, newBan, sender) => {
          const current: JsonObject = { users: { ...oldUsers, [sender]: oldUsers[sender] ?? 60 }, ban: oldBan };
          const r = new Room(version, { powerLevels: current, members: { [sender]: 'join' } });
          const result = r.check(pl(sender, { users: newUsers, ban: newBan }));
          if (!result.allowed) return;
          const senderLevel = (current.users as Record<string, number>)[sender]!;
          for (const [user, newLevel] of Object.entries(newUsers)) {
            if (oldUsers[user] !== newLevel || user === sender) assert.ok(newLevel <= senderLevel);
          }
          if (newBan !== oldBan) assert.ok(newBan <= senderLevel && oldBan <= senderLevel);
          for (const [user, oldLevel] of Object.entries(oldUsers)) {
            if (user !== sender && newUsers[user] !== oldLevel) assert.ok(oldLevel < senderLevel);
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});
