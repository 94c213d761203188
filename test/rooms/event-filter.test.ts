import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { isFilterTrivial, matchesRoomEventFilter, matchesWildcard, parseRoomEventFilter, parseRoomEventFilterParam } from '../../src/rooms/event-filter.js';

const ev = (type: string, sender = '@a:hs', content: Record<string, unknown> = {}, room_id = '!r:hs') => ({ type, sender, content: content as never, room_id });

describe('RoomEventFilter', () => {
  test('wildcards match any run of characters', () => {
    assert.ok(matchesWildcard('m.room.message', 'm.room.*'));
    assert.ok(matchesWildcard('m.room.message', '*'));
    assert.ok(matchesWildcard('m.room.message', 'm.*.message'));
    assert.ok(matchesWildcard('m.room.message', '*message'));
    assert.equal(matchesWildcard('m.room.message', 'm.room'), false);
    assert.equal(matchesWildcard('m.room', 'm.room.*'), false);
    assert.equal(matchesWildcard('m.ab', 'm.a*b*b'), false);
    assert.ok(matchesWildcard('m.abb', 'm.a*b*b'));
  });

  test('types and not_types; not_types wins', () => {
    const f = parseRoomEventFilter({ types: ['m.room.*'], not_types: ['m.room.member'] });
    assert.ok(matchesRoomEventFilter(f, ev('m.room.message')));
    assert.equal(matchesRoomEventFilter(f, ev('m.room.member')), false);
    assert.equal(matchesRoomEventFilter(f, ev('m.reaction')), false);
    assert.equal(matchesRoomEventFilter(parseRoomEventFilter({ types: [] }), ev('m.room.message')), false, 'an empty list lets nothing through');
  });

  test('senders and not_senders, exact', () => {
    const f = parseRoomEventFilter({ senders: ['@a:hs', '@b:hs'], not_senders: ['@b:hs'] });
    assert.ok(matchesRoomEventFilter(f, ev('x', '@a:hs')));
    assert.equal(matchesRoomEventFilter(f, ev('x', '@b:hs')), false);
    assert.equal(matchesRoomEventFilter(f, ev('x', '@c:hs')), false);
    assert.equal(matchesRoomEventFilter(parseRoomEventFilter({ senders: ['@*'] }), ev('x', '@a:hs')), false, 'no wildcards in senders');
  });

  test('contains_url, rooms and not_rooms', () => {
    const withUrl = ev('m.room.message', '@a:hs', { url: 'mxc://hs/x' });
    const without = ev('m.room.message', '@a:hs', { body: 'x' });
    assert.ok(matchesRoomEventFilter({ contains_url: true }, withUrl));
    assert.equal(matchesRoomEventFilter({ contains_url: true }, without), false);
    assert.ok(matchesRoomEventFilter({ contains_url: false }, without));
    assert.equal(matchesRoomEventFilter({ contains_url: false }, withUrl), false);
    assert.equal(matchesRoomEventFilter({ contains_url: true }, ev('x', '@a:hs', { url: 5 })), false);
    assert.equal(matchesRoomEventFilter({ not_rooms: ['!r:hs'] }, without), false);
    assert.ok(matchesRoomEventFilter({ rooms: ['!r:hs'] }, without));
  });

  test('an empty filter lets everything through', () => {
    assert.ok(isFilterTrivial(parseRoomEventFilter({ lazy_load_members: true, limit: 5 })));
    assert.equal(isFilterTrivial(parseRoomEventFilter({ types: ['x'] })), false);
    assert.ok(matchesRoomEventFilter({}, ev('anything')));
  });

  test('malformed filters are 400 M_BAD_JSON', () => {
    const bad = [() => parseRoomEventFilterParam('{not json'), () => parseRoomEventFilter([]), () => parseRoomEventFilter({ types: 'm.room.message' }), () => parseRoomEventFilter({ senders: [1] }), () => parseRoomEventFilter({ contains_url: 'yes' }), () => parseRoomEventFilter({ limit: -1 })];
    for (const f of bad) {
      assert.throws(f, (err: unknown) => err instanceof HearthError && err.status === 400 && err.errcode === 'M_BAD_JSON');
    }
    assert.deepEqual(parseRoomEventFilterParam('{"types":["a"],"unknown":1,"not_senders":null}'), { types: ['a'] });
  });
});
