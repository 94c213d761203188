// Push-rule evaluation: the first enabled rule that matches an event decides its actions.
// Pure: the caller resolves the room facts (member count, power levels, display name) first.

import { stripLegacyActions, summarizeActions } from './actions.js';
import { conditionMatches, eventMatch } from './conditions.js';
import { LEGACY_MENTION_RULES } from './default-rules.js';
import { PUSH_RULE_KINDS } from './types.js';
import type {
  PushContext,
  PushEvaluation,
  PushEvent,
  PushRule,
  PushRuleKind,
  PushRuleSet,
} from './types.js';

/**
 * Checks the kinds in order (override, content, room, sender, underride) and each kind's rules in
 * order; returns the first enabled match, or null when none matches. A match whose actions do not
 * notify is still returned (it suppressed the event). Events the user sent themselves return null:
 * homeservers must not notify a user of their own events.
 */
export function evaluatePushRules(
  ruleset: PushRuleSet,
  event: PushEvent,
  context: PushContext,
): PushEvaluation | null {
  if (event.sender === context.userId) return null;
  // Pre-1.17 body-mention rules apply only to events without intentional mentions.
  const content: unknown = event.content;
  const hasMentions =
    typeof content === 'object' && content !== null && Object.hasOwn(content, 'm.mentions');
  for (const kind of PUSH_RULE_KINDS) {
    for (const rule of ruleset[kind] ?? []) {
      if (rule.enabled !== true) continue;
      if (hasMentions && isLegacyMentionRule(kind, rule)) continue;
      if (!ruleMatches(kind, rule, event, context)) continue;
      const actions = Array.isArray(rule.actions) ? stripLegacyActions(rule.actions) : [];
      return { kind, rule_id: rule.rule_id, actions, ...summarizeActions(actions) };
    }
  }
  return null;
}

/** Whether one rule of the given kind matches, ignoring whether it is enabled. */
export function ruleMatches(
  kind: PushRuleKind,
  rule: PushRule,
  event: PushEvent,
  context: PushContext,
): boolean {
  switch (kind) {
    case 'override':
    case 'underride': {
      const conditions = rule.conditions ?? [];
      if (!Array.isArray(conditions)) return false;
      return conditions.every(
        (c) => typeof c === 'object' && c !== null && conditionMatches(c, event, context),
      );
    }
    case 'content':
      return eventMatch(event, 'content.body', rule.pattern);
    case 'room':
      return event.room_id === rule.rule_id;
    case 'sender':
      return event.sender === rule.rule_id;
  }
}

function isLegacyMentionRule(kind: PushRuleKind, rule: PushRule): boolean {
  return LEGACY_MENTION_RULES.some((l) => l.kind === kind && l.rule_id === rule.rule_id);
}
