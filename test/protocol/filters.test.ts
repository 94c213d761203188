import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HearthError } from '../../src/protocol/errors.js';
import {
  compileEventFilter,
  compileFilter,
  effectiveLimit,
  filterEvents,
  matchesWildcard,
  parseEventFilter,
  parseFilter,
  parseRoomEventFilter,
  parseRoomEventFilterParam,
  projectEventFields,
  type FilterableEvent,
  type RoomEventFilter,
} from '../../src/protocol/filters.js';

const isError = (errcode: string) => (e: unknown) => e instanceof HearthError && e.status === 400 && e.errcode === errcode;

describe('filter validation', () => {
  test('the spec example and an empty filter are valid and keep their fields', () => {
    const example = {
      room: {
        state: { types: ['m.room.*'], not_rooms: ['!726s6s6q:example.com'] },
        timeline: { limit: 10, types: ['m.room.message'], not_rooms: ['!726s6s6q:example.com'], not_senders: ['@spam:example.com'] },
        ephemeral: { types: ['m.receipt', 'm.typing'], not_rooms: ['!726s6s6q:example.com'], not_senders: ['@spam:example.com'] },
        include_leave: true,
      },
      presence: { types: ['m.presence'], not_senders: ['@alice:example.com'] },
      event_format: 'client',
      event_fields: ['type', 'content', 'sender'],
    };
    assert.deepEqual(parseFilter(example), example);
    assert.deepEqual(parseFilter({}), {});
  });

  test('unknown keys are ignored, absent keys stay absent', () => {
    assert.deepEqual(parseFilter({ room: { timeline: { limit: 5, org_example_flag: 1 } }, unknown: [1.5] }), {
      room: { timeline: { limit: 5 } },
    });
    assert.deepEqual(parseRoomEventFilter({ lazy_load_members: true, include_redundant_members: false }), {
      lazy_load_members: true,
      include_redundant_members: false,
    });
  });

  const badJson: [string, unknown][] = [
    ['not an object', []],
    ['null', null],
    ['event_fields not an array', { event_fields: 'type' }],
    ['event_fields with a number', { event_fields: ['type', 1] }],
    ['event_format not a string', { event_format: 1 }],
    ['presence not an object', { presence: [] }],
    ['account_data not an object', { account_data: 'x' }],
    ['room not an object', { room: 1 }],
    ['room.timeline not an object', { room: { timeline: true } }],
    ['types not an array', { room: { timeline: { types: 'm.room.message' } } }],
    ['not_types holding null', { presence: { not_types: [null] } }],
    ['limit a string', { room: { timeline: { limit: '10' } } }],
    ['contains_url a string', { room: { timeline: { contains_url: 'true' } } }],
    ['lazy_load_members a number', { room: { state: { lazy_load_members: 1 } } }],
    ['include_redundant_members a string', { room: { state: { include_redundant_members: 'yes' } } }],
    ['include_leave a number', { room: { include_leave: 0 } }],
    ['room.rooms not an array', { room: { rooms: '!a:hs' } }],
    ['senders with an object', { room: { timeline: { senders: [{}] } } }],
  ];
  for (const [name, filter] of badJson) {
    test(`M_BAD_JSON: ${name}`, () => assert.throws(() => parseFilter(filter), isError('M_BAD_JSON')));
  }

  // Values of the right type that no filter may hold: the reference server's schema check rejects
  // these with the same error as wrong types, so they are M_BAD_JSON too.
  const badValue: [string, unknown][] = [
    ['negative limit', { room: { timeline: { limit: -1 } } }],
    ['fractional limit', { room: { timeline: { limit: 1.5 } } }],
    ['unknown event_format', { event_format: 'raw' }],
    ['room id without sigil', { room: { rooms: ['abc:hs'] } }],
    ['room id in not_rooms without server', { room: { timeline: { not_rooms: ['!abc'] } } }],
    ['user id in senders without sigil', { room: { timeline: { senders: ['alice:hs'] } } }],
    ['user id in presence not_senders', { presence: { not_senders: ['@alice'] } }],
  ];
  for (const [name, filter] of badValue) {
    test(`M_BAD_JSON: ${name}`, () => assert.throws(() => parseFilter(filter), isError('M_BAD_JSON')));
  }

  test('null stands for an absent key', () => {
    assert.deepEqual(parseFilter({ room: { timeline: { types: null, limit: null }, state: null }, presence: null, event_format: null }), { room: { timeline: {} } });
  });

  test('a filter query parameter: not JSON is M_NOT_JSON, JSON that is no filter M_BAD_JSON', () => {
    assert.deepEqual(parseRoomEventFilterParam('{"types":["a"],"unknown":1,"not_senders":null}'), { types: ['a'] });
    for (const text of ['{not json', '', '{"types":']) assert.throws(() => parseRoomEventFilterParam(text), isError('M_NOT_JSON'));
    for (const text of ['[]', '5', 'null', '{"types":"m.room.message"}', '{"senders":[1]}', '{"contains_url":"yes"}', '{"limit":-1}']) {
      assert.throws(() => parseRoomEventFilterParam(text), isError('M_BAD_JSON'), text);
    }
  });

  test('limit 0 is accepted (clients ask for no timeline with it)', () => {
    assert.deepEqual(parseFilter({ room: { timeline: { limit: 0 } } }), { room: { timeline: { limit: 0 } } });
  });

  test('error messages name the path of the bad field', () => {
    assert.throws(() => parseFilter({ room: { ephemeral: { limit: 'x' } } }), /filter\.room\.ephemeral\.limit/);
    assert.throws(() => parseEventFilter({ senders: ['nope'] }, 'filter.presence'), /filter\.presence\.senders/);
  });
});

describe('wildcards', () => {
  const cases: [pattern: string, value: string, expected: boolean][] = [
    ['m.room.message', 'm.room.message', true],
    ['m.room.message', 'm.room.messages', false],
    ['m.room.*', 'm.room.message', true],
    ['m.room.*', 'm.room.', true],
    ['m.room.*', 'm.roomy', false],
    ['*', '', true],
    ['*', 'anything', true],
    ['*.member', 'm.room.member', true],
    ['*.member', 'm.room.members', false],
    ['m.*.member', 'm.room.member', true],
    ['m.*.member', 'm.member', false],
    ['m.*.*', 'm.a.b', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'aXcYb', false],
    ['a**c', 'ac', true],
    ['m.a*b*b', 'm.ab', false],
    ['m.a*b*b', 'm.abb', true],
    ['M.ROOM.*', 'm.room.message', false],
    ['m.room.?', 'm.room.x', false],
    ['m.room.?', 'm.room.?', true],
    ['', '', true],
    ['', 'x', false],
  ];
  for (const [pattern, value, expected] of cases) {
    test(`${JSON.stringify(pattern)} ${expected ? 'matches' : 'does not match'} ${JSON.stringify(value)}`, () => {
      assert.equal(matchesWildcard(pattern, value), expected);
    });
  }

  test('agrees with a regular-expression reading of the pattern', () => {
    const alphabet = fc.constantFrom('a', 'b', '.', '*');
    fc.assert(
      fc.property(fc.string({ unit: alphabet, maxLength: 8 }), fc.string({ unit: fc.constantFrom('a', 'b', '.'), maxLength: 10 }), (p, v) => {
        const re = new RegExp('^' + p.split('*').map((s) => s.replace(/[.]/g, '\\.')).join('.*') + '$', 's');
        return matchesWildcard(p, v) === re.test(v);
      }),
      { numRuns: 2000 },
    );
  });

  test('a pathological pattern stays fast', () => {
    const t0 = performance.now();
    assert.equal(matchesWildcard('*a*a*a*a*a*a*a*a*b', 'a'.repeat(5000)), false);
    assert.ok(performance.now() - t0 < 500);
  });
});

describe('event matching', () => {
  const message: FilterableEvent = { type: 'm.room.message', sender: '@alice:hs', room_id: '!r1:hs', content: { body: 'hi' } };
  const image: FilterableEvent = { type: 'm.room.message', sender: '@bob:hs', room_id: '!r2:hs', content: { url: 'mxc://hs/abc' } };
  const member: FilterableEvent = { type: 'm.room.member', sender: '@bob:hs', room_id: '!r1:hs', content: { membership: 'join' } };
  const noSender: FilterableEvent = { type: 'm.tag', content: { tags: {} } };

  const cases: [name: string, filter: RoomEventFilter | undefined, event: FilterableEvent, expected: boolean][] = [
    ['no filter admits all', undefined, message, true],
    ['empty filter admits all', {}, member, true],
    ['types admits listed type', { types: ['m.room.message'] }, message, true],
    ['types refuses unlisted type', { types: ['m.room.message'] }, member, false],
    ['types with wildcard', { types: ['m.room.*'] }, member, true],
    ['empty types admits nothing', { types: [] }, message, false],
    ['not_types refuses', { not_types: ['m.room.member'] }, member, false],
    ['not_types lets others through', { not_types: ['m.room.member'] }, message, true],
    ['not_types wins over types', { types: ['m.room.*'], not_types: ['m.room.member'] }, member, false],
    ['not_types wildcard * refuses all', { not_types: ['*'] }, message, false],
    ['senders admits listed', { senders: ['@alice:hs'] }, message, true],
    ['senders refuses unlisted', { senders: ['@alice:hs'] }, image, false],
    ['senders match exactly, without wildcards', { senders: ['@*:hs'] }, message, false],
    ['senders refuses an event without sender', { senders: ['@alice:hs'] }, noSender, false],
    ['not_senders refuses', { not_senders: ['@bob:hs'] }, image, false],
    ['not_senders lets an event without sender through', { not_senders: ['@bob:hs'] }, noSender, true],
    ['not_senders wins over senders', { senders: ['@bob:hs'], not_senders: ['@bob:hs'] }, member, false],
    ['rooms admits listed', { rooms: ['!r1:hs'] }, message, true],
    ['rooms refuses unlisted', { rooms: ['!r1:hs'] }, image, false],
    ['not_rooms refuses', { not_rooms: ['!r2:hs'] }, image, false],
    ['not_rooms wins over rooms', { rooms: ['!r1:hs'], not_rooms: ['!r1:hs'] }, message, false],
    ['rooms do not apply to events without room', { rooms: ['!r1:hs'] }, noSender, true],
    ['contains_url true admits events with url', { contains_url: true }, image, true],
    ['contains_url true refuses events without url', { contains_url: true }, message, false],
    ['contains_url false refuses events with url', { contains_url: false }, image, false],
    ['contains_url false admits events without url', { contains_url: false }, message, true],
    ['contains_url ignores a non-string url', { contains_url: true }, { type: 'x', content: { url: 5 } }, false],
    ['all constraints together', { types: ['m.room.*'], senders: ['@bob:hs'], rooms: ['!r2:hs'], contains_url: true }, image, true],
  ];
  for (const [name, filter, event, expected] of cases) {
    test(name, () => assert.equal(compileEventFilter(filter).matches(event), expected));
  }

  test('filterEvents keeps order; allowsRoom reads the room lists', () => {
    const f = compileEventFilter({ not_types: ['m.room.member'] });
    assert.deepEqual(filterEvents(f, [message, member, image]), [message, image]);
    const r = compileEventFilter({ rooms: ['!a:hs', '!b:hs'], not_rooms: ['!b:hs'] });
    assert.deepEqual(['!a:hs', '!b:hs', '!c:hs'].map((id) => r.allowsRoom(id)), [true, false, false]);
  });

  test('admitsAll: only a filter without event constraints', () => {
    assert.equal(compileEventFilter(undefined).admitsAll, true);
    assert.equal(compileEventFilter({ lazy_load_members: true, include_redundant_members: true, limit: 5 }).admitsAll, true);
    for (const f of [{ types: [] }, { not_types: ['x'] }, { senders: ['@a:hs'] }, { not_senders: [] }, { rooms: ['!r:hs'] }, { not_rooms: [] }, { contains_url: false }]) {
      assert.equal(compileEventFilter(f).admitsAll, false, JSON.stringify(f));
    }
  });

  test('flags and limits are exposed', () => {
    assert.equal(compileEventFilter({ lazy_load_members: true }).lazyLoadMembers, true);
    assert.equal(compileEventFilter({}).lazyLoadMembers, false);
    assert.equal(compileEventFilter({ lazy_load_members: true, include_redundant_members: true }).includeRedundantMembers, true);
    // Redundant members only mean something with lazy loading.
    assert.equal(compileEventFilter({ include_redundant_members: true }).includeRedundantMembers, false);
    assert.equal(compileEventFilter({ unread_thread_notifications: true }).unreadThreadNotifications, true);
    assert.equal(compileEventFilter({ limit: 7 }).limit, 7);
    assert.equal(compileEventFilter({}).limit, undefined);
    assert.equal(effectiveLimit(compileEventFilter({}), 20, 100), 20);
    assert.equal(effectiveLimit(compileEventFilter({ limit: 500 }), 20, 100), 100);
    assert.equal(effectiveLimit(compileEventFilter({ limit: 0 }), 20, 100), 0);
  });

  test('a whole filter compiles into its sections', () => {
    const c = compileFilter(
      parseFilter({
        presence: { not_types: ['*'] },
        account_data: { types: ['m.direct'] },
        room: {
          rooms: ['!r1:hs', '!r2:hs'],
          not_rooms: ['!r2:hs'],
          include_leave: true,
          timeline: { limit: 3, not_senders: ['@bob:hs'] },
          state: { lazy_load_members: true },
          ephemeral: { types: ['m.typing'] },
          account_data: { types: ['m.tag'] },
        },
        event_format: 'federation',
        event_fields: ['content.body'],
      }),
    );
    assert.equal(c.presence.matches({ type: 'm.presence', sender: '@a:hs' }), false);
    assert.equal(c.accountData.matches({ type: 'm.direct' }), true);
    assert.equal(c.accountData.matches({ type: 'm.push_rules' }), false);
    assert.deepEqual([c.allowsRoom('!r1:hs'), c.allowsRoom('!r2:hs'), c.allowsRoom('!r3:hs')], [true, false, false]);
    assert.equal(c.includeLeave, true);
    assert.equal(c.timeline.limit, 3);
    assert.equal(c.timeline.matches(member), false);
    assert.equal(c.timeline.matches(message), true);
    assert.equal(c.state.lazyLoadMembers, true);
    assert.equal(c.ephemeral.matches({ type: 'm.receipt' }), false);
    assert.equal(c.roomAccountData.matches({ type: 'm.tag' }), true);
    assert.equal(c.eventFormat, 'federation');
    assert.deepEqual(c.eventFields, ['content.body']);
    const none = compileFilter(undefined);
    assert.equal(none.eventFormat, 'client');
    assert.equal(none.includeLeave, false);
    assert.equal(none.allowsRoom('!x:hs'), true);
    assert.equal(none.timeline.matches(member), true);
  });
});

describe('event_fields', () => {
  const event = {
    type: 'm.room.message',
    sender: '@a:hs',
    content: { body: 'hi', msgtype: 'm.text', 'm.relates_to': { rel_type: 'm.thread' } },
    unsigned: { age: 5 },
  };

  test('keeps only the named paths', () => {
    assert.deepEqual(projectEventFields(event, ['type', 'content.body']), { type: 'm.room.message', content: { body: 'hi' } });
    assert.deepEqual(projectEventFields(event, ['content.m\\.relates_to.rel_type']), {
      content: { 'm.relates_to': { rel_type: 'm.thread' } },
    });
    assert.deepEqual(projectEventFields(event, ['missing', 'content.nope', 'type.deeper']), {});
    assert.deepEqual(projectEventFields(event, []), {});
  });

  test('a whole object and a path inside it combine without touching the event', () => {
    const before = structuredClone(event);
    const out = projectEventFields(event, ['content', 'content.body', 'unsigned.age']);
    assert.deepEqual(out, { content: event.content, unsigned: { age: 5 } });
    (out['content'] as Record<string, unknown>)['body'] = 'changed';
    assert.deepEqual(event, before);
  });
});
