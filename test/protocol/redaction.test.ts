import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { JsonObject, JsonValue } from '../../src/protocol/json.js';
import { protectedContentKeys, redactEvent } from '../../src/protocol/redaction.js';
import { roomVersions, type RoomVersion } from '../../src/protocol/room-versions.js';
import { vectors } from '../data/signing/vectors.js';

const ALL = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11'];
const NONE: string[] = [];
const from = (v: number): string[] => ALL.filter((x) => Number(x) >= v);
const upTo = (v: number): string[] => ALL.filter((x) => Number(x) <= v);
const version = (id: string): RoomVersion => roomVersions[id]!;

function event(type: string, content: JsonObject, extra: JsonObject = {}): JsonObject {
  return {
    type,
    room_id: '!r:example.org',
    sender: '@u:example.org',
    content,
    origin_server_ts: 1,
    depth: 2,
    auth_events: [],
    prev_events: [],
    hashes: { sha256: 'abc' },
    signatures: { 'example.org': { 'ed25519:1': 'sig' } },
    ...extra,
  };
}

// [event type, content key, room versions whose redaction keeps the key]
const CONTENT_RULES: [string, string, string[]][] = [
  ['m.room.member', 'membership', ALL],
  ['m.room.member', 'join_authorised_via_users_server', from(9)],
  ['m.room.member', 'displayname', NONE],
  ['m.room.member', 'avatar_url', NONE],
  ['m.room.member', 'reason', NONE],
  ['m.room.member', 'is_direct', NONE],
  ['m.room.create', 'creator', ALL],
  ['m.room.create', 'room_version', from(11)],
  ['m.room.create', 'm.federate', from(11)],
  ['m.room.create', 'predecessor', from(11)],
  ['m.room.create', 'type', from(11)],
  ['m.room.join_rules', 'join_rule', ALL],
  ['m.room.join_rules', 'allow', from(8)],
  ['m.room.join_rules', 'other', NONE],
  ...['ban', 'events', 'events_default', 'kick', 'redact', 'state_default', 'users', 'users_default'].map(
    (k): [string, string, string[]] => ['m.room.power_levels', k, ALL],
  ),
  ['m.room.power_levels', 'invite', from(11)],
  ['m.room.power_levels', 'notifications', NONE],
  ['m.room.power_levels', 'historical', NONE],
  ['m.room.history_visibility', 'history_visibility', ALL],
  ['m.room.history_visibility', 'other', NONE],
  ['m.room.aliases', 'aliases', upTo(5)],
  ['m.room.redaction', 'redacts', from(11)],
  ['m.room.redaction', 'reason', NONE],
  ['m.room.message', 'body', NONE],
  ['m.room.message', 'msgtype', NONE],
  ['m.room.topic', 'topic', NONE],
  ['m.room.name', 'name', NONE],
  ['m.room.encryption', 'algorithm', NONE],
  // Rules go by exact type.
  ['m.room.member.x', 'membership', NONE],
  ['M.ROOM.CREATE', 'creator', NONE],
];

// [top-level key, room versions whose redaction keeps it]
const TOP_LEVEL_RULES: [string, string[]][] = [
  ...['event_id', 'type', 'room_id', 'sender', 'state_key', 'content', 'hashes', 'signatures', 'depth',
    'prev_events', 'auth_events', 'origin_server_ts'].map((k): [string, string[]] => [k, ALL]),
  ['origin', upTo(10)],
  ['membership', upTo(10)],
  ['prev_state', upTo(10)],
  ['unsigned', NONE],
  ['redacts', NONE],
  ['age_ts', NONE],
  ['age', NONE],
  ['user_id', NONE],
  ['outlier', NONE],
  ['destinations', NONE],
];

describe('content keys kept per room version', () => {
  for (const [type, key, keptIn] of CONTENT_RULES) {
    test(`${type} ${key}: kept in ${keptIn.length === 0 ? 'no version' : keptIn.join(',')}`, () => {
      for (const v of ALL) {
        const value: JsonValue = { nested: [key, 1] };
        const content = { [key]: value, zzz_unknown: true };
        const redacted = redactEvent(event(type, content), version(v));
        // v11 keeps the whole of m.room.create content, unknown keys included.
        const keepsAll = type === 'm.room.create' && v === '11';
        const expected = keepsAll ? content : keptIn.includes(v) ? { [key]: value } : {};
        assert.deepEqual(redacted.content, expected, `room version ${v}`);
      }
    });
  }
});

describe('top-level keys kept per room version', () => {
  for (const [key, keptIn] of TOP_LEVEL_RULES) {
    test(`${key}: kept in ${keptIn.length === 0 ? 'no version' : keptIn.join(',')}`, () => {
      for (const v of ALL) {
        const input = event('m.room.message', { body: 'x' }, { [key]: key === 'content' ? {} : 'value' });
        const redacted = redactEvent(input, version(v)) as Record<string, unknown>;
        assert.equal(Object.hasOwn(redacted, key), keptIn.includes(v), `room version ${v}`);
      }
    });
  }
});

describe('special cases', () => {
  test('v11 keeps only the signed part of a member third_party_invite', () => {
    const signed = { mxid: '@u:example.org', token: 'tok', signatures: { 'id.example': { 'ed25519:0': 's' } } };
    const content = { membership: 'invite', third_party_invite: { display_name: 'Alice', signed } };
    for (const v of ALL) {
      const redacted = redactEvent(event('m.room.member', content), version(v));
      const expected = v === '11' ? { membership: 'invite', third_party_invite: { signed } } : { membership: 'invite' };
      assert.deepEqual(redacted.content, expected, `room version ${v}`);
    }
    // Without `signed` (or not an object) nothing of it survives.
    const v11 = version('11');
    const noSigned = redactEvent(event('m.room.member', { membership: 'join', third_party_invite: { display_name: 'A' } }), v11);
    assert.deepEqual(noSigned.content, { membership: 'join' });
    const notObject = redactEvent(event('m.room.member', { membership: 'join', third_party_invite: 'x' }), v11);
    assert.deepEqual(notObject.content, { membership: 'join' });
  });

  test('v11 keeps all of m.room.create content, whatever it holds', () => {
    const content = { creator: '@u:x', room_version: '11', 'm.federate': false, custom: { deep: [1, 2] } };
    assert.deepEqual(redactEvent(event('m.room.create', content), version('11')).content, content);
    assert.deepEqual(redactEvent(event('m.room.create', content), version('10')).content, { creator: '@u:x' });
  });

  test('content is always present, {} when missing or not an object', () => {
    for (const v of ['1', '11']) {
      const missing = event('m.room.create', {});
      delete missing.content;
      assert.deepEqual(redactEvent(missing, version(v)).content, {});
      assert.deepEqual(redactEvent({ ...missing, content: 'text' }, version(v)).content, {});
      assert.deepEqual(redactEvent({ ...missing, content: ['creator'] }, version(v)).content, {});
    }
  });

  test('absent keys stay absent (no undefined placeholders)', () => {
    const redacted = redactEvent({ type: 'm.room.member', content: {} }, version('1'));
    assert.deepEqual(Object.keys(redacted).sort(), ['content', 'type']);
  });

  test('the input is not changed', () => {
    const input = event(
      'm.room.member',
      { membership: 'join', displayname: 'A', third_party_invite: { signed: { a: 1 }, x: 2 } },
      { unsigned: { age: 1 }, origin: 'example.org' },
    );
    const before = structuredClone(input);
    for (const v of ALL) redactEvent(input, version(v));
    assert.deepEqual(input, before);
  });

  test('protectedContentKeys reports the rule', () => {
    assert.deepEqual(protectedContentKeys('m.room.join_rules', version('7')), ['join_rule']);
    assert.deepEqual(protectedContentKeys('m.room.join_rules', version('8')), ['join_rule', 'allow']);
    assert.equal(protectedContentKeys('m.room.create', version('11')), 'all');
    assert.deepEqual(protectedContentKeys('m.room.message', version('11')), []);
  });
});

describe('properties', () => {
  const types = fc.constantFrom(...new Set(CONTENT_RULES.map(([t]) => t)));
  const keys = fc.constantFrom(
    ...new Set([...CONTENT_RULES.map(([, k]) => k), 'third_party_invite', ...TOP_LEVEL_RULES.map(([k]) => k)]),
  );
  const values = fc.oneof(fc.string(), fc.integer(), fc.constant({ signed: { a: 1 } }), fc.constant(null));
  const arbEvent = fc
    .tuple(types, fc.dictionary(keys, values), fc.dictionary(keys, values))
    .map(([type, content, top]) => ({ ...top, type, content }) as JsonObject);

  test('redaction is idempotent and keeps only keys it was given', () => {
    fc.assert(
      fc.property(arbEvent, fc.constantFrom(...ALL), (e, v) => {
        const once = redactEvent(e, version(v));
        assert.deepEqual(redactEvent(once, version(v)), once);
        for (const k of Object.keys(once)) if (k !== 'content') assert.ok(Object.hasOwn(e, k));
        assert.ok(!Object.hasOwn(once, 'unsigned'));
      }),
    );
  });
});

test('agrees with the generator script on every vector event', () => {
  for (const [i, c] of vectors.events.entries()) {
    const redacted = redactEvent(c.signed, version(c.roomVersion));
    assert.deepEqual(Object.keys(redacted).sort(), [...c.redactedKeys].sort(), `case ${i}`);
    assert.deepEqual(redacted.content, c.redactedContent, `case ${i}`);
  }
});
