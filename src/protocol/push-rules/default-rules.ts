// The server-default push rules (client-server API, "Predefined Rules"), in the spec's order.
//
// Matrix 1.17 removed the legacy rules that looked for mentions in the plain-text body
// (.m.rule.contains_display_name, .m.rule.roomnotif, .m.rule.contains_user_name). They are built
// only on request, for deployments whose clients do not send `m.mentions` yet; as 1.7–1.16
// required, evaluation skips them for events that carry `m.mentions`.

import type { PushAction, PushCondition, PushRule, PushRuleKind, PushRuleSet } from './types.js';

export interface DefaultPushRuleOptions {
  /** Also build the pre-1.17 body-mention rules. Default false. */
  readonly legacyMentions?: boolean;
}

/** Legacy rules by kind and id; evaluation skips them when an event has `m.mentions`. */
export const LEGACY_MENTION_RULES: ReadonlyArray<{ kind: PushRuleKind; rule_id: string }> = [
  { kind: 'override', rule_id: '.m.rule.contains_display_name' },
  { kind: 'override', rule_id: '.m.rule.roomnotif' },
  { kind: 'content', rule_id: '.m.rule.contains_user_name' },
];

/** The rule that always comes first, before even user-defined override rules. */
export const MASTER_RULE_ID = '.m.rule.master';

/** The defaults for one user: some rules name the user's id or its localpart. */
export function defaultPushRules(userId: string, options: DefaultPushRuleOptions = {}): PushRuleSet {
  const legacy = options.legacyMentions === true;
  const override: PushRule[] = [
    rule(MASTER_RULE_ID, [], [], false),
    rule('.m.rule.suppress_notices', [match('content.msgtype', 'm.notice')], []),
    rule(
      '.m.rule.invite_for_me',
      [
        match('type', 'm.room.member'),
        match('content.membership', 'invite'),
        match('state_key', userId),
      ],
      ['notify', sound('default')],
    ),
    rule('.m.rule.member_event', [match('type', 'm.room.member')], []),
    rule(
      '.m.rule.is_user_mention',
      [{ kind: 'event_property_contains', key: 'content.m\\.mentions.user_ids', value: userId }],
      ['notify', sound('default'), highlight()],
    ),
    ...(legacy
      ? [
          rule(
            '.m.rule.contains_display_name',
            [{ kind: 'contains_display_name' }],
            ['notify', sound('default'), highlight()],
          ),
        ]
      : []),
    rule(
      '.m.rule.is_room_mention',
      [
        { kind: 'event_property_is', key: 'content.m\\.mentions.room', value: true },
        { kind: 'sender_notification_permission', key: 'room' },
      ],
      ['notify', highlight()],
    ),
    ...(legacy
      ? [
          rule(
            '.m.rule.roomnotif',
            [match('content.body', '@room'), { kind: 'sender_notification_permission', key: 'room' }],
            ['notify', highlight()],
          ),
        ]
      : []),
    rule(
      '.m.rule.tombstone',
      [match('type', 'm.room.tombstone'), match('state_key', '')],
      ['notify', highlight()],
    ),
    rule('.m.rule.reaction', [match('type', 'm.reaction')], []),
    rule('.m.rule.room.server_acl', [match('type', 'm.room.server_acl'), match('state_key', '')], []),
    rule(
      '.m.rule.suppress_edits',
      [{ kind: 'event_property_is', key: 'content.m\\.relates_to.rel_type', value: 'm.replace' }],
      [],
    ),
  ];

  const content: PushRule[] = legacy
    ? [
        {
          rule_id: '.m.rule.contains_user_name',
          default: true,
          enabled: true,
          pattern: localpartOf(userId),
          actions: ['notify', sound('default'), highlight()],
        },
      ]
    : [];

  const underride: PushRule[] = [
    rule('.m.rule.call', [match('type', 'm.call.invite')], ['notify', sound('ring')]),
    rule(
      '.m.rule.encrypted_room_one_to_one',
      [{ kind: 'room_member_count', is: '2' }, match('type', 'm.room.encrypted')],
      ['notify', sound('default')],
    ),
    rule(
      '.m.rule.room_one_to_one',
      [{ kind: 'room_member_count', is: '2' }, match('type', 'm.room.message')],
      ['notify', sound('default')],
    ),
    rule('.m.rule.message', [match('type', 'm.room.message')], ['notify']),
    rule('.m.rule.encrypted', [match('type', 'm.room.encrypted')], ['notify']),
  ];

  return { override, content, room: [], sender: [], underride };
}

function rule(
  rule_id: string,
  conditions: readonly PushCondition[],
  actions: readonly PushAction[],
  enabled = true,
): PushRule {
  return { rule_id, default: true, enabled, conditions, actions };
}

function match(key: string, pattern: string): PushCondition {
  return { kind: 'event_match', key, pattern };
}

// Fresh objects per rule set, so that no two rule sets share a mutable action.
function sound(value: string): PushAction {
  return { set_tweak: 'sound', value };
}

function highlight(): PushAction {
  return { set_tweak: 'highlight' };
}

/** `@alice:example.org` → `alice`. */
function localpartOf(userId: string): string {
  const colon = userId.indexOf(':');
  const end = colon === -1 ? userId.length : colon;
  return userId.startsWith('@') ? userId.slice(1, end) : userId.slice(0, end);
}
