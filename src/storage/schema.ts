// The whole database as Kysely sees it: one interface per area, in tables/.
// Booleans are stored as 0/1 integers so both backends read the same.

import type { AccountsTables } from './tables/accounts.js';
import type { AdminUsersTables } from './tables/admin-users.js';
import type { AdminRoomsTables } from './tables/admin-rooms.js';
import type { AppServiceTables } from './tables/appservice.js';
import type { DeviceKeyTables } from './tables/device-keys.js';
import type { ErasedUsersTables } from './tables/erased-users.js';
import type { PusherTables } from './tables/pushers.js';
import type { RoomsTables } from './tables/rooms.js';
import type { StreamsTables } from './tables/streams.js';
import type { UserDataTables } from './tables/user-data.js';
import type { FederationTransactionTables } from './tables/federation-transactions.js';
import type { MediaTables } from './tables/media.js';
import type { SearchTables } from './tables/search.js';

export type * from './tables/accounts.js';
export type * from './tables/admin-users.js';
export type * from './tables/admin-rooms.js';
export type * from './tables/appservice.js';
export type * from './tables/device-keys.js';
export type * from './tables/erased-users.js';
export type * from './tables/media.js';
export type * from './tables/pushers.js';
export type * from './tables/search.js';
export type * from './tables/rooms.js';
export type * from './tables/streams.js';
export type * from './tables/user-data.js';

/** Other servers' verify keys (migration 011), one row per (server_name, key_id). */
export interface ServerKeysTable {
  server_name: string;
  key_id: string;
  /** Unpadded base64 of the Ed25519 public key. */
  public_key: string;
  /** The response's valid_until_ts, capped at 7 days after it was fetched. */
  valid_until_ts: number;
  /** Set for a key from `old_verify_keys`: when it stopped being used. */
  expired_ts: number | null;
  fetched_at: number;
  /** The signed key response the key came from, with the origin's signatures only. */
  key_json: string;
}

export interface ServerKeysTables {
  server_keys: ServerKeysTable;
}

export interface Schema extends AccountsTables, StreamsTables, RoomsTables, UserDataTables, DeviceKeyTables, ErasedUsersTables, PusherTables, ServerKeysTables, FederationTransactionTables, AppServiceTables, MediaTables, AdminUsersTables, AdminRoomsTables, SearchTables {}
