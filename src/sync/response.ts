// The shape of a /sync response (client-server API, GET /sync). Every section is present, empty
// when nothing changed, so clients never meet a missing key.

import type { JsonObject } from '../protocol/json.js';

export interface EventBatch {
  events: JsonObject[];
}

export interface Timeline extends EventBatch {
  limited: boolean;
  prev_batch: string;
}

export interface RoomSummaryFields {
  'm.heroes'?: string[];
  'm.joined_member_count'?: number;
  'm.invited_member_count'?: number;
}

export interface UnreadNotificationCounts {
  notification_count: number;
  highlight_count: number;
}

export interface JoinedRoomSection {
  summary: RoomSummaryFields;
  state: EventBatch;
  timeline: Timeline;
  ephemeral: EventBatch;
  account_data: EventBatch;
  unread_notifications: UnreadNotificationCounts;
  /** With the timeline filter's `unread_thread_notifications`: per thread root, threads with notifications. */
  unread_thread_notifications?: Record<string, UnreadNotificationCounts>;
}

export interface LeftRoomSection {
  state: EventBatch;
  timeline: Timeline;
  account_data: EventBatch;
}

export interface InvitedRoomSection {
  invite_state: EventBatch;
}

export interface KnockedRoomSection {
  knock_state: EventBatch;
}

export interface SyncResponse {
  next_batch: string;
  rooms: {
    join: Record<string, JoinedRoomSection>;
    invite: Record<string, InvitedRoomSection>;
    leave: Record<string, LeftRoomSection>;
    knock: Record<string, KnockedRoomSection>;
  };
  presence: EventBatch;
  account_data: EventBatch;
  to_device: EventBatch;
  device_lists: { changed: string[]; left: string[] };
  device_one_time_keys_count: Record<string, number>;
  device_unused_fallback_key_types: string[];
}

export function emptyResponse(nextBatch: string): SyncResponse {
  return {
    next_batch: nextBatch,
    rooms: { join: {}, invite: {}, leave: {}, knock: {} },
    presence: { events: [] },
    account_data: { events: [] },
    to_device: { events: [] },
    device_lists: { changed: [], left: [] },
    device_one_time_keys_count: {},
    device_unused_fallback_key_types: [],
  };
}

/** Whether the response carries anything for the client (else a long-poll keeps waiting). */
export function hasContent(r: SyncResponse): boolean {
  const { rooms } = r;
  return (
    Object.keys(rooms.join).length > 0 ||
    Object.keys(rooms.invite).length > 0 ||
    Object.keys(rooms.leave).length > 0 ||
    Object.keys(rooms.knock).length > 0 ||
    r.presence.events.length > 0 ||
    r.account_data.events.length > 0 ||
    r.to_device.events.length > 0 ||
    r.device_lists.changed.length > 0 ||
    r.device_lists.left.length > 0
  );
}
