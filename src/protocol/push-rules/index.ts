// Push rules: types, the server-default rules, merging a user's rules with them, and evaluation.

export type {
  PushAction,
  PushCondition,
  PushContext,
  PushEvaluation,
  PushEvent,
  PushRule,
  PushRuleKind,
  PushRuleSet,
  PushRulesContent,
  PushScalar,
  SetTweakAction,
} from './types.js';
export { PUSH_RULE_KINDS } from './types.js';
export type { DefaultPushRuleOptions } from './default-rules.js';
export { defaultPushRules, LEGACY_MENTION_RULES, MASTER_RULE_ID } from './default-rules.js';
export type { DefaultRuleChange, DefaultRuleChanges, UserPushRules } from './merge.js';
export { mergePushRules } from './merge.js';
export type { ActionSummary } from './actions.js';
export { stripLegacyActions, summarizeActions } from './actions.js';
export { conditionMatches, conditionProblem, DEFAULT_NOTIFICATION_POWER_LEVEL } from './conditions.js';
export { evaluatePushRules, ruleMatches } from './evaluate.js';
export { compileGlob, compileLiteral, Glob } from './glob.js';
export { parsePropertyPath, propertyAt } from './property-path.js';
export type { SenderPower } from './room-power.js';
export { senderPowerIn } from './room-power.js';
