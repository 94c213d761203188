import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultPushRules } from '../../../src/protocol/push-rules/default-rules.js';
import type { PushRule } from '../../../src/protocol/push-rules/types.js';

const USER = '@alice:example.org';
const ids = (rules: readonly PushRule[]) => rules.map((r) => r.rule_id);
const byId = (rules: readonly PushRule[], id: string) => rules.find((r) => r.rule_id === id)!;

test('the current spec: override and underride rules in order, no content rules', () => {
  const rules = defaultPushRules(USER);
  assert.deepEqual(ids(rules.override), [
    '.m.rule.master',
    '.m.rule.suppress_notices',
    '.m.rule.invite_for_me',
    '.m.rule.member_event',
    '.m.rule.is_user_mention',
    '.m.rule.is_room_mention',
    '.m.rule.tombstone',
    '.m.rule.reaction',
    '.m.rule.room.server_acl',
    '.m.rule.suppress_edits',
  ]);
  assert.deepEqual(ids(rules.content), []);
  assert.deepEqual(ids(rules.room), []);
  assert.deepEqual(ids(rules.sender), []);
  assert.deepEqual(ids(rules.underride), [
    '.m.rule.call',
    '.m.rule.encrypted_room_one_to_one',
    '.m.rule.room_one_to_one',
    '.m.rule.message',
    '.m.rule.encrypted',
  ]);
});

test('every default rule is marked default; only the master rule starts disabled', () => {
  const rules = defaultPushRules(USER, { legacyMentions: true });
  for (const rule of [...rules.override, ...rules.content, ...rules.underride]) {
    assert.equal(rule.default, true, rule.rule_id);
    assert.equal(rule.enabled, rule.rule_id !== '.m.rule.master', rule.rule_id);
    assert.ok(rule.rule_id.startsWith('.m.rule.'), rule.rule_id);
  }
});

test('rules that name the user use the given id', () => {
  const rules = defaultPushRules('@bob:example.com');
  assert.deepEqual(byId(rules.override, '.m.rule.invite_for_me').conditions?.[2], {
    kind: 'event_match',
    key: 'state_key',
    pattern: '@bob:example.com',
  });
  assert.deepEqual(byId(rules.override, '.m.rule.is_user_mention').conditions, [
    { kind: 'event_property_contains', key: 'content.m\\.mentions.user_ids', value: '@bob:example.com' },
  ]);
});

test('legacy mention rules on request, at their pre-1.17 places', () => {
  const rules = defaultPushRules('@bob:example.com', { legacyMentions: true });
  assert.deepEqual(ids(rules.override), [
    '.m.rule.master',
    '.m.rule.suppress_notices',
    '.m.rule.invite_for_me',
    '.m.rule.member_event',
    '.m.rule.is_user_mention',
    '.m.rule.contains_display_name',
    '.m.rule.is_room_mention',
    '.m.rule.roomnotif',
    '.m.rule.tombstone',
    '.m.rule.reaction',
    '.m.rule.room.server_acl',
    '.m.rule.suppress_edits',
  ]);
  const mention = ['notify', { set_tweak: 'sound', value: 'default' }, { set_tweak: 'highlight' }];
  assert.deepEqual(byId(rules.override, '.m.rule.contains_display_name'), {
    rule_id: '.m.rule.contains_display_name',
    default: true,
    enabled: true,
    conditions: [{ kind: 'contains_display_name' }],
    actions: mention,
  });
  assert.deepEqual(byId(rules.override, '.m.rule.roomnotif'), {
    rule_id: '.m.rule.roomnotif',
    default: true,
    enabled: true,
    conditions: [
      { kind: 'event_match', key: 'content.body', pattern: '@room' },
      { kind: 'sender_notification_permission', key: 'room' },
    ],
    actions: ['notify', { set_tweak: 'highlight' }],
  });
  assert.deepEqual(rules.content, [
    {
      rule_id: '.m.rule.contains_user_name',
      default: true,
      enabled: true,
      pattern: 'bob',
      actions: mention,
    },
  ]);
  assert.deepEqual(ids(rules.underride), ids(defaultPushRules(USER).underride));
});

test('each call builds fresh objects', () => {
  const a = defaultPushRules(USER);
  const b = defaultPushRules(USER);
  assert.deepEqual(a, b);
  assert.notEqual(a.override[2]!.actions[1], b.override[2]!.actions[1]);
  assert.notEqual(a.underride[0], b.underride[0]);
});
