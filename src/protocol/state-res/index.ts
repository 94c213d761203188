// State resolution: the room state that results from several states, per the room version's
// algorithm. Pure: events come from the given source, fetched in batches.

import type { StateKey, StateMap } from '../events.js';
import type { RoomVersion } from '../room-versions.js';
import type { StateResEventSource } from './auth-graph.js';
import { resolveStateV1 } from './v1.js';
import { resolveStateV2 } from './v2.js';

export type { StateResEventSource } from './auth-graph.js';
export { isPowerEvent } from './v2.js';

/** Resolves `stateSets` (each (type, state_key) → event id) into one state of the same form. */
export async function resolveState(
  roomId: string,
  version: RoomVersion,
  stateSets: readonly StateMap[],
  source: StateResEventSource,
): Promise<Map<StateKey, string>> {
  return version.stateResolution === 'v1'
    ? resolveStateV1(roomId, version, stateSets, source)
    : resolveStateV2(roomId, version, stateSets, source);
}
