import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { conditionMatches, conditionProblem } from '../../../src/protocol/push-rules/conditions.js';
import type {
  PushCondition,
  PushContext,
  PushEvent,
} from '../../../src/protocol/push-rules/types.js';
import type { JsonObject } from '../../../src/protocol/json.js';

type Fields = Partial<PushEvent> & Record<string, unknown>;

function event(content: JsonObject, fields: Fields = {}): PushEvent {
  return {
    type: 'm.room.message',
    sender: '@bob:example.org',
    room_id: '!room:example.org',
    content,
    ...fields,
  };
}

const context: PushContext = {
  userId: '@alice:example.org',
  displayName: 'Alice',
  roomMemberCount: 5,
  senderPowerLevel: 0,
};

function holds(condition: PushCondition, e: PushEvent, ctx: Partial<PushContext> = {}): boolean {
  return conditionMatches(condition, e, { ...context, ...ctx });
}

describe('event_match', () => {
  const topic = (pattern: string): PushCondition => ({
    kind: 'event_match',
    key: 'content.topic',
    pattern,
  });

  test("the spec's topic example: whole value, case-insensitive", () => {
    const t = (value: JsonObject['x']) =>
      event({ topic: value }, { type: 'm.room.topic', state_key: '' });
    assert.equal(holds(topic('lunc?*'), t('Lunch plans')), true);
    assert.equal(holds(topic('lunc?*'), t('LUNCH')), true);
    assert.equal(holds(topic('lunc?*'), t(' lunch')), false);
    assert.equal(holds(topic('lunc?*'), t('lunc')), false);
    assert.equal(holds(topic('lunc?*'), t(null)), false);
  });

  test('a missing or non-string property never matches, even *', () => {
    assert.equal(holds(topic('*'), event({ topic: '' })), true);
    assert.equal(holds(topic('*'), event({})), false);
    assert.equal(holds(topic('*'), event({ topic: 5 })), false);
    assert.equal(holds(topic('*'), event({ topic: true })), false);
    assert.equal(holds(topic('*'), event({ topic: ['a'] })), false);
    assert.equal(holds(topic('*'), event({ topic: { a: 'b' } })), false);
  });

  test('top-level fields, including state_key', () => {
    const c: PushCondition = { kind: 'event_match', key: 'state_key', pattern: '' };
    assert.equal(holds(c, event({}, { state_key: '' })), true);
    assert.equal(holds(c, event({}, { state_key: '@x:y' })), false);
    assert.equal(holds(c, event({})), false);
    const type: PushCondition = { kind: 'event_match', key: 'type', pattern: 'm.room.*' };
    assert.equal(holds(type, event({})), true);
    assert.equal(holds(type, event({}, { type: 'm.reaction' })), false);
  });

  test('escaped dots in the key reach dotted property names', () => {
    const c: PushCondition = {
      kind: 'event_match',
      key: 'content.m\\.relates_to.rel_type',
      pattern: 'm.th*',
    };
    assert.equal(holds(c, event({ 'm.relates_to': { rel_type: 'm.thread' } })), true);
    assert.equal(holds(c, event({ 'm.relates_to': { rel_type: 'm.replace' } })), false);
    assert.equal(holds(c, event({ m: { relates_to: { rel_type: 'm.thread' } } })), false);
  });

  test('content.body matches words; other keys match the whole value', () => {
    const body: PushCondition = { kind: 'event_match', key: 'content.body', pattern: 'lunch' };
    assert.equal(holds(body, event({ body: 'Lunch plans?' })), true);
    assert.equal(holds(body, event({ body: 'lunchtime' })), false);
    assert.equal(holds(body, event({ body: 'we had (lunch)' })), true);
    assert.equal(holds(topic('lunch'), event({ topic: 'Lunch plans?' })), false);
    const spanning: PushCondition = { kind: 'event_match', key: 'content.body', pattern: 'ex*ple' };
    assert.equal(holds(spanning, event({ body: 'An exciting triple-whammy' })), true);
  });

  test('a condition without key or pattern never matches', () => {
    assert.equal(holds({ kind: 'event_match', key: 'type' }, event({})), false);
    assert.equal(holds({ kind: 'event_match', pattern: '*' }, event({})), false);
    const numeric = { kind: 'event_match', key: 'type', pattern: 5 } as unknown as PushCondition;
    assert.equal(holds(numeric, event({})), false);
  });
});

describe('event_property_is', () => {
  const federate = (value: PushCondition['value']): PushCondition => ({
    kind: 'event_property_is',
    key: 'content.m\\.federate',
    value,
  });

  test("the spec's m.federate example: exact, no casting", () => {
    assert.equal(holds(federate(true), event({ 'm.federate': true })), true);
    assert.equal(holds(federate(true), event({ 'm.federate': 'true' })), false);
    assert.equal(holds(federate(true), event({ 'm.federate': 1 })), false);
    assert.equal(holds(federate(true), event({ 'm.federate': false })), false);
    assert.equal(holds(federate(true), event({})), false);
  });

  test('strings, integers and null', () => {
    const is = (value: PushCondition['value']): PushCondition => ({
      kind: 'event_property_is',
      key: 'content.x',
      value,
    });
    assert.equal(holds(is('Hello'), event({ x: 'Hello' })), true);
    assert.equal(holds(is('Hello'), event({ x: 'hello' })), false);
    assert.equal(holds(is(5), event({ x: 5 })), true);
    assert.equal(holds(is(5), event({ x: '5' })), false);
    assert.equal(holds(is(null), event({ x: null })), true);
    assert.equal(holds(is(null), event({})), false);
    assert.equal(holds(is(false), event({ x: null })), false);
  });

  test('compound values and non-integer numbers never match', () => {
    const is = (value: unknown): PushCondition =>
      ({ kind: 'event_property_is', key: 'content.x', value }) as PushCondition;
    assert.equal(holds(is(1.5), event({ x: 1.5 })), false);
    assert.equal(holds(is(2 ** 53), event({ x: 2 ** 53 })), false);
    assert.equal(holds(is({ a: 1 }), event({ x: { a: 1 } })), false);
    assert.equal(holds(is(['a']), event({ x: ['a'] })), false);
    assert.equal(holds(is('a'), event({ x: ['a'] })), false);
    assert.equal(holds({ kind: 'event_property_is', key: 'content.x' }, event({ x: null })), false);
  });
});

describe('event_property_contains', () => {
  const aliases = (value: PushCondition['value']): PushCondition => ({
    kind: 'event_property_contains',
    key: 'content.alt_aliases',
    value,
  });

  test("the spec's alt_aliases example", () => {
    const e = event({ alt_aliases: ['#somewhere:example.org', '#myroom:example.com'] });
    assert.equal(holds(aliases('#myroom:example.com'), e), true);
    assert.equal(holds(aliases(':example.com'), e), false);
    assert.equal(holds(aliases('#MYROOM:example.com'), e), false);
  });

  test('not an array, or missing: no match', () => {
    assert.equal(holds(aliases('#a:b'), event({ alt_aliases: '#a:b' })), false);
    assert.equal(holds(aliases('#a:b'), event({ alt_aliases: { '#a:b': true } })), false);
    assert.equal(holds(aliases('#a:b'), event({})), false);
  });

  test('elements are compared exactly, other element types ignored', () => {
    const contains = (value: unknown): PushCondition =>
      ({ kind: 'event_property_contains', key: 'content.list', value }) as PushCondition;
    const e = event({ list: [{ a: 1 }, ['x'], 'x', 7, true, null] });
    assert.equal(holds(contains('x'), e), true);
    assert.equal(holds(contains(7), e), true);
    assert.equal(holds(contains(true), e), true);
    assert.equal(holds(contains(null), e), true);
    assert.equal(holds(contains('7'), e), false);
    assert.equal(holds(contains(false), e), false);
    assert.equal(holds(contains({ a: 1 }), e), false);
    assert.equal(holds(contains(null), event({ list: [] })), false);
  });

  test('m.mentions.user_ids through an escaped key', () => {
    const c: PushCondition = {
      kind: 'event_property_contains',
      key: 'content.m\\.mentions.user_ids',
      value: '@alice:example.org',
    };
    assert.equal(holds(c, event({ 'm.mentions': { user_ids: ['@alice:example.org'] } })), true);
    assert.equal(holds(c, event({ 'm.mentions': { user_ids: ['@alicia:example.org'] } })), false);
    assert.equal(holds(c, event({ 'm.mentions': {} })), false);
  });
});

describe('contains_display_name', () => {
  const c: PushCondition = { kind: 'contains_display_name' };

  test('the display name as a whole word, any case', () => {
    assert.equal(holds(c, event({ body: 'Hello Alice!' })), true);
    assert.equal(holds(c, event({ body: 'alice: look' })), true);
    assert.equal(holds(c, event({ body: 'ALICE' })), true);
    assert.equal(holds(c, event({ body: 'Alicent is here' })), false);
    assert.equal(holds(c, event({ body: 'Malice' })), false);
    assert.equal(holds(c, event({ body: 'alice_bot' })), false);
    assert.equal(holds(c, event({ body: 'alice2' })), false);
    assert.equal(holds(c, event({ body: 'nobody' })), false);
  });

  test('names with spaces and punctuation', () => {
    assert.equal(holds(c, event({ body: 'hey alice smith, hi' }), { displayName: 'Alice Smith' }), true);
    assert.equal(holds(c, event({ body: 'hey alice smithers' }), { displayName: 'Alice Smith' }), false);
    assert.equal(holds(c, event({ body: 'ping [bot]!' }), { displayName: '[bot]' }), true);
    assert.equal(holds(c, event({ body: 'ping x[bot]' }), { displayName: '[bot]' }), false);
  });

  test('wildcard characters in the name are literal', () => {
    assert.equal(holds(c, event({ body: 'A* is here' }), { displayName: 'A*' }), true);
    assert.equal(holds(c, event({ body: 'Ab is here' }), { displayName: 'A*' }), false);
    assert.equal(holds(c, event({ body: 'x' }), { displayName: '?' }), false);
  });

  test('no display name, or no string body: no match', () => {
    assert.equal(holds(c, event({ body: 'Alice' }), { displayName: null }), false);
    assert.equal(holds(c, event({ body: 'Alice' }), { displayName: undefined }), false);
    assert.equal(holds(c, event({ body: 'Alice' }), { displayName: '' }), false);
    assert.equal(holds(c, event({ body: ['Alice'] })), false);
    assert.equal(holds(c, event({ topic: 'Alice' })), false);
  });
});

describe('room_member_count', () => {
  const count = (is: string | undefined, n: number) => {
    const condition: PushCondition = { kind: 'room_member_count', ...(is === undefined ? {} : { is }) };
    return holds(condition, event({}), { roomMemberCount: n });
  };

  test('a bare number and == mean equal', () => {
    assert.equal(count('2', 2), true);
    assert.equal(count('2', 3), false);
    assert.equal(count('==2', 2), true);
    assert.equal(count('==2', 1), false);
  });

  test('< > <= >=', () => {
    assert.equal(count('<10', 9), true);
    assert.equal(count('<10', 10), false);
    assert.equal(count('>1', 2), true);
    assert.equal(count('>1', 1), false);
    assert.equal(count('<=10', 10), true);
    assert.equal(count('<=10', 11), false);
    assert.equal(count('>=3', 3), true);
    assert.equal(count('>=3', 2), false);
  });

  test('malformed values never match', () => {
    for (const is of ['', '=2', '!=2', '2.0', ' 2', '2 ', '<', 'two', '=>2', '-2', '<<2']) {
      assert.equal(count(is, 2), false, is);
      assert.equal(count(is, 3), false, is);
    }
    assert.equal(count(undefined, 2), false);
  });
});

describe('sender_notification_permission', () => {
  const room: PushCondition = { kind: 'sender_notification_permission', key: 'room' };

  test('without a notifications level the sender needs 50', () => {
    assert.equal(holds(room, event({}), { senderPowerLevel: 50 }), true);
    assert.equal(holds(room, event({}), { senderPowerLevel: 100 }), true);
    assert.equal(holds(room, event({}), { senderPowerLevel: 49 }), false);
    assert.equal(holds(room, event({}), { senderPowerLevel: 49, notificationPowerLevels: {} }), false);
  });

  test('the room notifications level decides when present', () => {
    const levels = (room: unknown) => ({ notificationPowerLevels: { room } });
    assert.equal(holds(room, event({}), { senderPowerLevel: 20, ...levels(20) }), true);
    assert.equal(holds(room, event({}), { senderPowerLevel: 19, ...levels(20) }), false);
    assert.equal(holds(room, event({}), { senderPowerLevel: 99, ...levels(100) }), false);
    assert.equal(holds(room, event({}), { senderPowerLevel: 0, ...levels(0) }), true);
    assert.equal(holds(room, event({}), { senderPowerLevel: -1, ...levels(0) }), false);
    // Rooms before v10 may hold integer strings.
    assert.equal(holds(room, event({}), { senderPowerLevel: 30, ...levels('30') }), true);
    assert.equal(holds(room, event({}), { senderPowerLevel: 29, ...levels('30') }), false);
    // Anything else counts as absent: 50.
    assert.equal(holds(room, event({}), { senderPowerLevel: 49, ...levels('lots') }), false);
    assert.equal(holds(room, event({}), { senderPowerLevel: 50, ...levels(null) }), true);
  });

  test('other keys, and keys that only exist on Object.prototype', () => {
    const key = (k: string): PushCondition => ({ kind: 'sender_notification_permission', key: k });
    const levels = { notificationPowerLevels: { room: 0, custom: 10 } };
    assert.equal(holds(key('custom'), event({}), { senderPowerLevel: 10, ...levels }), true);
    assert.equal(holds(key('custom'), event({}), { senderPowerLevel: 9, ...levels }), false);
    assert.equal(holds(key('other'), event({}), { senderPowerLevel: 49, ...levels }), false);
    assert.equal(holds(key('other'), event({}), { senderPowerLevel: 50, ...levels }), true);
    assert.equal(holds(key('constructor'), event({}), { senderPowerLevel: 49, ...levels }), false);
  });

  test('a missing key never matches', () => {
    const noKey: PushCondition = { kind: 'sender_notification_permission' };
    assert.equal(holds(noKey, event({}), { senderPowerLevel: 100 }), false);
  });
});

test('unknown condition kinds never match', () => {
  for (const kind of ['related_event_match', 'org.example.anything', '', 'EVENT_MATCH']) {
    assert.equal(holds({ kind, key: 'type', pattern: '*' }, event({})), false, kind);
  }
  // The same parameters under a known kind do match, so the kind alone decided.
  assert.equal(holds({ kind: 'event_match', key: 'type', pattern: '*' }, event({})), true);
});

describe('conditionProblem: the fields a client sends', () => {
  test('well-typed conditions of every spec kind, and unknown kinds, pass', () => {
    for (const c of [
      { kind: 'event_match', key: 'type', pattern: 'm.room.*' },
      { kind: 'event_property_is', key: 'content.n', value: 3 },
      { kind: 'event_property_is', key: 'content.n', value: null },
      { kind: 'event_property_contains', key: 'content.tags', value: 'x' },
      { kind: 'contains_display_name' },
      { kind: 'room_member_count', is: '<=10' },
      { kind: 'sender_notification_permission', key: 'room' },
      { kind: 'com.example.unknown', key: 5 },
    ]) {
      assert.equal(conditionProblem(c), undefined, JSON.stringify(c));
    }
  });

  test('a missing or mistyped field names itself', () => {
    assert.match(conditionProblem({ kind: 'event_match', key: 1, pattern: 'x' })!, /'key'/);
    assert.match(conditionProblem({ kind: 'event_match', key: 'type' })!, /'pattern'/);
    assert.match(conditionProblem({ kind: 'event_property_is', key: 'a', value: 0.5 })!, /'value'/);
    assert.match(conditionProblem({ kind: 'event_property_contains', key: 'a' })!, /'value'/);
    assert.match(conditionProblem({ kind: 'room_member_count', is: 2 })!, /'is'/);
    assert.match(conditionProblem({ kind: 'room_member_count', is: '2 members' })!, /'is'/);
    assert.match(conditionProblem({ kind: 'sender_notification_permission', key: ['room'] })!, /'key'/);
  });
});
