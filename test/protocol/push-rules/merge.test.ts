import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultPushRules } from '../../../src/protocol/push-rules/default-rules.js';
import { mergePushRules } from '../../../src/protocol/push-rules/merge.js';
import type { PushRule } from '../../../src/protocol/push-rules/types.js';

const USER = '@alice:example.org';
const ids = (rules: readonly PushRule[]) => rules.map((r) => r.rule_id);
const userRule = (rule_id: string, extra: Partial<PushRule> = {}): PushRule => ({
  rule_id,
  default: false,
  enabled: true,
  actions: ['notify'],
  ...extra,
});

test('with nothing stored, the merge is the defaults', () => {
  const defaults = defaultPushRules(USER);
  assert.deepEqual(mergePushRules(defaults, {}), defaults);
});

test('user override rules come after the master rule and before the other defaults', () => {
  const defaults = defaultPushRules(USER);
  const merged = mergePushRules(defaults, {
    rules: {
      override: [userRule('mine-1', { conditions: [] }), userRule('mine-2', { conditions: [] })],
    },
  });
  assert.deepEqual(ids(merged.override), [
    '.m.rule.master',
    'mine-1',
    'mine-2',
    ...ids(defaults.override).slice(1),
  ]);
});

test('user rules of the other kinds come before that kind’s defaults', () => {
  const defaults = defaultPushRules(USER, { legacyMentions: true });
  const merged = mergePushRules(defaults, {
    rules: {
      content: [userRule('cake', { pattern: 'cake' })],
      room: [userRule('!r:example.org')],
      sender: [userRule('@spam:example.org', { actions: [] })],
      underride: [userRule('late', { conditions: [] })],
    },
  });
  assert.deepEqual(ids(merged.content), ['cake', '.m.rule.contains_user_name']);
  assert.deepEqual(ids(merged.room), ['!r:example.org']);
  assert.deepEqual(ids(merged.sender), ['@spam:example.org']);
  assert.deepEqual(ids(merged.underride), ['late', ...ids(defaults.underride)]);
});

test('changes to default rules set enabled and actions; unknown ids are ignored', () => {
  const merged = mergePushRules(defaultPushRules(USER), {
    defaultChanges: {
      override: {
        '.m.rule.master': { enabled: true },
        '.m.rule.suppress_notices': { enabled: false },
        '.m.rule.reaction': { actions: ['notify'] },
        '.m.rule.not_a_rule': { enabled: false },
      },
      underride: { '.m.rule.message': { actions: [], enabled: true } },
      // A change filed under the wrong kind does not apply.
      content: { '.m.rule.call': { enabled: false } },
    },
  });
  const get = (list: readonly PushRule[], id: string) => list.find((r) => r.rule_id === id)!;
  assert.equal(get(merged.override, '.m.rule.master').enabled, true);
  assert.equal(get(merged.override, '.m.rule.suppress_notices').enabled, false);
  assert.deepEqual(get(merged.override, '.m.rule.suppress_notices').actions, []);
  assert.deepEqual(get(merged.override, '.m.rule.reaction').actions, ['notify']);
  assert.equal(get(merged.override, '.m.rule.reaction').enabled, true);
  assert.deepEqual(get(merged.underride, '.m.rule.message').actions, []);
  assert.equal(get(merged.underride, '.m.rule.call').enabled, true);
  assert.equal(merged.override.some((r) => r.rule_id === '.m.rule.not_a_rule'), false);
  // The master rule stays first even when enabled.
  assert.equal(merged.override[0]!.rule_id, '.m.rule.master');
});

test('user rules are marked non-default and may not take server-default ids', () => {
  const merged = mergePushRules(defaultPushRules(USER), {
    rules: {
      override: [
        userRule('.m.rule.fake', { conditions: [] }),
        userRule('ok', { default: true, conditions: [] }),
      ],
    },
  });
  assert.equal(merged.override.some((r) => r.rule_id === '.m.rule.fake'), false);
  const ok = merged.override.find((r) => r.rule_id === 'ok')!;
  assert.equal(ok.default, false);
  assert.deepEqual(ok.conditions, []);
});

test('legacy actions are kept as given, in user rules and in changed defaults', () => {
  const merged = mergePushRules(defaultPushRules(USER), {
    rules: { room: [userRule('!r:example.org', { actions: ['dont_notify'] })] },
    defaultChanges: { underride: { '.m.rule.message': { actions: ['notify', 'coalesce'] } } },
  });
  assert.deepEqual(merged.room[0]!.actions, ['dont_notify']);
  assert.deepEqual(merged.underride.find((r) => r.rule_id === '.m.rule.message')!.actions, ['notify', 'coalesce']);
});

test('the result shares no rule objects with its inputs', () => {
  const defaults = defaultPushRules(USER);
  const mine = userRule('mine', { conditions: [{ kind: 'event_match', key: 'type', pattern: 'x' }] });
  const merged = mergePushRules(defaults, { rules: { override: [mine] } });
  assert.notEqual(merged.override[0], defaults.override[0]);
  assert.notEqual(merged.override[0]!.actions, defaults.override[0]!.actions);
  assert.notEqual(merged.override[1], mine);
  assert.notEqual(merged.override[1]!.conditions, mine.conditions);
});
