// The state writes of the writer's batches: snapshot rows and entries, current-state deltas,
// memberships, joined servers and the room summary. On PostgreSQL through Kysely; on SQLite as
// statements prepared on the connection itself, run synchronously inside the writer's transaction:
// a join runs about ten of them, and Kysely's promise chain around each costs more than the work.

import type { Kysely } from 'kysely';
import type BetterSqlite3 from 'better-sqlite3';
import type { Schema } from '../schema.js';
import { adjustJoinedServers, insertStateDeltas, type JoinedServerChange, type NewStateDelta } from './graph.js';
import { deleteMemberships, upsertMemberships, type NewMembership } from './memberships.js';
import { updateRoomSummary, type RoomSummaryUpdate } from './rooms.js';
import { insertSnapshotEntries, insertSnapshotRow, type SnapshotEntry, type SnapshotInfo } from './state-snapshots.js';

/** What a batch writes of room state; each call is done when its promise (if any) settles. */
export interface StateWrites {
  snapshotRow(roomNid: number, parent: SnapshotInfo | null): SnapshotInfo | Promise<SnapshotInfo>;
  snapshotEntries(snapshotNid: number, entries: readonly SnapshotEntry[]): void | Promise<void>;
  stateDeltas(rows: readonly NewStateDelta[]): void | Promise<void>;
  upsertMemberships(rows: readonly NewMembership[]): void | Promise<void>;
  deleteMemberships(roomNid: number, userIds: readonly string[]): void | Promise<void>;
  adjustJoinedServers(roomNid: number, deltas: ReadonlyMap<string, JoinedServerChange>): void | Promise<void>;
  updateRoomSummary(roomNid: number, update: RoomSummaryUpdate): void | Promise<void>;
}

/** The writes through Kysely, in the transaction `trx`. */
export function kyselyStateWrites(trx: Kysely<Schema>): StateWrites {
  return {
    snapshotRow: (roomNid, parent) => insertSnapshotRow(trx, roomNid, parent),
    snapshotEntries: (nid, entries) => insertSnapshotEntries(trx, nid, entries),
    stateDeltas: (rows) => insertStateDeltas(trx, rows),
    upsertMemberships: (rows) => upsertMemberships(trx, rows),
    deleteMemberships: (roomNid, userIds) => deleteMemberships(trx, roomNid, userIds),
    adjustJoinedServers: (roomNid, deltas) => adjustJoinedServers(trx, roomNid, deltas),
    updateRoomSummary: (roomNid, update) => updateRoomSummary(trx, roomNid, update),
  };
}

/** The same writes as statements on a SQLite connection; only to be run inside a transaction on it. */
export class SqliteStateWrites implements StateWrites {
  private readonly snapshot: BetterSqlite3.Statement;
  private readonly entry: BetterSqlite3.Statement;
  private readonly delta: BetterSqlite3.Statement;
  private readonly member: BetterSqlite3.Statement;
  private readonly memberGone: BetterSqlite3.Statement;
  private readonly servers: BetterSqlite3.Statement;
  private readonly serversGone: BetterSqlite3.Statement;
  /** Room summary updates by the columns they set. */
  private readonly summaries = new Map<string, BetterSqlite3.Statement>();

  constructor(private readonly sqlite: BetterSqlite3.Database) {
    this.snapshot = sqlite.prepare('insert into state_snapshots (room_nid, parent_nid, chain_length, chain) values (?, ?, ?, ?) returning snapshot_nid');
    this.entry = sqlite.prepare('insert into state_snapshot_entries (snapshot_nid, state_key_nid, event_nid) values (?, ?, ?)');
    this.delta = sqlite.prepare(
      'insert into current_state_deltas (position, room_nid, state_key_nid, event_nid, prev_event_nid, snapshot_nid) values (?, ?, ?, ?, ?, ?)',
    );
    this.member = sqlite.prepare(
      `insert into room_memberships (room_nid, user_id, membership, event_nid, stream_ordering, forgotten) values (?, ?, ?, ?, ?, 0)
       on conflict (room_nid, user_id) do update set membership = excluded.membership, event_nid = excluded.event_nid,
       stream_ordering = excluded.stream_ordering, forgotten = 0`,
    );
    this.memberGone = sqlite.prepare('delete from room_memberships where room_nid = ? and user_id = ?');
    this.servers = sqlite.prepare(
      `insert into room_joined_servers (room_nid, server_name, joined_members, joined_since) values (?, ?, ?, ?)
       on conflict (room_nid, server_name) do update set joined_members = room_joined_servers.joined_members + excluded.joined_members`,
    );
    this.serversGone = sqlite.prepare('delete from room_joined_servers where room_nid = ? and joined_members <= 0');
  }

  snapshotRow(roomNid: number, parent: SnapshotInfo | null): SnapshotInfo {
    const chainLength = parent === null ? 0 : parent.chainLength + 1;
    const ancestors = parent === null ? [] : parent.chain;
    const row = this.snapshot.get(roomNid, parent?.nid ?? null, chainLength, JSON.stringify(ancestors)) as { snapshot_nid: number | bigint };
    const nid = Number(row.snapshot_nid);
    return { nid, chainLength, chain: [...ancestors, nid] };
  }

  snapshotEntries(snapshotNid: number, entries: readonly SnapshotEntry[]): void {
    for (const [keyNid, eventNid] of entries) this.entry.run(snapshotNid, keyNid, eventNid);
  }

  stateDeltas(rows: readonly NewStateDelta[]): void {
    for (const d of rows) this.delta.run(d.position, d.roomNid, d.stateKeyNid, d.eventNid, d.prevEventNid, d.snapshotNid);
  }

  upsertMemberships(rows: readonly NewMembership[]): void {
    for (const r of rows) this.member.run(r.roomNid, r.userId, r.membership, r.eventNid, r.streamOrdering);
  }

  deleteMemberships(roomNid: number, userIds: readonly string[]): void {
    for (const u of userIds) this.memberGone.run(roomNid, u);
  }

  adjustJoinedServers(roomNid: number, deltas: ReadonlyMap<string, JoinedServerChange>): void {
    let changed = false;
    for (const [server, d] of deltas) {
      if (d.change === 0) continue;
      this.servers.run(roomNid, server, d.change, d.position);
      changed = true;
    }
    if (changed) this.serversGone.run(roomNid);
  }

  updateRoomSummary(roomNid: number, update: RoomSummaryUpdate): void {
    const columns = Object.keys(update).filter((c) => update[c as keyof RoomSummaryUpdate] !== undefined);
    if (columns.length === 0) return;
    const shape = columns.join(',');
    let statement = this.summaries.get(shape);
    if (statement === undefined) {
      // Column names come from RoomSummaryUpdate's keys, never from input; checked all the same.
      if (!columns.every((c) => /^[a-z_]+$/.test(c))) throw new Error(`room summary columns ${shape}`);
      statement = this.sqlite.prepare(`update rooms set ${columns.map((c) => `${c} = ?`).join(', ')} where room_nid = ?`);
      this.summaries.set(shape, statement);
    }
    statement.run(...columns.map((c) => update[c as keyof RoomSummaryUpdate] ?? null), roomNid);
  }
}
