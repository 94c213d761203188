// A user's effective rule set: their own rules plus the server-default rules, with the changes
// they made to the defaults (enabled, actions) applied.
//
// Spec ("Predefined Rules"): server-default rules operate at a lower priority than user-defined
// rules of the same kind, except .m.rule.master, which comes before every other rule.

import { MASTER_RULE_ID } from './default-rules.js';
import { PUSH_RULE_KINDS } from './types.js';
import type { PushAction, PushRule, PushRuleKind, PushRuleSet } from './types.js';

/** A user's change to one server-default rule. */
export interface DefaultRuleChange {
  readonly enabled?: boolean;
  readonly actions?: readonly PushAction[];
}

/** Changes to the default rules of one kind, by rule_id. */
export type DefaultRuleChanges = Readonly<Record<string, DefaultRuleChange>>;

/** What a user stored: rules of their own, and changes to default rules. */
export interface UserPushRules {
  /** Per kind, highest priority first. */
  readonly rules?: Partial<Record<PushRuleKind, readonly PushRule[]>>;
  readonly defaultChanges?: Partial<Record<PushRuleKind, DefaultRuleChanges>>;
}

/**
 * The rule set clients see and evaluation runs. User rules come out with `default: false`; a user
 * rule whose id starts with "." is dropped, as those ids belong to server-default rules. Actions
 * are served as the user gave them, legacy `dont_notify` / `coalesce` included (as Synapse serves
 * them); evaluation ignores those. Returns fresh rule objects.
 */
export function mergePushRules(defaults: PushRuleSet, user: UserPushRules): PushRuleSet {
  const merged = {} as Record<PushRuleKind, PushRule[]>;
  for (const kind of PUSH_RULE_KINDS) {
    const changes = user.defaultChanges?.[kind];
    const serverRules = defaults[kind].map((r) => applyChange(r, changeFor(changes, r.rule_id)));
    const userRules = (user.rules?.[kind] ?? [])
      .filter((r) => !r.rule_id.startsWith('.'))
      .map((r) => copyRule(r, { default: false }));
    const first = serverRules.filter((r) => kind === 'override' && r.rule_id === MASTER_RULE_ID);
    const rest = serverRules.filter((r) => !(kind === 'override' && r.rule_id === MASTER_RULE_ID));
    merged[kind] = [...first, ...userRules, ...rest];
  }
  return merged;
}

function changeFor(
  changes: DefaultRuleChanges | undefined,
  ruleId: string,
): DefaultRuleChange | undefined {
  return changes !== undefined && Object.hasOwn(changes, ruleId) ? changes[ruleId] : undefined;
}

function applyChange(rule: PushRule, change: DefaultRuleChange | undefined): PushRule {
  const overrides: { enabled?: boolean; actions?: readonly PushAction[] } = {};
  if (typeof change?.enabled === 'boolean') overrides.enabled = change.enabled;
  if (Array.isArray(change?.actions)) overrides.actions = change.actions;
  return copyRule(rule, overrides);
}

function copyRule(
  rule: PushRule,
  overrides: { default?: boolean; enabled?: boolean; actions?: readonly PushAction[] },
): PushRule {
  const copy: {
    -readonly [K in keyof PushRule]: PushRule[K];
  } = {
    rule_id: rule.rule_id,
    default: overrides.default ?? rule.default,
    enabled: overrides.enabled ?? rule.enabled,
    actions: [...(overrides.actions ?? rule.actions)],
  };
  if (rule.conditions !== undefined) copy.conditions = [...rule.conditions];
  if (rule.pattern !== undefined) copy.pattern = rule.pattern;
  return copy;
}
