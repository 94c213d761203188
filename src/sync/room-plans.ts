// Which rooms a sync speaks of, and how: the user's membership at the token's events position
// decides the section (join, invite, knock, leave); the member events about the user since the
// previous token decide which rooms are new to the client (shown whole) and which changed.
//
// Cost: one read of the user's memberships (one row per room) and one of their membership
// changes in the range; nothing is read per room here.

import type { Kysely } from 'kysely';
import { isJsonObject } from '../protocol/json.js';
import type { RoomReader } from '../rooms/reader.js';
import { membershipOf, positionOf, type StoredEvent } from '../rooms/stored-event.js';
import type { Schema } from '../storage/schema.js';
import { memberEventAtOrBefore } from '../storage/sync/memberships.js';
import type { PositionRange } from '../storage/sync/events.js';
import type { SyncPass } from './pass.js';
import type { SharedReads } from './shared-reads.js';

export interface JoinPlan {
  readonly roomId: string;
  readonly roomNid: number;
  /** The timeline's range: since the token, or from the room's start when the room is new to the client. */
  readonly range: PositionRange;
  /** Full state at the start of the timeline (initial sync, newly joined, full_state). */
  readonly fullState: boolean;
  /** Shown whether or not anything else changed (initial sync, newly joined, full_state). */
  readonly always: boolean;
  /** From this position on the user is joined: later events need no history-visibility check. */
  readonly joinedFrom: number;
}

export interface LeavePlan {
  readonly roomId: string;
  readonly roomNid: number;
  /** Up to and including the user's leave (or ban). */
  readonly range: PositionRange;
  readonly fullState: boolean;
  readonly leaveEvent: StoredEvent;
  /** The user was joined right before leaving (else: a rejected invite, a retracted knock ...). */
  readonly wasJoined: boolean;
  /** Joined and left again since the token of an incremental sync (the room is new to the client). */
  readonly newlyJoined: boolean;
}

export interface StrippedPlan {
  readonly roomId: string;
  readonly roomNid: number;
  /** The invite or knock member event. */
  readonly event: StoredEvent;
}

/** The user's memberships as last read, kept per user between syncs. */
export interface MembershipCache {
  get(userId: string): { readonly at: number; readonly list: readonly MembershipAt[] } | undefined;
  set(userId: string, value: { readonly at: number; readonly list: readonly MembershipAt[] }): void;
}

export interface RoomPlans {
  /** Every room the user is joined to at the token (the filter's room lists applied), by id. */
  readonly joined: Map<string, JoinPlan>;
  readonly invites: StrippedPlan[];
  readonly knocks: StrippedPlan[];
  readonly leaves: LeavePlan[];
}

export interface MembershipAt {
  readonly roomId: string;
  readonly roomNid: number;
  readonly membership: string;
  readonly eventNid: number;
  readonly position: number;
  readonly forgotten: boolean;
}

/** The membership a member event's predecessor set (prev_content), or undefined when it had none. */
export function previousMembership(e: StoredEvent): string | undefined {
  const prev = e.unsigned?.['prev_content'];
  const m = isJsonObject(prev) ? prev['membership'] : undefined;
  return typeof m === 'string' ? m : undefined;
}

/** The user's memberships as they stood at `upTo` (later changes are left for the next sync). */
async function membershipsAt(db: Kysely<Schema>, reader: RoomReader, userId: string, upTo: number): Promise<MembershipAt[]> {
  const rows = await reader.roomsOfUser(userId);
  const out: MembershipAt[] = [];
  const behind: { roomId: string; roomNid: number; eventNid: number; position: number }[] = [];
  for (const r of rows) {
    const position = Number(r.stream_ordering);
    const roomNid = Number(r.room_nid);
    if (position <= upTo) {
      out.push({ roomId: r.room_id, roomNid, membership: r.membership, eventNid: Number(r.event_nid), position, forgotten: r.forgotten !== 0 });
      continue;
    }
    // Changed after the token's position was taken (a race with a write): look back.
    const at = await memberEventAtOrBefore(db, roomNid, userId, upTo);
    if (at !== undefined) behind.push({ roomId: r.room_id, roomNid, ...at });
  }
  if (behind.length > 0) {
    const events = await reader.eventsByNids(behind.map((b) => b.eventNid));
    for (const b of behind) {
      const e = events.get(b.eventNid);
      const membership = e === undefined ? undefined : membershipOf(e);
      if (membership !== undefined) out.push({ ...b, membership, forgotten: false });
    }
  }
  return out;
}

/** The member events about the user in the pass's range, oldest first. */
async function membershipChanges(reader: RoomReader, shared: SharedReads, pass: SyncPass, since: number, upTo: number): Promise<StoredEvent[]> {
  const window = await pass.window();
  if (window === undefined) return reader.membershipChanges(pass.userId, { after: since, upTo });
  const nids = window.filter((e) => e.type === 'm.room.member' && e.stateKey === pass.userId).map((e) => e.eventNid);
  if (nids.length === 0) return [];
  const events = await shared.events(nids);
  return nids.map((nid) => events.get(nid)).filter((e): e is StoredEvent => e !== undefined);
}

export async function planRooms(
  db: Kysely<Schema>,
  reader: RoomReader,
  shared: SharedReads,
  pass: SyncPass,
  cache: MembershipCache,
): Promise<RoomPlans> {
  const { userId, filter } = pass;
  const upTo = pass.upTo.events;
  const since = pass.since?.events;

  // Per room, the member events about the user since the token (oldest first).
  const changes = new Map<string, StoredEvent[]>();
  let lastChange = -1;
  if (since !== undefined && since < upTo) {
    for (const e of await membershipChanges(reader, shared, pass, since, upTo)) {
      let list = changes.get(e.roomId);
      if (!list) changes.set(e.roomId, (list = []));
      list.push(e);
      lastChange = Math.max(lastChange, positionOf(e));
    }
  }
  // The memberships read by an earlier sync still hold when nothing about the user changed since.
  const known = cache.get(userId);
  let all: readonly MembershipAt[];
  if (since !== undefined && known !== undefined && known.at >= since && known.at <= upTo && lastChange <= known.at) {
    all = known.list;
  } else {
    all = await membershipsAt(db, reader, userId, upTo);
  }
  cache.set(userId, { at: upTo, list: all });
  const memberships = all.filter((m) => filter.allowsRoom(m.roomId));

  const joined = new Map<string, JoinPlan>();
  const stripped: MembershipAt[] = [];
  const left: MembershipAt[] = [];
  for (const m of memberships) {
    const changed = changes.get(m.roomId);
    switch (m.membership) {
      case 'join': {
        // New to the client: an initial sync, or a join since the token (a rejoin included).
        const isNew =
          since === undefined ||
          (changed !== undefined &&
            (previousMembership(changed[0]!) !== 'join' || changed.some((e) => membershipOf(e) !== 'join')));
        joined.set(m.roomId, {
          roomId: m.roomId,
          roomNid: m.roomNid,
          range: isNew ? { upTo } : { after: since, upTo },
          fullState: isNew || pass.fullState,
          always: isNew || pass.fullState,
          joinedFrom: m.position,
        });
        break;
      }
      case 'invite':
      case 'knock':
        if (since === undefined || changed !== undefined) stripped.push(m);
        break;
      case 'leave':
      case 'ban':
        if (m.forgotten) break;
        if (since === undefined ? filter.includeLeave : changed !== undefined) left.push(m);
        break;
    }
  }

  const events = await reader.eventsByNids([...stripped, ...left].map((m) => m.eventNid));
  const invites: StrippedPlan[] = [];
  const knocks: StrippedPlan[] = [];
  for (const m of stripped) {
    const event = events.get(m.eventNid);
    if (event === undefined) continue;
    (m.membership === 'invite' ? invites : knocks).push({ roomId: m.roomId, roomNid: m.roomNid, event });
  }
  const leaves: LeavePlan[] = [];
  for (const m of left) {
    const leaveEvent = events.get(m.eventNid);
    if (leaveEvent === undefined) continue;
    const changed = changes.get(m.roomId);
    // Joined at the token and through to the leave: only what happened since is new.
    const joinedThrough =
      since !== undefined &&
      changed !== undefined &&
      previousMembership(changed[0]!) === 'join' &&
      changed.slice(0, -1).every((e) => membershipOf(e) === 'join');
    leaves.push({
      roomId: m.roomId,
      roomNid: m.roomNid,
      range: joinedThrough ? { after: since, upTo: m.position } : { upTo: m.position },
      fullState: !joinedThrough || pass.fullState,
      leaveEvent,
      wasJoined: previousMembership(leaveEvent) === 'join',
      newlyJoined: since !== undefined && changed !== undefined && previousMembership(changed[0]!) !== 'join' && changed.some((e) => membershipOf(e) === 'join'),
    });
  }
  return { joined, invites, knocks, leaves };
}
