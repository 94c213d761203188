// Loading a room's head from the database: the current state snapshot, its events (redacted ones
// in their redacted form, as authorization must read them), and the forward extremities. The
// events are read past the shared event cache: a big room's state would push out everything it
// holds, for events that the head keeps anyway.

import type { Kysely } from 'kysely';
import { encodeBase64 } from '../protocol/base64.js';
import { referenceHash } from '../protocol/hashes.js';
import { toRoomEvent, type StateKey } from '../protocol/events.js';
import { getRoomVersion, type RoomVersion } from '../protocol/room-versions.js';
import type { Schema } from '../storage/schema.js';
import { forwardExtremities } from '../storage/rooms/extremities.js';
import { roomById } from '../storage/rooms/rooms.js';
import { readSnapshotState, type StateKeyNids } from '../storage/rooms/state-snapshots.js';
import { redactedRoomEvent } from './builder.js';
import { RoomHead, type EventRef, type SnapshotRef } from './head.js';
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
  const keyOf = new Map<number, StateKey>();
  for (const [key, nid] of snapshot.events) keyOf.set(nid, key);
  await reader.visitEventPdus([...snapshot.events.values()], (e) => {
    const roomEvent = toRoomEvent(e.pdu, e.eventId, version);
    head.setState(keyOf.get(e.nid)!, e.redactedBy === undefined ? roomEvent : redactedRoomEvent(roomEvent, head), refOf(e, version));
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
