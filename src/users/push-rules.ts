// A user's push rules (client-server API, "Push Rules: API"): their own rules and their changes to
// the server-default rules (enabled, actions), kept as the server-managed m.push_rules account data
// in a compact form and always served merged with the defaults. Where the specification is silent
// this follows Synapse: a PUT without before/after makes the rule the most important of its kind,
// an update keeps the rule's enabled state, and default rules cannot be deleted (404).

import { HearthError } from '../protocol/errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../protocol/json.js';
import {
  conditionProblem,
  defaultPushRules,
  mergePushRules,
  PUSH_RULE_KINDS,
  type DefaultRuleChange,
  type PushAction,
  type PushCondition,
  type PushRule,
  type PushRuleKind,
  type PushRuleSet,
  type PushRulesContent,
  type UserPushRules,
} from '../protocol/push-rules/index.js';
import { GLOBAL_ROOM } from '../storage/user-data/account-data.js';
import type { AccountDataService } from './account-data.js';

export const PUSH_RULES_TYPE = 'm.push_rules';
/** The only ruleset the specification defines. */
export const PUSH_RULE_SCOPE = 'global';
/** Rules a user may define, over all kinds. */
export const MAX_USER_RULES = 2000;
/** Largest stored m.push_rules content, in bytes of JSON. */
export const MAX_STORED_BYTES = 1024 * 1024;
const CACHE_ENTRIES = 20_000;
const KNOWN_ACTIONS = new Set(['notify', 'dont_notify', 'coalesce']);

// ---- the stored form ---------------------------------------------------------------------------
//
// {"rules": {kind: [{rule_id, enabled, actions, conditions? | pattern?}, ...]},
//  "default_changes": {kind: {rule_id: {enabled?, actions?}}}}
// Each list is highest priority first. Read defensively: anything malformed is skipped.

/** Reads the stored content; undefined (never written) means no rules and no changes. */
export function parseStoredPushRules(stored: JsonObject | undefined): UserPushRules {
  const rules: Partial<Record<PushRuleKind, PushRule[]>> = {};
  const defaultChanges: Partial<Record<PushRuleKind, Record<string, DefaultRuleChange>>> = {};
  const storedRules = isJsonObject(stored?.['rules']) ? stored['rules'] : {};
  const storedChanges = isJsonObject(stored?.['default_changes']) ? stored['default_changes'] : {};
  for (const kind of PUSH_RULE_KINDS) {
    const list = storedRules[kind];
    if (Array.isArray(list)) {
      rules[kind] = list.flatMap((r) => {
        const rule = isJsonObject(r) ? storedRule(kind, r) : undefined;
        return rule === undefined ? [] : [rule];
      });
    }
    const changes = storedChanges[kind];
    if (isJsonObject(changes)) {
      const kept: Record<string, DefaultRuleChange> = {};
      for (const [ruleId, c] of Object.entries(changes)) {
        if (!isJsonObject(c)) continue;
        define(kept, ruleId, {
          ...(typeof c['enabled'] === 'boolean' ? { enabled: c['enabled'] } : {}),
          ...(Array.isArray(c['actions']) ? { actions: c['actions'] as PushAction[] } : {}),
        });
      }
      defaultChanges[kind] = kept;
    }
  }
  return { rules, defaultChanges };
}

function storedRule(kind: PushRuleKind, r: JsonObject): PushRule | undefined {
  const ruleId = r['rule_id'];
  const actions = r['actions'];
  if (typeof ruleId !== 'string' || !Array.isArray(actions)) return undefined;
  const rule: { -readonly [K in keyof PushRule]: PushRule[K] } = {
    rule_id: ruleId,
    default: false,
    enabled: r['enabled'] !== false,
    actions: actions as PushAction[],
  };
  if (hasConditions(kind)) {
    const conditions = r['conditions'] ?? [];
    // A rule whose conditions cannot be read must not turn into one that matches everything.
    if (!Array.isArray(conditions)) return undefined;
    rule.conditions = conditions as unknown as PushCondition[];
  }
  if (kind === 'content' && typeof r['pattern'] === 'string') rule.pattern = r['pattern'];
  return rule;
}

function toStored(user: UserPushRules): JsonObject {
  const rules: JsonObject = {};
  const changes: JsonObject = {};
  for (const kind of PUSH_RULE_KINDS) {
    const list = user.rules?.[kind] ?? [];
    if (list.length > 0) {
      rules[kind] = list.map((r) => {
        const out: JsonObject = { rule_id: r.rule_id, enabled: r.enabled, actions: r.actions as JsonValue[] };
        if (r.conditions !== undefined) out['conditions'] = r.conditions as unknown as JsonValue[];
        if (r.pattern !== undefined) out['pattern'] = r.pattern;
        return out;
      });
    }
    const kindChanges: JsonObject = {};
    for (const [ruleId, c] of Object.entries(user.defaultChanges?.[kind] ?? {})) {
      const change: JsonObject = {};
      if (c.enabled !== undefined) change['enabled'] = c.enabled;
      if (c.actions !== undefined) change['actions'] = c.actions as JsonValue[];
      if (Object.keys(change).length > 0) define(kindChanges, ruleId, change);
    }
    if (Object.keys(kindChanges).length > 0) changes[kind] = kindChanges;
  }
  return { rules, default_changes: changes };
}

/** The user's effective rules from what is stored: the body of GET /pushrules/ and of m.push_rules. */
export function pushRulesContent(userId: string, stored: JsonObject | undefined): PushRulesContent & JsonObject {
  return { global: mergePushRules(defaultPushRules(userId), parseStoredPushRules(stored)) } as PushRulesContent & JsonObject;
}

// ---- request checks ----------------------------------------------------------------------------

function hasConditions(kind: PushRuleKind): boolean {
  return kind === 'override' || kind === 'underride';
}

/** 400 M_UNRECOGNIZED for a scope other than `global` (as Synapse answers). */
export function checkScope(scope: string): void {
  if (scope !== PUSH_RULE_SCOPE) throw new HearthError(400, 'M_UNRECOGNIZED', `Unknown push rule scope: ${clip(scope)}; only 'global' exists`);
}

/** 400 M_INVALID_PARAM for a kind the specification does not define; an empty one is no kind. */
export function parseKind(kind: string): PushRuleKind {
  if (kind === '') throw unrecognizedPath('The push rule path has an empty kind');
  if (!(PUSH_RULE_KINDS as readonly string[]).includes(kind)) {
    throw HearthError.invalidParam(`Unknown push rule kind: ${clip(kind)}; one of ${PUSH_RULE_KINDS.join(', ')}`);
  }
  return kind as PushRuleKind;
}

/** `notify`, the legacy `dont_notify` / `coalesce`, or `{set_tweak: string, value?}`. */
export function checkActions(actions: unknown): PushAction[] {
  if (actions === undefined) throw new HearthError(400, 'M_MISSING_PARAM', "Missing parameter: 'actions'");
  if (!Array.isArray(actions)) throw HearthError.badJson("'actions' must be an array");
  for (const a of actions) {
    if (typeof a === 'string' ? KNOWN_ACTIONS.has(a) : isJsonObject(a) && typeof a['set_tweak'] === 'string') continue;
    throw HearthError.badJson(`Unrecognised push rule action: ${clip(JSON.stringify(a) ?? String(a))}`);
  }
  return actions as PushAction[];
}

/**
 * An array of objects each with a string `kind` (else 400 M_BAD_JSON); the fields of the kinds
 * the spec defines must have its types (else 400 M_INVALID_PARAM, where Synapse would store a rule
 * that can never match). Unknown kinds are kept: they never match.
 */
function checkConditions(conditions: unknown): PushCondition[] {
  // "A rule with no conditions always matches."
  if (conditions === undefined) return [];
  if (!Array.isArray(conditions)) throw HearthError.badJson("'conditions' must be an array");
  conditions.forEach((c, i) => {
    if (!isJsonObject(c) || typeof c['kind'] !== 'string') throw HearthError.badJson("Each condition must be an object with a string 'kind'");
    const problem = conditionProblem(c);
    if (problem !== undefined) throw HearthError.invalidParam(`conditions[${i}]: ${problem}`);
  });
  return conditions as PushCondition[];
}

function checkNewRuleId(ruleId: string): void {
  if (ruleId.startsWith('.')) throw HearthError.invalidParam("Rule ids starting with '.' are reserved for server-default rules");
  if (ruleId.includes('/') || ruleId.includes('\\')) throw HearthError.invalidParam('Rule ids may not contain slashes or backslashes');
}

/** 400 M_UNRECOGNIZED: a push-rule path of no shape the API has (Synapse's answer for these). */
export function unrecognizedPath(message = 'Unrecognized push rule path'): HearthError {
  return new HearthError(400, 'M_UNRECOGNIZED', message);
}

/** The rule id of a path; an empty one (`/pushrules/global/override/`) names no rule. */
export function checkRuleIdGiven(ruleId: string): void {
  if (ruleId === '') throw unrecognizedPath('The push rule path has an empty rule id');
}

function notFound(): HearthError {
  return HearthError.notFound('The push rule was not found.');
}

function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

function define<T>(target: Record<string, T>, key: string, value: T): void {
  // defineProperty, so that a rule id like "__proto__" stays an ordinary key.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

// ---- the service -------------------------------------------------------------------------------

/** Where a new or updated rule goes: before or after another user rule of its kind. */
export interface RulePlacement {
  readonly before?: string;
  readonly after?: string;
}

export interface PushRuleServiceDeps {
  readonly accountData: Pick<AccountDataService, 'get' | 'update'>;
}

type MutableUserRules = {
  rules: Record<PushRuleKind, PushRule[]>;
  defaultChanges: Record<PushRuleKind, Record<string, DefaultRuleChange>>;
};

export class PushRuleService {
  private readonly cache = new Map<string, PushRuleSet>();
  /** Counts writes, so that a read that raced a write does not cache what it read. */
  private writes = 0;

  constructor(private readonly deps: PushRuleServiceDeps) {}

  /** The user's effective rules, for evaluation (unread counts, pushes). Shared: do not modify. */
  async rulesOf(userId: string): Promise<PushRuleSet> {
    const cached = this.cache.get(userId);
    if (cached !== undefined) return cached;
    const writes = this.writes;
    const rules = pushRulesContent(userId, await this.deps.accountData.get(userId, GLOBAL_ROOM, PUSH_RULES_TYPE)).global;
    if (writes === this.writes) {
      if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(userId, rules);
    }
    return rules;
  }

  /** GET /pushrules/ */
  async all(userId: string): Promise<PushRulesContent> {
    return { global: await this.rulesOf(userId) };
  }

  /** GET /pushrules/{scope}/ */
  async ruleset(userId: string, scope: string): Promise<PushRuleSet> {
    checkScope(scope);
    return this.rulesOf(userId);
  }

  /** GET /pushrules/{scope}/{kind}/: the rules of one kind, as Synapse serves them. */
  async kindRules(userId: string, scope: string, kind: string): Promise<readonly PushRule[]> {
    checkScope(scope);
    const k = parseKind(kind);
    return (await this.rulesOf(userId))[k];
  }

  /** GET /pushrules/{scope}/{kind}/{ruleId} */
  async rule(userId: string, scope: string, kind: string, ruleId: string): Promise<PushRule> {
    checkScope(scope);
    const k = parseKind(kind);
    checkRuleIdGiven(ruleId);
    const rule = (await this.rulesOf(userId))[k].find((r) => r.rule_id === ruleId);
    if (rule === undefined) throw notFound();
    return rule;
  }

  /**
   * GET /pushrules/{scope}/{kind}/{ruleId}/{attribute}: any field the rule has (`enabled` and
   * `actions` are the spec's; Synapse serves the others too); 400 M_UNRECOGNIZED for another name.
   */
  async ruleAttribute(userId: string, scope: string, kind: string, ruleId: string, attribute: string): Promise<JsonObject> {
    const rule = await this.rule(userId, scope, kind, ruleId);
    const value = Object.hasOwn(rule, attribute) ? (rule as unknown as JsonObject)[attribute] : undefined;
    if (value === undefined) throw unrecognizedPath(`Push rules have no attribute ${clip(attribute)}`);
    const out: JsonObject = {};
    define(out, attribute, value);
    return out;
  }

  /**
   * PUT /pushrules/{scope}/{kind}/{ruleId}: adds a rule, or replaces one of the same id (which
   * keeps its enabled state). `before` wins when both placements are given.
   */
  async putRule(userId: string, scope: string, kind: string, ruleId: string, body: JsonObject, placement: RulePlacement = {}): Promise<void> {
    checkScope(scope);
    const k = parseKind(kind);
    checkRuleIdGiven(ruleId);
    checkNewRuleId(ruleId);
    const actions = checkActions(body['actions']);
    const rule: { -readonly [K in keyof PushRule]: PushRule[K] } = { rule_id: ruleId, default: false, enabled: true, actions };
    if (hasConditions(k)) rule.conditions = checkConditions(body['conditions']);
    if (k === 'content') {
      const pattern = body['pattern'];
      if (pattern === undefined) throw new HearthError(400, 'M_MISSING_PARAM', "Content rules need a 'pattern'");
      if (typeof pattern !== 'string') throw HearthError.badJson("'pattern' must be a string");
      rule.pattern = pattern;
    }
    const anchor = placement.before || placement.after || undefined;
    await this.edit(userId, (user) => {
      const list = user.rules[k];
      const existing = list.findIndex((r) => r.rule_id === ruleId);
      if (existing !== -1) {
        rule.enabled = list[existing]!.enabled;
        list.splice(existing, 1);
      } else if (PUSH_RULE_KINDS.reduce((n, kk) => n + user.rules[kk].length, 0) >= MAX_USER_RULES) {
        throw HearthError.invalidParam(`Too many push rules (at most ${MAX_USER_RULES})`);
      }
      if (anchor === undefined) {
        list.unshift(rule);
        return;
      }
      const at = list.findIndex((r) => r.rule_id === anchor);
      // 400 M_UNKNOWN, as in the specification's example (and Synapse); server-default rules are
      // not among the user's rules, so a rule cannot be placed relative to one.
      if (at === -1) throw new HearthError(400, 'M_UNKNOWN', `before/after rule not found: ${clip(anchor)}`);
      list.splice(placement.before ? at : at + 1, 0, rule);
    });
  }

  /** DELETE /pushrules/{scope}/{kind}/{ruleId}: user rules only; default rules are 404. */
  async deleteRule(userId: string, scope: string, kind: string, ruleId: string): Promise<void> {
    checkScope(scope);
    const k = parseKind(kind);
    checkRuleIdGiven(ruleId);
    await this.edit(userId, (user) => {
      const at = user.rules[k].findIndex((r) => r.rule_id === ruleId);
      if (at === -1) throw notFound();
      user.rules[k].splice(at, 1);
    });
  }

  /** GET .../enabled */
  async enabled(userId: string, scope: string, kind: string, ruleId: string): Promise<{ enabled: boolean }> {
    return { enabled: (await this.rule(userId, scope, kind, ruleId)).enabled };
  }

  /** PUT .../enabled with `{enabled: boolean}` (a bare boolean too, as some clients send). */
  async setEnabled(userId: string, scope: string, kind: string, ruleId: string, body: unknown): Promise<void> {
    checkScope(scope);
    const k = parseKind(kind);
    checkRuleIdGiven(ruleId);
    const value = isJsonObject(body) ? body['enabled'] : body;
    if (value === undefined) throw new HearthError(400, 'M_MISSING_PARAM', "Missing parameter: 'enabled'");
    if (typeof value !== 'boolean') throw HearthError.badJson("'enabled' must be a boolean");
    await this.editAttribute(userId, k, ruleId, { enabled: value });
  }

  /** GET .../actions */
  async actions(userId: string, scope: string, kind: string, ruleId: string): Promise<{ actions: readonly PushAction[] }> {
    return { actions: (await this.rule(userId, scope, kind, ruleId)).actions };
  }

  /** PUT .../actions with `{actions: [...]}`; default rules' actions can be changed too. */
  async setActions(userId: string, scope: string, kind: string, ruleId: string, body: JsonObject): Promise<void> {
    checkScope(scope);
    const k = parseKind(kind);
    checkRuleIdGiven(ruleId);
    const actions = checkActions(body['actions']);
    await this.editAttribute(userId, k, ruleId, { actions });
  }

  /**
   * Sets `enabled` or `actions` of a user rule, or records the change to a default rule (dropping
   * an `enabled` change that restores the default's own state). 404 when there is no such rule.
   */
  private async editAttribute(userId: string, kind: PushRuleKind, ruleId: string, change: DefaultRuleChange): Promise<void> {
    const defaultRule = ruleId.startsWith('.') ? defaultPushRules(userId)[kind].find((r) => r.rule_id === ruleId) : undefined;
    if (ruleId.startsWith('.') && defaultRule === undefined) throw notFound();
    await this.edit(userId, (user) => {
      if (defaultRule !== undefined) {
        const changes = user.defaultChanges[kind];
        const next: { enabled?: boolean; actions?: readonly PushAction[] } = { ...(Object.hasOwn(changes, ruleId) ? changes[ruleId] : {}), ...change };
        if (change.enabled !== undefined && change.enabled === defaultRule.enabled) delete next.enabled;
        define(changes, ruleId, next);
        return;
      }
      const at = user.rules[kind].findIndex((r) => r.rule_id === ruleId);
      if (at === -1) throw notFound();
      user.rules[kind][at] = { ...user.rules[kind][at]!, ...change };
    });
  }

  /** Read-modify-write of the stored rules; `change` edits them in place, or throws to refuse. */
  private async edit(userId: string, change: (user: MutableUserRules) => void): Promise<void> {
    this.writes++;
    try {
      await this.deps.accountData.update(userId, GLOBAL_ROOM, PUSH_RULES_TYPE, (stored) => {
        const parsed = parseStoredPushRules(stored);
        const user: MutableUserRules = { rules: {} as MutableUserRules['rules'], defaultChanges: {} as MutableUserRules['defaultChanges'] };
        for (const kind of PUSH_RULE_KINDS) {
          user.rules[kind] = [...(parsed.rules?.[kind] ?? [])];
          user.defaultChanges[kind] = { ...parsed.defaultChanges?.[kind] };
        }
        change(user);
        const next = toStored(user);
        if (Buffer.byteLength(JSON.stringify(next)) > MAX_STORED_BYTES) {
          throw HearthError.tooLarge(`Push rules would exceed ${MAX_STORED_BYTES} bytes`);
        }
        return next;
      });
    } finally {
      // Counted again once the write is visible: a read that started meanwhile is not cached.
      this.writes++;
      this.cache.delete(userId);
    }
  }
}
