// The admin API's rooms (migration 021): reported events, blocked rooms, background deletions.

import type { Generated } from 'kysely';

export interface EventReportsTable {
  id: Generated<number>;
  received_ts: number;
  room_id: string;
  event_id: string;
  /** Who reported the event. */
  user_id: string;
  reason: string | null;
  score: number | null;
}

/** Rooms nobody here may join or be invited to. */
export interface BlockedRoomsTable {
  room_id: string;
  /** The admin who blocked it. */
  user_id: string;
  created_ts: number;
}

export type RoomDeleteStatus = 'shutting_down' | 'purging' | 'complete' | 'failed';

/** A room deletion run in the background (DELETE /v2/rooms/{roomId}). */
export interface RoomDeleteJobsTable {
  delete_id: string;
  room_id: string;
  status: RoomDeleteStatus;
  error: string | null;
  /** The shutdown's outcome as JSON (kicked users, aliases, new room) once known. */
  result_json: string | null;
  created_ts: number;
}

export interface AdminRoomsTables {
  event_reports: EventReportsTable;
  blocked_rooms: BlockedRoomsTable;
  room_delete_jobs: RoomDeleteJobsTable;
}
