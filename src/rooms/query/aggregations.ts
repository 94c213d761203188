// Aggregations bundled with served events (client-server API, "Aggregations of child events"), in
// unsigned["m.relations"] of each event something relates to:
// - m.thread: the thread's newest event (in full), how many events it has, and whether the
//   viewer took part (sent the root or an event in it);
// - m.replace: the newest valid edit in full (same sender and type as the original, which is not
//   a state event), newest by origin_server_ts, then by event id;
// - m.reference: the referencing events' ids, oldest first.
// Annotations (reactions) are not bundled, as in the spec since 1.7. Only events whose row is
// marked as related to are looked at, so serving others reads nothing more.

import type { JsonObject } from '../../protocol/json.js';
import { REFERENCE, REPLACE, THREAD } from '../../protocol/relations.js';
import { editsAndReferences, threadEventsAt, threadSummaries, threadsWithSender } from '../../storage/rooms/relations.js';
import { toClientEvent, type ClientEventOptions } from '../client-event.js';
import type { RoomReader } from '../reader.js';
import type { StoredEvent } from '../stored-event.js';

/** The m.relations of each of `events` that has any, by event id. */
export async function bundledAggregations(
  reader: RoomReader,
  events: readonly StoredEvent[],
  options: Omit<ClientEventOptions, 'redactedBecause' | 'pruned' | 'relations'>,
): Promise<Map<string, JsonObject>> {
  const out = new Map<string, JsonObject>();
  const targets = events.filter((e) => e.hasRelations === true && e.redactedBy === undefined);
  if (targets.length === 0) return out;
  const ids = targets.map((e) => e.eventId);
  const rooms = [...new Set(targets.map((e) => e.roomNid))];
  const byId = new Map(targets.map((e) => [e.eventId, e]));
  const relationsOf = (id: string) => {
    let r = out.get(id);
    if (r === undefined) out.set(id, (r = {}));
    return r;
  };
  const serve = (e: StoredEvent) => toClientEvent(e, options) as unknown as JsonObject;

  // Relations count only in the room of the event they relate to.
  const inRoom = (target: string, roomNid: number) => byId.get(target)?.roomNid === roomNid;

  // Threads.
  const threads = (await threadSummaries(reader.db, ids, rooms)).filter((t) => inRoom(t.root, t.roomNid));
  if (threads.length > 0) {
    const viewer = options.viewer?.userId;
    const took = viewer === undefined ? new Set<string>() : await threadsWithSender(reader.db, threads.map((t) => t.root), viewer);
    const latestRows = await threadEventsAt(reader.db, threads.map((t) => t.root), rooms, threads.map((t) => t.latestPosition));
    const latest = await reader.eventsByNids(latestRows.map((r) => r.eventNid));
    const latestOf = new Map(latestRows.filter((r) => inRoom(r.relatesTo, r.roomNid)).map((r) => [r.relatesTo, latest.get(r.eventNid)]));
    for (const t of threads) {
      const newest = latestOf.get(t.root);
      if (newest === undefined) continue;
      relationsOf(t.root)[THREAD] = {
        latest_event: serve(newest),
        count: t.count,
        current_user_participated: viewer !== undefined && (took.has(t.root) || byId.get(t.root)?.sender === viewer),
      };
    }
  }

  // Edits and references.
  const rows = (await editsAndReferences(reader.db, ids, rooms)).filter((r) => inRoom(r.relatesTo, r.roomNid));
  const edits = new Map<string, (typeof rows)[number]>();
  for (const r of rows) {
    const original = byId.get(r.relatesTo)!;
    if (r.relType === REFERENCE) {
      const refs = (relationsOf(r.relatesTo)[REFERENCE] ??= { chunk: [] }) as { chunk: { event_id: string }[] };
      refs.chunk.push({ event_id: r.eventId });
      continue;
    }
    if (r.sender !== original.sender || r.type !== original.type || original.stateKey !== undefined) continue;
    const best = edits.get(r.relatesTo);
    if (best === undefined || r.originServerTs > best.originServerTs || (r.originServerTs === best.originServerTs && r.eventId > best.eventId)) edits.set(r.relatesTo, r);
  }
  if (edits.size > 0) {
    const editEvents = await reader.eventsByNids([...edits.values()].map((r) => r.eventNid));
    for (const [target, r] of edits) {
      const edit = editEvents.get(r.eventNid);
      if (edit !== undefined && edit.stateKey === undefined) relationsOf(target)[REPLACE] = serve(edit);
    }
  }
  return out;
}
