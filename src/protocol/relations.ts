// Event relations (client-server API, "Forming relationships between events"): an event's
// `m.relates_to` with a `rel_type` and the `event_id` it relates to. Replies (`m.in_reply_to`)
// are not relations in this sense. An annotation (a reaction) also carries its `key`.

import { isJsonObject, type JsonObject } from './json.js';

export interface Relation {
  readonly relType: string;
  readonly eventId: string;
  /** An m.annotation's key (the reaction's emoji). */
  readonly key?: string;
}

export const THREAD = 'm.thread';
export const REPLACE = 'm.replace';
export const ANNOTATION = 'm.annotation';
export const REFERENCE = 'm.reference';

/** The relation `content` declares, if any. */
export function relationOf(content: JsonObject): Relation | undefined {
  const rel = content['m.relates_to'];
  if (!isJsonObject(rel)) return undefined;
  const relType = rel['rel_type'];
  const eventId = rel['event_id'];
  if (typeof relType !== 'string' || typeof eventId !== 'string' || relType === '' || !eventId.startsWith('$')) return undefined;
  const key = rel['key'];
  return relType === ANNOTATION && typeof key === 'string' ? { relType, eventId, key } : { relType, eventId };
}
