// Loading a room's head from the database: the current state snapshot, its events (redacted ones
// in their redacted form, as authorization must read them), and the forward extremities.

import type { Kysely } from 'kysely';
import { encodeBase64 } from '../protocol/base64.js';
import { referenceHash } from '../protocol/hashes.js';
import { getRoomVersion } from '../protocol/room-versions.js';
import type { Schema } from '../storage/schema.js';
import { forwardExtremities } from '../storage/rooms/extremities.js';
import { roomById } from '../storage/rooms/rooms.js';
import { getSnapshotInfo, readSnapshotState, type StateKeyNids } from '../storage/rooms/state-snapshots.js';
import { redactedRoomEvent } from './builder.js';
import { RoomHead, storedSnapshot, type EventRef } from './head.js';
import type { RoomReader } from './reader.js';
import { roomEventOf, type StoredEvent } from './stored-event.js';

/** A stored event as later events cite it. */
export function refOf(e: StoredEvent, head: RoomHead): EventRef {
  return {
    eventId: e.eventId,
    depth: e.pdu.depth,
    nid: e.nid,
    ...(head.version.eventIdFormat === 'v1' ? { referenceHash: encodeBase64(referenceHash(e.pdu, head.version)) } : {}),
  };
}

/** The room's head, or undefined when this server has no such room. */
export async function loadRoomHead(
  db: Kysely<Schema>,
  reader: RoomReader,
  stateKeys: StateKeyNids,
  roomId: string,
): Promise<RoomHead | undefined> {
  const row = await roomById(db, roomId);
  if (row === undefined || row.state_snapshot_nid === null) return undefined;
  const version = getRoomVersion(row.room_version);
  if (version === undefined) throw new Error(`room ${roomId} has unknown version ${row.room_version}`);
  const head = new RoomHead(roomId, version);
  head.roomNid = Number(row.room_nid);

  const snapshotNid = Number(row.state_snapshot_nid);
  const snapshot = await readSnapshotState(db, snapshotNid);
  stateKeys.remember(snapshot.keyNids);
  const events = await reader.eventsByNids([...snapshot.events.values()]);
  for (const [key, nid] of snapshot.events) {
    const e = events.get(nid);
    if (e === undefined) throw new Error(`state event ${nid} of room ${roomId} is missing`);
    const roomEvent = roomEventOf(e);
    head.setState(key, e.redactedBy === undefined ? roomEvent : redactedRoomEvent(roomEvent, head), refOf(e, head));
  }
  const info = await getSnapshotInfo(db, snapshotNid);
  if (info === undefined) throw new Error(`state snapshot ${snapshotNid} of room ${roomId} is missing`);
  head.snapshot = storedSnapshot(info);

  const extremityNids = await forwardExtremities(db, head.roomNid);
  const extremities = await reader.eventsByNids(extremityNids);
  head.extremities = extremityNids.map((nid) => refOf(extremities.get(nid)!, head));
  head.storedExtremityCount = extremityNids.length;
  return head;
}
