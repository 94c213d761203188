// Which users' device lists a client must re-read (`device_lists` in /sync, GET /keys/changes):
// users sharing a room with it whose devices or keys changed on the device_lists stream (the
// user themself included), users whose keys changed in a way only this user may see (what its
// user-signing key signed), users who started sharing a room with it (a join on either side),
// and, under `left`, users who no longer share any room with it.

import type { Kysely } from 'kysely';
import { isJsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import { byStreamOrder, membershipOf, type StoredEvent } from '../rooms/stored-event.js';
import { membersOfRoom, roomsOfUser, usersSharingRooms } from '../storage/rooms/memberships.js';
import type { Schema } from '../storage/schema.js';
import type { StreamEvent } from '../storage/sync/events.js';
import { deviceListChangesSeenBy, memberEventsInRange, type MemberEventRef } from '../storage/user-data/device-lists.js';
import type { Notifier } from './notifier.js';
import { decodeSyncToken, type StreamPositions } from './token.js';

export interface DeviceListChanges {
  changed: string[];
  left: string[];
}

export interface DeviceListRange {
  readonly userId: string;
  readonly since: StreamPositions;
  readonly upTo: StreamPositions;
  /** Every event of the events range, when the sync holds it (then no member events are read). */
  readonly window?: readonly StreamEvent[] | undefined;
  /** The rooms the user is joined to, when known. */
  readonly joinedRoomNids?: Iterable<number>;
  /** Loads events by nid (the sync's shared reads); default: the room reader. */
  readonly events?: (nids: readonly number[]) => Promise<Map<number, StoredEvent>>;
}

export interface DeviceListTrackerDeps {
  readonly db: Kysely<Schema>;
  readonly reader: Pick<RoomReader, 'eventsByNids'>;
  readonly notifier: Pick<Notifier, 'current'>;
}

function previousMembership(e: StoredEvent): string | undefined {
  const prev = e.unsigned?.['prev_content'];
  const m = isJsonObject(prev) ? prev['membership'] : undefined;
  return typeof m === 'string' ? m : undefined;
}

export class DeviceListTracker {
  constructor(private readonly deps: DeviceListTrackerDeps) {}

  /** GET /keys/changes: the changes between two sync tokens (`to` defaults to now). */
  async changesBetween(userId: string, from: string, to: string | undefined): Promise<DeviceListChanges> {
    const current = this.deps.notifier.current();
    const since = decodeSyncToken(from);
    const upTo = to === undefined ? { ...current } : decodeSyncToken(to);
    for (const s of ['events', 'device_lists'] as const) {
      upTo[s] = Math.min(upTo[s], current[s]);
      since[s] = Math.min(since[s], upTo[s]);
    }
    return this.changes({ userId, since, upTo });
  }

  /** The changes over (since, upTo] of the events and device_lists streams. */
  async changes(range: DeviceListRange): Promise<DeviceListChanges> {
    const { userId, since, upTo } = range;
    const { db } = this.deps;
    const newlyShared = new Set<string>();
    const noLongerShared = new Set<string>();

    if (since.events < upTo.events) {
      const refs = await this.memberEvents(range);
      if (refs.length > 0) {
        const load = range.events ?? ((nids) => this.deps.reader.eventsByNids(nids));
        const events = await load(refs.map((r) => r.eventNid));
        const joinedRooms = new Set<number>();
        const leftRooms = new Set<number>();
        const ordered = [...events.values()].sort(byStreamOrder);
        for (const e of ordered) {
          if (e.stateKey === undefined) continue;
          const now = membershipOf(e);
          const before = previousMembership(e);
          const joined = now === 'join' && before !== 'join';
          const left = (now === 'leave' || now === 'ban') && before === 'join';
          if (e.stateKey === userId) {
            if (joined) joinedRooms.add(e.roomNid);
            if (left) leftRooms.add(e.roomNid);
          } else if (joined) {
            newlyShared.add(e.stateKey);
          } else if (left) {
            noLongerShared.add(e.stateKey);
          }
        }
        for (const roomNid of joinedRooms) for (const m of await membersOfRoom(db, roomNid, ['join'])) newlyShared.add(m.user_id);
        for (const roomNid of leftRooms) for (const m of await membersOfRoom(db, roomNid, ['join'])) noLongerShared.add(m.user_id);
      }
    }

    const deviceChanges =
      since.device_lists < upTo.device_lists
        ? await deviceListChangesSeenBy(db, userId, since.device_lists, upTo.device_lists)
        : { shared: new Set<string>(), direct: new Set<string>() };
    if (newlyShared.size === 0 && noLongerShared.size === 0 && deviceChanges.shared.size === 0 && deviceChanges.direct.size === 0) {
      return { changed: [], left: [] };
    }

    // Changes meant for this user alone (what its user-signing key signed) need no shared room.
    const changed = new Set<string>(deviceChanges.direct);
    const sharing = await usersSharingRooms(db, userId);
    for (const u of deviceChanges.shared) if (u === userId || sharing.has(u)) changed.add(u);
    for (const u of newlyShared) if (u !== userId && sharing.has(u)) changed.add(u);
    const left = [...noLongerShared].filter((u) => u !== userId && !sharing.has(u));
    return { changed: [...changed].sort(), left: left.sort() };
  }

  /** The member events of the range in the user's rooms (joined now, or their own membership changed). */
  private async memberEvents(range: DeviceListRange): Promise<MemberEventRef[]> {
    const { userId, since, upTo, window } = range;
    let joined = range.joinedRoomNids === undefined ? undefined : new Set(range.joinedRoomNids);
    if (window !== undefined && joined !== undefined) {
      const members = window.filter((e) => e.type === 'm.room.member' && e.stateKey !== undefined);
      const rooms = new Set(joined);
      for (const e of members) if (e.stateKey === userId) rooms.add(e.roomNid);
      return members.filter((e) => rooms.has(e.roomNid)).map((e) => ({ roomNid: e.roomNid, eventNid: e.eventNid, stateKey: e.stateKey! }));
    }
    joined ??= new Set((await roomsOfUser(this.deps.db, userId, ['join'])).map((r) => Number(r.room_nid)));
    return memberEventsInRange(this.deps.db, userId, [...joined], since.events, upTo.events);
  }
}
