// One build of a sync response: who asks, with which filter, and the stream range it covers,
// (since, upTo] per stream. `upTo` is read once at the start, so every section covers the same
// positions and the next token names exactly what was looked at.

import { projectEventFields, type CompiledFilter } from '../protocol/filters.js';
import type { JsonObject } from '../protocol/json.js';
import type { StreamEvent } from '../storage/sync/events.js';
import type { DeviceMembers } from './lazy-members.js';
import type { StreamPositions } from '../streams/positions.js';

export interface SyncPass {
  readonly userId: string;
  readonly deviceId: string | null;
  readonly filter: CompiledFilter;
  /** Undefined for an initial sync. */
  readonly since: StreamPositions | undefined;
  readonly upTo: StreamPositions;
  readonly fullState: boolean;
  /** The time "now" for unsigned.age. */
  readonly now: number;
  /**
   * With lazy-loaded members and without include_redundant_members: the member events the device
   * was already sent, which an incremental sync leaves out of `state` (and adds to).
   */
  readonly sentMembers?: DeviceMembers;
  /** The users the requester ignores (m.ignored_user_list). */
  ignored(): Promise<ReadonlySet<string>>;
  /**
   * Every event of the server in (since, upTo] of the events stream, oldest first; undefined for
   * an initial sync or a range too long to hold (then each part reads what it needs itself).
   */
  window(): Promise<readonly StreamEvent[] | undefined>;
}

/** Whether the stream moved in the pass's range (an initial sync reads everything). */
export function moved(pass: Pick<SyncPass, 'since' | 'upTo'>, stream: keyof StreamPositions): boolean {
  return pass.since === undefined || pass.since[stream] < pass.upTo[stream];
}

/** A client event reduced to the filter's event_fields, when it names any. */
export function projectFields(pass: SyncPass, event: JsonObject): JsonObject {
  const fields = pass.filter.eventFields;
  return fields === undefined ? event : projectEventFields(event, fields);
}
