import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultPushRules } from '../../../src/protocol/push-rules/default-rules.js';
import { evaluatePushRules } from '../../../src/protocol/push-rules/evaluate.js';
import { mergePushRules } from '../../../src/protocol/push-rules/merge.js';
import type { UserPushRules } from '../../../src/protocol/push-rules/merge.js';
import type { PushContext, PushRule, PushRuleSet } from '../../../src/protocol/push-rules/types.js';
import type { JsonObject } from '../../../src/protocol/json.js';
import type { RoomEvent } from '../../../src/protocol/events.js';
import { EventFactory } from '../../support/room-events.js';

const ALICE = '@alice:example.org';
const BOB = '@bob:example.org';
const f = new EventFactory();

const group: PushContext = {
  userId: ALICE,
  displayName: 'Alice',
  roomMemberCount: 5,
  senderPowerLevel: 0,
};
const oneToOne: PushContext = { ...group, roomMemberCount: 2 };

const current = defaultPushRules(ALICE);
const legacy = defaultPushRules(ALICE, { legacyMentions: true });
const withUser = (user: UserPushRules) => mergePushRules(current, user);
/** The id of the rule that decided, or null when none matched. */
const decidedBy = (rules: PushRuleSet, e: RoomEvent, ctx: PushContext) =>
  evaluatePushRules(rules, e, ctx)?.rule_id ?? null;

const message = (content: JsonObject, sender = BOB) =>
  f.make({ type: 'm.room.message', sender, content: { msgtype: 'm.text', ...content } });

describe('default rules end to end', () => {
  test('a plain message in a group room notifies without sound or highlight', () => {
    const r = evaluatePushRules(current, message({ body: 'hello everyone' }), group);
    assert.deepEqual(r, {
      kind: 'underride',
      rule_id: '.m.rule.message',
      actions: ['notify'],
      notify: true,
      highlight: false,
      tweaks: {},
    });
  });

  test('a 1:1 room message notifies with the default sound', () => {
    const r = evaluatePushRules(current, message({ body: 'hi' }), oneToOne)!;
    assert.equal(r.rule_id, '.m.rule.room_one_to_one');
    assert.equal(r.notify, true);
    assert.equal(r.sound, 'default');
    assert.equal(r.highlight, false);
  });

  test('encrypted events: sound in 1:1 rooms, plain notify in groups', () => {
    const content = { algorithm: 'm.megolm.v1.aes-sha2' };
    const e = f.make({ type: 'm.room.encrypted', sender: BOB, content });
    const one = evaluatePushRules(current, e, oneToOne)!;
    assert.equal(one.rule_id, '.m.rule.encrypted_room_one_to_one');
    assert.equal(one.sound, 'default');
    const many = evaluatePushRules(current, e, group)!;
    assert.equal(many.rule_id, '.m.rule.encrypted');
    assert.equal(many.notify, true);
    assert.equal(many.sound, undefined);
  });

  test('a notice is suppressed', () => {
    const r = evaluatePushRules(current, message({ msgtype: 'm.notice', body: 'bot says' }), oneToOne)!;
    assert.equal(r.rule_id, '.m.rule.suppress_notices');
    assert.equal(r.notify, false);
    assert.deepEqual(r.actions, []);
  });

  test('an invite for me notifies with sound; other membership changes do not', () => {
    const invite = (target: string) =>
      f.make({
        type: 'm.room.member',
        sender: BOB,
        state_key: target,
        content: { membership: 'invite' },
      });
    const mine = evaluatePushRules(current, invite(ALICE), group)!;
    assert.equal(mine.rule_id, '.m.rule.invite_for_me');
    assert.equal(mine.notify, true);
    assert.equal(mine.sound, 'default');
    assert.equal(mine.highlight, false);
    const theirs = evaluatePushRules(current, invite('@carol:example.org'), group)!;
    assert.equal(theirs.rule_id, '.m.rule.member_event');
    assert.equal(theirs.notify, false);
  });

  test('m.mentions user_ids naming me highlights with sound', () => {
    const toMe = message({ body: 'hey', 'm.mentions': { user_ids: [ALICE] } });
    const r = evaluatePushRules(current, toMe, group)!;
    assert.equal(r.rule_id, '.m.rule.is_user_mention');
    assert.equal(r.notify, true);
    assert.equal(r.highlight, true);
    assert.equal(r.sound, 'default');
    const toBob = message({ body: 'hey', 'm.mentions': { user_ids: [BOB] } });
    const other = evaluatePushRules(current, toBob, group)!;
    assert.equal(other.rule_id, '.m.rule.message');
    assert.equal(other.highlight, false);
  });

  test('@room by a sender with enough power highlights; without it, it does not', () => {
    const atRoom = message({ body: '@room hello', 'm.mentions': { room: true } });
    const strong = evaluatePushRules(current, atRoom, { ...group, senderPowerLevel: 50 })!;
    assert.equal(strong.rule_id, '.m.rule.is_room_mention');
    assert.equal(strong.highlight, true);
    assert.equal(strong.notify, true);
    const weak = evaluatePushRules(current, atRoom, { ...group, senderPowerLevel: 49 })!;
    assert.equal(weak.rule_id, '.m.rule.message');
    assert.equal(weak.highlight, false);
    const lowered = evaluatePushRules(current, atRoom, {
      ...group,
      senderPowerLevel: 0,
      notificationPowerLevels: { room: 0 },
    })!;
    assert.equal(lowered.rule_id, '.m.rule.is_room_mention');
    // m.mentions.room must be the boolean true.
    const stringy = message({ body: 'x', 'm.mentions': { room: 'true' } });
    assert.equal(decidedBy(current, stringy, { ...group, senderPowerLevel: 100 }), '.m.rule.message');
  });

  test('a room upgrade highlights; a tombstone-typed non-state event does not', () => {
    const tombstone = f.make({
      type: 'm.room.tombstone',
      sender: BOB,
      state_key: '',
      content: { body: 'moved', replacement_room: '!new:example.org' },
    });
    const r = evaluatePushRules(current, tombstone, group)!;
    assert.equal(r.rule_id, '.m.rule.tombstone');
    assert.equal(r.highlight, true);
    const notState = f.make({ type: 'm.room.tombstone', sender: BOB, content: {} });
    assert.equal(evaluatePushRules(current, notState, group), null);
  });

  test('reactions, server ACL changes and edits are suppressed', () => {
    const reaction = f.make({ type: 'm.reaction', sender: BOB, content: {} });
    assert.equal(evaluatePushRules(current, reaction, oneToOne)!.rule_id, '.m.rule.reaction');
    const acl = f.make({
      type: 'm.room.server_acl',
      sender: BOB,
      state_key: '',
      content: { allow: ['*'] },
    });
    assert.equal(evaluatePushRules(current, acl, oneToOne)!.rule_id, '.m.rule.room.server_acl');
    const edit = message({
      body: '* fixed',
      'm.new_content': { msgtype: 'm.text', body: 'fixed' },
      'm.relates_to': { rel_type: 'm.replace', event_id: '$orig' },
    });
    const r = evaluatePushRules(current, edit, oneToOne)!;
    assert.equal(r.rule_id, '.m.rule.suppress_edits');
    assert.equal(r.notify, false);
  });

  test('a call rings', () => {
    const call = f.make({ type: 'm.call.invite', sender: BOB, content: { call_id: 'c', version: '1' } });
    const r = evaluatePushRules(current, call, group)!;
    assert.equal(r.rule_id, '.m.rule.call');
    assert.equal(r.sound, 'ring');
  });

  test('an event no rule covers yields null', () => {
    const custom = f.make({ type: 'org.example.custom', sender: BOB, content: {} });
    assert.equal(evaluatePushRules(current, custom, oneToOne), null);
  });

  test('my own events never notify me', () => {
    const mine = message({ body: 'hi', 'm.mentions': { user_ids: [ALICE] } }, ALICE);
    assert.equal(evaluatePushRules(current, mine, oneToOne), null);
  });
});

describe('legacy body mentions', () => {
  test('by default a display name in the body is an ordinary message', () => {
    const r = evaluatePushRules(current, message({ body: 'Hi Alice, lunch?' }), group)!;
    assert.equal(r.rule_id, '.m.rule.message');
    assert.equal(r.highlight, false);
  });

  test('with legacy rules a display name in the body highlights with the default sound', () => {
    const r = evaluatePushRules(legacy, message({ body: 'Hi Alice, lunch?' }), group)!;
    assert.equal(r.rule_id, '.m.rule.contains_display_name');
    assert.equal(r.highlight, true);
    assert.equal(r.sound, 'default');
    assert.equal(r.notify, true);
    const near = evaluatePushRules(legacy, message({ body: 'Hi Alicent' }), group)!;
    assert.equal(near.rule_id, '.m.rule.message');
  });

  test('with legacy rules the localpart and @room in the body count', () => {
    const noName = { ...group, displayName: null };
    const byName = evaluatePushRules(legacy, message({ body: 'ask alice' }), noName)!;
    assert.equal(byName.rule_id, '.m.rule.contains_user_name');
    assert.equal(byName.kind, 'content');
    assert.equal(byName.highlight, true);
    const atRoom = message({ body: 'hey @room' });
    assert.equal(decidedBy(legacy, atRoom, { ...group, senderPowerLevel: 50 }), '.m.rule.roomnotif');
    assert.equal(decidedBy(legacy, atRoom, group), '.m.rule.message');
  });

  test('legacy rules are skipped for events that carry m.mentions', () => {
    const r = evaluatePushRules(legacy, message({ body: 'Hi Alice @room', 'm.mentions': {} }), {
      ...group,
      senderPowerLevel: 100,
    })!;
    assert.equal(r.rule_id, '.m.rule.message');
    assert.equal(r.highlight, false);
  });
});

describe('rule order and user rules', () => {
  const override = (
    rule_id: string,
    conditions: PushRule['conditions'],
    actions: PushRule['actions'],
  ): PushRule => ({ rule_id, default: false, enabled: true, conditions, actions });

  test('a disabled rule is skipped', () => {
    const off = { enabled: false };
    const rules = withUser({ defaultChanges: { override: { '.m.rule.suppress_notices': off } } });
    const notice = message({ msgtype: 'm.notice', body: 'bot' });
    assert.equal(decidedBy(rules, notice, group), '.m.rule.message');
    // The same event against the unchanged defaults is suppressed, so the change decided.
    assert.equal(decidedBy(current, notice, group), '.m.rule.suppress_notices');
  });

  test('user override rules take precedence over default overrides', () => {
    const mute = override('mute-bob', [{ kind: 'event_match', key: 'sender', pattern: BOB }], []);
    const rules = withUser({ rules: { override: [mute] } });
    const mention = message({ body: 'x', 'm.mentions': { user_ids: [ALICE] } });
    const r = evaluatePushRules(rules, mention, group)!;
    assert.equal(r.rule_id, 'mute-bob');
    assert.equal(r.notify, false);
    const fromCarol = message({ body: 'x', 'm.mentions': { user_ids: [ALICE] } }, '@carol:example.org');
    assert.equal(evaluatePushRules(rules, fromCarol, group)!.rule_id, '.m.rule.is_user_mention');
  });

  test('the master rule, once enabled, beats user overrides', () => {
    const always = override('always', [], ['notify']);
    const rules = withUser({
      rules: { override: [always] },
      defaultChanges: { override: { '.m.rule.master': { enabled: true } } },
    });
    const r = evaluatePushRules(rules, message({ body: 'x' }), group)!;
    assert.equal(r.rule_id, '.m.rule.master');
    assert.equal(r.notify, false);
    const masterOff = withUser({ rules: { override: [always] } });
    assert.equal(decidedBy(masterOff, message({ body: 'x' }), group), 'always');
  });

  test('kinds are checked in order: content, room, sender, then underride', () => {
    const rule = (rule_id: string, extra: Partial<PushRule> = {}): PushRule => ({
      rule_id,
      default: false,
      enabled: true,
      actions: ['notify', { set_tweak: 'sound', value: rule_id }],
      ...extra,
    });
    const room = f.roomId;
    const all = withUser({
      rules: {
        content: [rule('cake', { pattern: 'cake' })],
        room: [rule(room)],
        sender: [rule(BOB)],
      },
    });
    const e = (body: string, sender = BOB) => message({ body }, sender);
    assert.equal(evaluatePushRules(all, e('cake time'), group)!.rule_id, 'cake');
    assert.equal(evaluatePushRules(all, e('cake time'), group)!.sound, 'cake');
    assert.equal(evaluatePushRules(all, e('cakes'), group)!.rule_id, room);
    const noRoom = withUser({ rules: { sender: [rule(BOB)] } });
    assert.equal(evaluatePushRules(noRoom, e('hi'), group)!.rule_id, BOB);
    assert.equal(decidedBy(noRoom, e('hi', '@carol:example.org'), group), '.m.rule.message');
    // Room and sender rules compare ids exactly, not as globs or case-insensitively.
    const globby = withUser({ rules: { sender: [rule('@BOB:example.org')], room: [rule('!*')] } });
    assert.equal(evaluatePushRules(globby, e('hi'), group)!.rule_id, '.m.rule.message');
  });

  test('a user underride comes before default underrides', () => {
    const messages = { kind: 'event_match', key: 'type', pattern: 'm.room.message' };
    const quiet = override('quiet-messages', [messages], []);
    const rules = withUser({ rules: { underride: [quiet] } });
    assert.equal(evaluatePushRules(rules, message({ body: 'x' }), oneToOne)!.rule_id, 'quiet-messages');
  });

  test('a rule with an unknown condition never matches; evaluation goes on', () => {
    const highlight = ['notify', { set_tweak: 'highlight' }];
    const odd = override('odd', [{ kind: 'org.example.future' }], highlight);
    const rules = withUser({ rules: { override: [odd] } });
    assert.equal(evaluatePushRules(rules, message({ body: 'x' }), group)!.rule_id, '.m.rule.message');
  });

  test('all conditions must hold', () => {
    const both = override(
      'both',
      [
        { kind: 'event_match', key: 'content.body', pattern: 'deploy' },
        { kind: 'room_member_count', is: '<=10' },
      ],
      ['notify', { set_tweak: 'sound', value: 'beep' }],
    );
    const rules = withUser({ rules: { override: [both] } });
    const deploy = message({ body: 'deploy now' });
    assert.equal(decidedBy(rules, deploy, group), 'both');
    assert.equal(decidedBy(rules, deploy, { ...group, roomMemberCount: 11 }), '.m.rule.message');
    assert.equal(decidedBy(rules, message({ body: 'redeploy' }), group), '.m.rule.message');
  });
});

describe('actions', () => {
  const only = (actions: PushRule['actions']): PushRuleSet => ({
    override: [{ rule_id: 'r', default: false, enabled: true, conditions: [], actions }],
    content: [],
    room: [],
    sender: [],
    underride: [],
  });
  const run = (actions: PushRule['actions']) =>
    evaluatePushRules(only(actions), message({ body: 'x' }), group)!;

  test('dont_notify and coalesce are ignored', () => {
    assert.deepEqual(run(['dont_notify']).actions, []);
    assert.equal(run(['dont_notify']).notify, false);
    const r = run(['notify', 'coalesce']);
    assert.deepEqual(r.actions, ['notify']);
    assert.equal(r.notify, true);
  });

  test('highlight: no value means true, false means false, absent means false', () => {
    assert.equal(run(['notify', { set_tweak: 'highlight' }]).highlight, true);
    assert.equal(run(['notify', { set_tweak: 'highlight', value: true }]).highlight, true);
    assert.equal(run(['notify', { set_tweak: 'highlight', value: false }]).highlight, false);
    assert.equal(run(['notify']).highlight, false);
  });

  test('tweaks pass through; the last of a name wins; sound only when a string', () => {
    const r = run([
      'notify',
      { set_tweak: 'sound', value: 'a' },
      { set_tweak: 'sound', value: 'b' },
      { set_tweak: 'org.example.led', value: { colour: 'red' } },
      { set_tweak: '__proto__', value: 1 },
      'org.example.unknown_action',
    ]);
    assert.equal(r.sound, 'b');
    assert.deepEqual(Object.keys(r.tweaks), ['sound', 'org.example.led', '__proto__']);
    assert.deepEqual(r.tweaks['org.example.led'], { colour: 'red' });
    assert.equal(Object.getPrototypeOf(r.tweaks), Object.prototype);
    assert.equal(run(['notify', { set_tweak: 'sound', value: 5 }]).sound, undefined);
  });
});
