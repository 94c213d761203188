// rooms.leave: rooms the user left or was banned from since the token (and, on an initial sync
// whose filter asks include_leave, every room left and not forgotten). The timeline runs up to
// the leave; the state is that of a room the user was in, and none for a room they never joined
// (a rejected invite, a withdrawn knock), whose state they had only in stripped form.

import type { Kysely } from 'kysely';
import type { JsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import type { Schema } from '../storage/schema.js';
import type { SyncPass } from './pass.js';
import type { SharedReads } from './shared-reads.js';
import type { LeftRoomSection } from './response.js';
import { clientEventsOf, loadRoomContents } from './room-content.js';
import type { LeavePlan } from './room-plans.js';

export async function leftRoomSections(
  db: Kysely<Schema>,
  reader: RoomReader,
  shared: SharedReads,
  pass: SyncPass,
  plans: readonly LeavePlan[],
  accountData: ReadonlyMap<string, JsonObject[]>,
): Promise<Record<string, LeftRoomSection>> {
  if (plans.length === 0) return {};
  const contents = await loadRoomContents(
    db,
    reader,
    shared,
    pass,
    plans.map((p) => ({
      roomId: p.roomId,
      roomNid: p.roomNid,
      range: p.range,
      fullState: p.fullState,
      stateless: !p.wasJoined,
      visibleFrom: undefined,
      newlyJoined: p.newlyJoined,
    })),
  );
  const out: Record<string, LeftRoomSection> = {};
  for (const p of plans) {
    const content = contents.get(p.roomId)!;
    out[p.roomId] = {
      state: { events: await clientEventsOf(reader, pass, content.state) },
      timeline: {
        events: await clientEventsOf(reader, pass, content.timeline.events),
        limited: content.timeline.limited,
        prev_batch: content.timeline.prevBatch,
      },
      account_data: { events: accountData.get(p.roomId) ?? [] },
    };
  }
  return out;
}
