// Loading a room's head from the database: the current state snapshot, its pinned events (redacted
// ones in their redacted form, as authorization must read them) and references to the rest, each
// member's membership, and the forward extremities. Events are read past the shared event cache:
// a big room's state would push out everything it holds.

import type { Kysely } from 'kysely';
import { encodeBase64 } from '../protocol/base64.js';
import { referenceHash } from '../protocol/hashes.js';
import { toRoomEvent, type RoomEvent, type StateKey } from '../protocol/events.js';
import { getRoomVersion, type RoomVersion } from '../protocol/room-versions.js';
import type { Schema } from '../storage/schema.js';
import { forwardExtremities } from '../storage/rooms/extremities.js';
import { eventRefsByNids } from '../storage/rooms/events.js';
import { membersOfRoom } from '../storage/rooms/memberships.js';
import { roomById } from '../storage/rooms/rooms.js';
import { readSnapshotState, type StateKeyNids } from '../storage/rooms/state-snapshots.js';
import { MEMBER_KEY_PREFIX, redactedRoomEvent, RoomHead, type EventRef, type SnapshotRef, type StateEventLoader } from './head.js';
import type { EventPdu, RoomReader } from './reader.js';

/** A stored event as later events cite it. */
export function refOf(e: EventPdu, version: RoomVersion): EventRef {
  const ref: EventRef = { eventId: e.eventId, depth: e.pdu.depth, nid: e.nid };
  if (version.eventIdFormat !== 'v1') return ref;
  // v1 rooms cite events by reference hash, which takes hashing the event: done when first cited
  // (a few state events are, out of thousands).
  let hash: string | undefined;
  return Object.defineProperty(ref, 'referenceHash', {
    enumerable: true,
    get: () => (hash ??= encodeBase64(referenceHash(e.pdu, version))),
  });
}

/** Reads a head's state events through `reader`, past its cache, in the form authorization reads. */
export function stateEventLoader(reader: RoomReader): StateEventLoader {
  return async (head, refs) => {
    const out = new Map<string, RoomEvent>();
    await reader.visitEventPdus(
      refs.map((r) => r.nid!),
      (e) => out.set(e.eventId, authFormOf(e, head)),
    );
    return out;
  };
}

function authFormOf(e: EventPdu, head: RoomHead): RoomEvent {
  const event = toRoomEvent(e.pdu, e.eventId, head.version);
  return e.redactedBy === undefined ? event : redactedRoomEvent(event, head);
}

/**
 * The room's head, or undefined when this server has no such room. Pinned state events are parsed
 * (every one in v1–v2 rooms); the rest are held by reference, members with their membership.
 */
export async function loadRoomHead(
  db: Kysely<Schema>,
  reader: RoomReader,
  stateKeys: StateKeyNids,
  roomId: string,
  maxLoadedState?: number,
): Promise<RoomHead | undefined> {
  const row = await roomById(db, roomId);
  if (row === undefined || row.state_snapshot_nid === null) return undefined;
  const version = getRoomVersion(row.room_version);
  if (version === undefined) throw new Error(`room ${roomId} has unknown version ${row.room_version}`);
  const head = new RoomHead(roomId, version, maxLoadedState);
  head.roomNid = Number(row.room_nid);
  head.loader = stateEventLoader(reader);

  const snapshotNid = Number(row.state_snapshot_nid);
  const snapshot = await readSnapshotState(db, snapshotNid);
  stateKeys.remember(snapshot.keyNids);
  const keyOf = new Map<number, StateKey>();
  const parsed: number[] = [];
  const held: number[] = [];
  for (const [key, nid] of snapshot.events) {
    keyOf.set(nid, key);
    (head.state.pinned(key) ? parsed : held).push(nid);
  }
  // Members' memberships as the memberships table has them, where it agrees on the event.
  const membershipOf = new Map<number, string>();
  if (held.length > 0) for (const m of await membersOfRoom(db, head.roomNid)) membershipOf.set(Number(m.event_nid), m.membership);
  for (const r of await eventRefsByNids(db, held)) {
    const key = keyOf.get(r.event_nid)!;
    const isMember = key.startsWith(MEMBER_KEY_PREFIX);
    const membership = membershipOf.get(r.event_nid);
    // A member whose row does not match is read in full.
    if (isMember && membership === undefined) {
      parsed.push(r.event_nid);
      continue;
    }
    head.holdState(key, { eventId: r.event_id, depth: r.depth, nid: r.event_nid }, isMember ? membership : undefined);
    keyOf.delete(r.event_nid);
  }
  await reader.visitEventPdus(parsed, (e) => {
    head.setState(keyOf.get(e.nid)!, authFormOf(e, head), refOf(e, version));
    keyOf.delete(e.nid);
  });
  if (keyOf.size > 0) throw new Error(`state event ${keyOf.keys().next().value} of room ${roomId} is missing`);
  // The chain as written, for the policy choosing the next snapshot's parent: nothing to write.
  const chain = snapshot.info.chain;
  let link: SnapshotRef | null = null;
  for (let i = 0; i < chain.length; i++) {
    const info = { nid: chain[i]!, chainLength: i, chain: chain.slice(0, i + 1) };
    link = { info, parent: link, chainLength: i, keys: snapshot.layers[i]!, entries: [] };
  }
  head.snapshot = link;

  const extremityNids = await forwardExtremities(db, head.roomNid);
  const extremities = new Map<number, EventRef>();
  await reader.visitEventPdus(extremityNids, (e) => extremities.set(e.nid, refOf(e, version)));
  head.extremities = extremityNids.map((nid) => extremities.get(nid)!);
  head.storedExtremityCount = extremityNids.length;
  return head;
}
