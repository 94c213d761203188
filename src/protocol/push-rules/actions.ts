// What a rule's actions mean: notify or not, and the tweaks passed to the push gateway.

import type { JsonValue } from '../json.js';
import type { PushAction } from './types.js';

/** Actions older specifications defined; they MUST be ignored, so `["dont_notify"]` equals `[]`. */
const LEGACY_ACTIONS = new Set(['dont_notify', 'coalesce']);

export function stripLegacyActions(actions: readonly PushAction[]): PushAction[] {
  return actions.filter((a) => typeof a !== 'string' || !LEGACY_ACTIONS.has(a));
}

export interface ActionSummary {
  readonly notify: boolean;
  readonly highlight: boolean;
  readonly sound?: string;
  readonly tweaks: Record<string, JsonValue>;
}

/**
 * Reads `notify` and every `set_tweak`. A highlight tweak without a value means true; without any
 * highlight tweak, highlight is false. Other tweaks without a value, and unknown actions, are
 * ignored.
 */
export function summarizeActions(actions: readonly PushAction[]): ActionSummary {
  let notify = false;
  const tweaks: Record<string, JsonValue> = {};
  for (const action of actions) {
    if (action === 'notify') {
      notify = true;
    } else if (typeof action === 'object' && action !== null && !Array.isArray(action)) {
      const name = action.set_tweak;
      if (typeof name !== 'string') continue;
      const value = action.value !== undefined ? action.value : name === 'highlight' ? true : undefined;
      if (value === undefined) continue;
      // defineProperty, so that a tweak named "__proto__" stays an ordinary key.
      Object.defineProperty(tweaks, name, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  const highlight = tweaks.highlight === true;
  const sound = typeof tweaks.sound === 'string' ? tweaks.sound : undefined;
  return sound === undefined ? { notify, highlight, tweaks } : { notify, highlight, sound, tweaks };
}
