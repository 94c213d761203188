// Per-user data: profiles, account data, filters, receipts, to-device messages, presence
// (migration 004). JSON values are stored as text.

import type { Generated } from 'kysely';

export interface ProfilesTable {
  user_id: string;
  displayname: string | null;
  avatar_url: string | null;
  /** Lower-cased localpart and display name, what the user directory searches. */
  search_key: string;
}

export interface AccountDataTable {
  user_id: string;
  /** '' for global account data. */
  room_id: string;
  type: string;
  content: string;
  stream_position: number;
}

export interface FiltersTable {
  filter_id: Generated<number>;
  user_id: string;
  /** SHA-256 of the filter's canonical JSON: uploading the same filter again reuses its id. */
  filter_hash: string;
  filter_json: string;
}

export interface ReceiptsTable {
  room_id: string;
  receipt_type: string;
  user_id: string;
  /** '' for an unthreaded receipt. */
  thread_id: string;
  event_id: string;
  /** The event's place in the room's order when known, so a receipt never moves backwards. */
  event_order: number | null;
  ts: number;
  stream_position: number;
}

export interface ToDeviceMessagesTable {
  message_id: Generated<number>;
  user_id: string;
  device_id: string;
  stream_position: number;
  sender: string;
  type: string;
  content: string;
}

export interface ToDeviceTxnsTable {
  user_id: string;
  /** '' when the sender's token has no device. */
  device_id: string;
  txn_id: string;
  created_ts: number;
}

export interface PresenceTable {
  user_id: string;
  state: string;
  status_msg: string | null;
  last_active_ts: number;
  stream_position: number;
}

export interface UserDataTables {
  profiles: ProfilesTable;
  account_data: AccountDataTable;
  filters: FiltersTable;
  receipts: ReceiptsTable;
  to_device_messages: ToDeviceMessagesTable;
  to_device_txns: ToDeviceTxnsTable;
  presence: PresenceTable;
}
