// Stores signed events as rows, as events that came over federation would be: on any prev events
// (forks of a room the room service built), with any status (rejected, outlier), with the state
// snapshot after them and their auth and prev rows. Nothing is authorized: a test decides what is
// accepted. Auth events are chosen from the state before the event unless the test names them.
// Rooms whose event ids are hashes (v3 and later): auth and prev events are cited by id.

import type { Kysely } from 'kysely';
import { authTypesForEvent } from '../../src/protocol/auth-events.js';
import { parseStateKey, referenceIds, stateKey, toRoomEvent, type Pdu, type RoomEvent, type StateKey } from '../../src/protocol/events.js';
import { hashAndSignEventWithId } from '../../src/protocol/hashes.js';
import type { JsonObject } from '../../src/protocol/json.js';
import type { RoomVersion } from '../../src/protocol/room-versions.js';
import type { SigningKey } from '../../src/protocol/signing.js';
import { eventsByIds } from '../../src/storage/rooms/events.js';
import { insertGraphRows } from '../../src/storage/rooms/graph.js';
import { HotRoomQueries } from '../../src/storage/rooms/hot-queries.js';
import {
  getSnapshotInfo,
  insertSnapshotEntries,
  insertSnapshotRow,
  STATE_CHAIN_LIMIT,
  readSnapshot,
  readSnapshotStates,
  StateKeyNids,
  type SnapshotEntry,
} from '../../src/storage/rooms/state-snapshots.js';
import type { EventStatus, Schema } from '../../src/storage/schema.js';

export interface StoredEventSpec {
  readonly sender: string;
  readonly type: string;
  readonly stateKey?: string;
  readonly content: JsonObject;
  /** Prev events (stored ones). */
  readonly prev: readonly string[];
  /** Auth events; by default those selected from the state before. */
  readonly auth?: readonly string[];
  /** Default 'timeline'. */
  readonly status?: EventStatus;
  /**
   * The state before, as a snapshot nid: by default the state after the only prev event. An
   * event on several prev events must be given it (or be an outlier).
   */
  readonly stateBefore?: number;
}

export interface StoredTestEvent {
  readonly eventId: string;
  readonly nid: number;
  readonly pdu: Pdu;
  readonly event: RoomEvent;
  readonly stateBeforeNid: number | undefined;
  readonly stateAfterNid: number | undefined;
}

/**
 * The event_auth and event_edges rows of every event of the room, from their JSON (rows that exist
 * are kept): for events the room service wrote before its writer kept those rows itself.
 */
export async function indexRoomGraph(db: Kysely<Schema>, roomNid: number): Promise<void> {
  const rows = await db.selectFrom('events').select(['event_nid', 'json']).where('room_nid', '=', roomNid).execute();
  await insertGraphRows(
    db,
    rows.map((r) => {
      const pdu = JSON.parse(r.json) as Pdu;
      return { eventNid: Number(r.event_nid), authEventIds: referenceIds(pdu.auth_events), prevEventIds: referenceIds(pdu.prev_events) };
    }),
  );
}

export class StoredEventWriter {
  private readonly keyNids = new StateKeyNids();
  private readonly hot: HotRoomQueries;
  private ts = Date.now();

  constructor(
    readonly db: Kysely<Schema>,
    readonly room: { readonly roomId: string; readonly roomNid: number; readonly version: RoomVersion },
    readonly serverName: string,
    readonly key: SigningKey,
  ) {
    this.hot = new HotRoomQueries(db);
  }

  /** The state a snapshot holds, by event id. */
  async stateOf(snapshotNid: number): Promise<Map<StateKey, string>> {
    const { states } = await readSnapshotStates(this.db, [snapshotNid]);
    return new Map([...states.get(snapshotNid)!.events].map(([key, e]) => [key, e.eventId]));
  }

  async add(spec: StoredEventSpec): Promise<StoredTestEvent> {
    const status = spec.status ?? 'timeline';
    const prevRows = await eventsByIds(this.db, spec.prev);
    if (prevRows.length !== spec.prev.length) throw new Error(`prev events ${spec.prev.join(', ')} are not all stored`);
    let stateBefore = spec.stateBefore;
    if (stateBefore === undefined && status !== 'outlier') {
      if (prevRows.length !== 1 || prevRows[0]!.state_after_nid === null) throw new Error('give the state before of this event');
      stateBefore = Number(prevRows[0]!.state_after_nid);
    }
    const before = stateBefore === undefined ? new Map<StateKey, string>() : await this.stateOf(stateBefore);
    const subject = { type: spec.type, sender: spec.sender, content: spec.content, ...(spec.stateKey !== undefined ? { state_key: spec.stateKey } : {}) };
    const auth = spec.auth ?? authTypesForEvent(subject, this.room.version).flatMap((k) => before.get(k) ?? []);
    const depth = Math.max(0, ...prevRows.map((r) => r.depth)) + 1;
    const signed = hashAndSignEventWithId(
      {
        room_id: this.room.roomId,
        ...subject,
        origin_server_ts: ++this.ts,
        depth,
        auth_events: [...auth],
        prev_events: [...spec.prev],
      },
      this.serverName,
      this.key,
      this.room.version,
    );
    const accepted = status !== 'rejected' && status !== 'outlier';
    return this.db.transaction().execute(async (trx) => {
      const position = status === 'timeline' ? await this.hot.allocateEventPositions(trx, 1) : null;
      const row = await trx
        .insertInto('events')
        .values({
          event_id: signed.eventId,
          room_nid: this.room.roomNid,
          type: spec.type,
          state_key: spec.stateKey ?? null,
          sender: spec.sender,
          origin_server_ts: signed.pdu.origin_server_ts,
          depth,
          stream_ordering: position,
          status,
          json: JSON.stringify(signed.pdu),
          unsigned_json: null,
          redacts: null,
          redacted_by: null,
          rejection_reason: status === 'rejected' ? 'test' : null,
          state_before_nid: stateBefore ?? null,
          state_after_nid: null,
          txn_device_id: null,
          txn_id: null,
        })
        .returning('event_nid')
        .executeTakeFirstOrThrow();
      const nid = Number(row.event_nid);
      await insertGraphRows(trx, [{ eventNid: nid, authEventIds: auth, prevEventIds: spec.prev }]);
      let stateAfter: number | undefined;
      if (accepted && stateBefore !== undefined) {
        stateAfter = stateBefore;
        if (spec.stateKey !== undefined) {
          const parent = (await getSnapshotInfo(trx, stateBefore))!;
          const keyNid = await this.keyNids.getOrCreate(trx, spec.type, spec.stateKey);
          // A delta on its parent, or a full snapshot once the chain is at its bound.
          const full = parent.chainLength + 1 > STATE_CHAIN_LIMIT;
          const info = await insertSnapshotRow(trx, this.room.roomNid, full ? null : parent);
          const entries: SnapshotEntry[] = [];
          if (full) {
            const own = stateKey(spec.type, spec.stateKey);
            for (const [key, eventNid] of await readSnapshot(trx, stateBefore)) {
              const { type, stateKey: k } = parseStateKey(key);
              if (key !== own) entries.push([await this.keyNids.getOrCreate(trx, type, k), eventNid]);
            }
          }
          entries.push([keyNid, nid]);
          await insertSnapshotEntries(trx, info.nid, entries);
          stateAfter = info.nid;
        }
        await trx.updateTable('events').set({ state_after_nid: stateAfter }).where('event_nid', '=', nid).execute();
      }
      return {
        eventId: signed.eventId,
        nid,
        pdu: signed.pdu,
        event: toRoomEvent(signed.pdu, signed.eventId, this.room.version),
        stateBeforeNid: stateBefore,
        stateAfterNid: stateAfter,
      };
    });
  }
}
