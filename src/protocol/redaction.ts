// The redaction algorithm (room versions' "Redactions" sections): an event is stripped to the
// top-level keys and content keys that event authorization and hashing depend on. It is what
// event signatures and reference hashes cover, and what remains of a redacted event.
//
// v1–v5: the base rules, plus `aliases` in m.room.aliases.
// v6–v7: m.room.aliases loses its protection.
// v8:    m.room.join_rules keeps `allow`.
// v9–v10: m.room.member keeps `join_authorised_via_users_server`.
// v11:   top-level `origin`, `membership`, `prev_state` are no longer kept; m.room.create keeps all
//        content; m.room.redaction keeps `redacts`; m.room.power_levels keeps `invite`;
//        m.room.member keeps `third_party_invite.signed`.

import type { Pdu } from './events.js';
import { isJsonObject, type JsonObject } from './json.js';
import type { RoomVersion } from './room-versions.js';

const TOP_LEVEL_KEYS = [
  'event_id',
  'type',
  'room_id',
  'sender',
  'state_key',
  'content',
  'hashes',
  'signatures',
  'depth',
  'prev_events',
  'auth_events',
  'origin_server_ts',
] as const;
/** Kept before v11 in addition to TOP_LEVEL_KEYS. */
const LEGACY_TOP_LEVEL_KEYS = ['prev_state', 'origin', 'membership'] as const;

const POWER_LEVEL_KEYS = [
  'ban',
  'events',
  'events_default',
  'kick',
  'redact',
  'state_default',
  'users',
  'users_default',
];

/** How one event type's content survives: the listed keys, or all of it. */
type ContentRule = readonly string[] | 'all';

interface RedactionRules {
  topLevel: readonly string[];
  content: ReadonlyMap<string, ContentRule>;
  /** v11: m.room.member keeps `third_party_invite`, reduced to its `signed` key. */
  keepThirdPartyInviteSigned: boolean;
}

function buildRules(version: RoomVersion): RedactionRules {
  const v11 = version.updatedRedactionRules;
  const content = new Map<string, ContentRule>();
  content.set(
    'm.room.member',
    version.restrictedJoinRuleFix ? ['membership', 'join_authorised_via_users_server'] : ['membership'],
  );
  content.set('m.room.create', v11 ? 'all' : ['creator']);
  content.set('m.room.join_rules', version.restrictedJoinRule ? ['join_rule', 'allow'] : ['join_rule']);
  content.set('m.room.power_levels', v11 ? [...POWER_LEVEL_KEYS, 'invite'] : POWER_LEVEL_KEYS);
  content.set('m.room.history_visibility', ['history_visibility']);
  if (version.specialCaseAliases) content.set('m.room.aliases', ['aliases']);
  if (v11) content.set('m.room.redaction', ['redacts']);
  return {
    topLevel: v11 ? TOP_LEVEL_KEYS : [...TOP_LEVEL_KEYS, ...LEGACY_TOP_LEVEL_KEYS],
    content,
    keepThirdPartyInviteSigned: v11,
  };
}

// Room-version records are frozen singletons, so the rules are worked out once per version.
const rulesCache = new WeakMap<RoomVersion, RedactionRules>();

function rulesFor(version: RoomVersion): RedactionRules {
  let rules = rulesCache.get(version);
  if (rules === undefined) {
    rules = buildRules(version);
    rulesCache.set(version, rules);
  }
  return rules;
}

function redactContent(type: unknown, content: unknown, rules: RedactionRules): JsonObject {
  const out: JsonObject = {};
  if (!isJsonObject(content) || typeof type !== 'string') return out;
  const rule = rules.content.get(type);
  if (rule === undefined) return out;
  if (rule === 'all') return { ...content };
  for (const key of rule) {
    if (Object.hasOwn(content, key)) out[key] = content[key]!;
  }
  if (rules.keepThirdPartyInviteSigned && type === 'm.room.member') {
    const invite = content.third_party_invite;
    if (isJsonObject(invite) && Object.hasOwn(invite, 'signed')) {
      out.third_party_invite = { signed: invite.signed! };
    }
  }
  return out;
}

/**
 * The redacted form of `pdu` under `version`'s rules: only the protected top-level keys, and
 * `content` reduced to the protected keys of its type (always present, `{}` when nothing is kept).
 * `unsigned` is dropped; callers add back what they need. The input is not changed; nested values
 * that survive are shared with it, not copied.
 */
export function redactEvent(pdu: object, version: RoomVersion): Pdu {
  const event = pdu as { readonly [key: string]: unknown };
  const rules = rulesFor(version);
  const out: { [key: string]: unknown } = {};
  for (const key of rules.topLevel) {
    if (key === 'content') out.content = redactContent(event.type, event.content, rules);
    else if (Object.hasOwn(event, key)) out[key] = event[key];
  }
  return out as unknown as Pdu;
}

/**
 * The protected content keys of `type` under `version` ('all' for the whole content). From v11,
 * m.room.member also keeps `third_party_invite`, reduced to its `signed` key.
 */
export function protectedContentKeys(type: string, version: RoomVersion): readonly string[] | 'all' {
  return rulesFor(version).content.get(type) ?? [];
}
