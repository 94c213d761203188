// Rooms, events and room state (migrations 003 and 009). Booleans are 0/1 integers; JSON is stored as text.

import type { ColumnType, Generated } from 'kysely';

export interface RoomsTable {
  room_nid: Generated<number>;
  room_id: string;
  room_version: string;
  creator: string;
  created_ts: number;
  /** Published in the server's room directory (visibility "public"). */
  is_public: number;
  /** The snapshot holding the room's current state; null until the create event is stored. */
  state_snapshot_nid: number | null;
  // A summary of the current state, kept in step with it, for the directory and room summaries.
  name: string | null;
  topic: string | null;
  canonical_alias: string | null;
  avatar_url: string | null;
  join_rule: string | null;
  history_visibility: string | null;
  guest_access: string | null;
  room_type: string | null;
  joined_members: number;
  invited_members: number;
  /** Position of the room's latest timeline event; null before its first. */
  latest_position: number | null;
}

/**
 * Where a stored event stands. 'timeline': accepted and on the events stream (a position). Off the
 * stream, without a position: 'outlier' (accepted, e.g. an auth or state event fetched over
 * federation), 'rejected' (failed authorization) and 'soft_failed' (authorized by its own state but
 * not by the room's current state). Clients are never served rejected or soft-failed events.
 */
export type EventStatus = 'timeline' | 'outlier' | 'rejected' | 'soft_failed';

/** Small integer ids for (event type, state key) pairs, used by state snapshots. */
export interface EventStateKeysTable {
  state_key_nid: Generated<number>;
  event_type: string;
  state_key: string;
}

export interface EventsTable {
  event_nid: Generated<number>;
  event_id: string;
  room_nid: number;
  type: string;
  state_key: string | null;
  sender: string;
  origin_server_ts: number;
  depth: number;
  /**
   * Position on the global `events` stream: the order clients and sync see. Null for events off
   * the timeline (outliers, rejected and soft-failed events); negative for backfilled events.
   */
  stream_ordering: number | null;
  status: EventStatus;
  /** The full PDU as JSON (hashes, signatures, auth_events, prev_events, depth). */
  json: string;
  /** Server-side unsigned data (prev_content, replaces_state, invite_room_state ...) as JSON. */
  unsigned_json: string | null;
  /** For m.room.redaction: the event it redacts. */
  redacts: string | null;
  /** The redaction that applies to this event, once one does. */
  redacted_by: string | null;
  /** Why the event was rejected (status 'rejected'). */
  rejection_reason: string | null;
  /** The state before and after this event (equal for non-state events). */
  state_before_nid: number | null;
  state_after_nid: number | null;
  /** For events a client sent with a transaction id: its device and txnId (idempotent sends). */
  txn_device_id: string | null;
  txn_id: string | null;
  /** 1 once a stored timeline event relates to this one (event_relations); null before. */
  has_relations: number | null;
}

/** A timeline event that relates to another (m.relates_to with a rel_type). */
export interface EventRelationsTable {
  /** The relating event. */
  event_nid: number;
  event_id: string;
  room_nid: number;
  /** The event it relates to (which may not be stored yet). */
  relates_to: string;
  rel_type: string;
  /** The relating event's type. */
  type: string;
  sender: string;
  /** An m.annotation's key. */
  aggregation_key: string | null;
  stream_ordering: number;
  origin_server_ts: number;
}

export interface StateSnapshotsTable {
  snapshot_nid: Generated<number>;
  room_nid: number;
  /** The snapshot this one is a delta against; null for a full snapshot. */
  parent_nid: number | null;
  /** Number of deltas between this snapshot and the full snapshot it rests on (0 when full). */
  chain_length: number;
  /** JSON array of the ancestors' nids, from the full base to the parent ([] when full). */
  chain: string;
}

export interface StateSnapshotEntriesTable {
  snapshot_nid: number;
  state_key_nid: number;
  /** The state event; null removes the entry inherited from the parent. */
  event_nid: number | null;
}

export interface RoomMembershipsTable {
  room_nid: number;
  user_id: string;
  membership: string;
  event_nid: number;
  stream_ordering: number;
  /** 1 once the user forgot the room after leaving; reset by their next membership change. */
  forgotten: number;
}

export interface ForwardExtremitiesTable {
  room_nid: number;
  event_nid: number;
}

/** An event's auth events, by id: the auth chain is walked over these rows. */
export interface EventAuthTable {
  event_nid: number;
  auth_event_id: string;
}

/** An event's prev events, by id (which may not be stored: see backward_extremities). */
export interface EventEdgesTable {
  event_nid: number;
  prev_event_id: string;
}

/** Prev events cited by stored events of a room that this server does not have. */
export interface BackwardExtremitiesTable {
  room_nid: number;
  event_id: string;
}

/**
 * Changes of a room's current state, by the events-stream position of the timeline event whose
 * acceptance made them (a merge resolving a key to an older event is recorded at the merge).
 */
export interface CurrentStateDeltasTable {
  position: number;
  room_nid: number;
  state_key_nid: number;
  /** The event now at that key; null when the key left the state. */
  event_nid: number | null;
  /** The event at that key before; null when the key is new. */
  prev_event_nid: number | null;
  /** The room's current-state snapshot once this position's changes are made. */
  snapshot_nid: number;
}

/** Servers with joined members in a room, and how many (rows at 0 are deleted). */
export interface RoomJoinedServersTable {
  room_nid: number;
  server_name: string;
  joined_members: number;
  /** The events-stream position at which the server's first joined member joined (0: before migration 013). */
  joined_since: ColumnType<number, number | undefined, number>;
}

export interface RoomAliasesTable {
  alias: string;
  room_id: string;
  creator: string;
  created_ts: number;
}

export interface RoomsTables {
  rooms: RoomsTable;
  event_state_keys: EventStateKeysTable;
  events: EventsTable;
  event_relations: EventRelationsTable;
  state_snapshots: StateSnapshotsTable;
  state_snapshot_entries: StateSnapshotEntriesTable;
  room_memberships: RoomMembershipsTable;
  forward_extremities: ForwardExtremitiesTable;
  room_aliases: RoomAliasesTable;
  event_auth: EventAuthTable;
  event_edges: EventEdgesTable;
  backward_extremities: BackwardExtremitiesTable;
  current_state_deltas: CurrentStateDeltasTable;
  room_joined_servers: RoomJoinedServersTable;
}
