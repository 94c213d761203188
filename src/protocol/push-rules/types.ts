// Push rules as clients see them (GET /pushrules/, the m.push_rules account data) and the inputs
// of evaluation. Stored rules come from JSON a client sent, so the evaluator re-checks every
// field's type at run time rather than trusting these declarations.

import type { JsonObject, JsonValue } from '../json.js';

/** The kinds, in the order they are checked. */
export const PUSH_RULE_KINDS = ['override', 'content', 'room', 'sender', 'underride'] as const;
export type PushRuleKind = (typeof PUSH_RULE_KINDS)[number];

/** The values `event_property_is` / `event_property_contains` compare: non-compound canonical JSON. */
export type PushScalar = string | number | boolean | null;

/**
 * One condition of an override or underride rule. Which fields apply depends on `kind`; an
 * unrecognised kind, or a known kind whose fields are missing or mistyped, never matches.
 */
export interface PushCondition {
  readonly kind: string;
  /** event_match, event_property_is, event_property_contains: dot-separated event path;
   *  sender_notification_permission: the key under the power levels' `notifications`. */
  readonly key?: string;
  /** event_match: glob pattern. */
  readonly pattern?: string;
  /** room_member_count: `2`, `==2`, `<10`, `>=3`, ... */
  readonly is?: string;
  /** event_property_is, event_property_contains. */
  readonly value?: PushScalar;
  readonly [extra: string]: JsonValue | undefined;
}

/** `{set_tweak: name, value?}`; a highlight tweak without value means true. */
export interface SetTweakAction {
  readonly set_tweak: string;
  readonly value?: JsonValue;
  readonly [extra: string]: JsonValue | undefined;
}

/** `"notify"`, the legacy `"dont_notify"` / `"coalesce"` (ignored), or an action with parameters. */
export type PushAction = string | SetTweakAction | { readonly [key: string]: JsonValue };

export interface PushRule {
  readonly rule_id: string;
  /** True for server-default rules (their ids start with "."). */
  readonly default: boolean;
  readonly enabled: boolean;
  readonly actions: readonly PushAction[];
  /** override and underride rules only; absent or empty matches every event. */
  readonly conditions?: readonly PushCondition[];
  /** content rules only: glob matched against words of content.body. */
  readonly pattern?: string;
}

/** The rules of every kind, each list highest priority first. */
export interface PushRuleSet {
  readonly override: readonly PushRule[];
  readonly content: readonly PushRule[];
  readonly room: readonly PushRule[];
  readonly sender: readonly PushRule[];
  readonly underride: readonly PushRule[];
}

/** The body of GET /pushrules/ and of the m.push_rules account-data event. */
export interface PushRulesContent {
  readonly global: PushRuleSet;
}

/**
 * What evaluation reads of an event. RoomEvent and Pdu both fit; event_match and the
 * event_property conditions may reach any other field the object carries.
 */
export interface PushEvent {
  readonly type: string;
  readonly sender: string;
  readonly room_id: string;
  readonly state_key?: string;
  readonly content: JsonObject;
}

/** Room facts evaluation needs, resolved by the caller beforehand. */
export interface PushContext {
  /** The user whose rules are evaluated; their own events never notify them. */
  readonly userId: string;
  /** Their display name in this room, if any (contains_display_name). */
  readonly displayName?: string | null;
  /** Joined members of the room (room_member_count). */
  readonly roomMemberCount: number;
  /** The event sender's power level in the room (sender_notification_permission). */
  readonly senderPowerLevel: number;
  /** `content.notifications` of the room's m.room.power_levels; a missing key requires 50. */
  readonly notificationPowerLevels?: Readonly<Record<string, unknown>>;
}

/** The first enabled rule that matched, and what its actions mean. */
export interface PushEvaluation {
  readonly kind: PushRuleKind;
  readonly rule_id: string;
  /** The rule's actions without the legacy `dont_notify` / `coalesce`. */
  readonly actions: readonly PushAction[];
  readonly notify: boolean;
  readonly highlight: boolean;
  /** The `sound` tweak, when the rule sets one to a string. */
  readonly sound?: string;
  /** Every tweak the actions set (a later one of a name wins), for the push gateway. */
  readonly tweaks: Readonly<Record<string, JsonValue>>;
}
