import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStateKey, stateKey, toRoomEvent, type Pdu } from '../../src/protocol/events.js';
import { roomVersions } from '../../src/protocol/room-versions.js';

const base: Pdu = {
  room_id: '!r:hs',
  sender: '@a:hs',
  type: 'm.room.redaction',
  content: {},
  origin_server_ts: 1,
  depth: 3,
  auth_events: [['$a:hs', { sha256: 'x' }]],
  prev_events: ['$p'],
  hashes: { sha256: 'h' },
  signatures: {},
};

test('toRoomEvent reads references in both formats', () => {
  const ev = toRoomEvent(base, '$e', roomVersions['10']!);
  assert.deepEqual(ev.auth_events, ['$a:hs']);
  assert.deepEqual(ev.prev_events, ['$p']);
  assert.equal(ev.event_id, '$e');
});

test('a redaction names its target at the top level before v11 and in content from v11', () => {
  const top = { ...base, redacts: '$top' };
  const inContent = { ...base, content: { redacts: '$content' } };
  for (const id of ['1', '3', '10']) {
    assert.equal(toRoomEvent(top, '$e', roomVersions[id]!).redacts, '$top');
    assert.equal(toRoomEvent(inContent, '$e', roomVersions[id]!).redacts, undefined);
  }
  assert.equal(toRoomEvent(top, '$e', roomVersions['11']!).redacts, undefined);
  assert.equal(toRoomEvent(inContent, '$e', roomVersions['11']!).redacts, '$content');
  // Only redactions redact.
  assert.equal(toRoomEvent({ ...top, type: 'm.room.message' }, '$e', roomVersions['10']!).redacts, undefined);
});

test('state keys are unambiguous whatever the type holds', () => {
  const a = stateKey('a:b', 'c');
  const b = stateKey('a', ':bc');
  assert.notEqual(a, b);
  assert.deepEqual(parseStateKey(a), { type: 'a:b', stateKey: 'c' });
  assert.deepEqual(parseStateKey(b), { type: 'a', stateKey: ':bc' });
  assert.deepEqual(parseStateKey(stateKey('m.room.member', '@x:y')), { type: 'm.room.member', stateKey: '@x:y' });
});
