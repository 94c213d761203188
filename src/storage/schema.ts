// Table types as Kysely sees them. Booleans are stored as 0/1 integers so both backends read the same.

import type { Generated } from 'kysely';

export interface UsersTable {
  user_id: string;
  localpart: string;
  password_hash: string | null;
  is_admin: number;
  is_guest: number;
  deactivated: number;
  appservice_id: string | null;
  created_ts: number;
}

export interface DevicesTable {
  user_id: string;
  device_id: string;
  display_name: string | null;
  created_ts: number;
  last_seen_ts: number | null;
  last_seen_ip: string | null;
}

export interface AccessTokensTable {
  /** SHA-256 of the token: a copy of the database does not hand out sessions. */
  token_hash: string;
  token_id: Generated<number>;
  user_id: string;
  device_id: string;
  created_ts: number;
  valid_until_ts: number | null;
}

export interface StreamPositionsTable {
  stream: string;
  position: number;
}

export interface Schema {
  stream_positions: StreamPositionsTable;
  users: UsersTable;
  devices: DevicesTable;
  access_tokens: AccessTokensTable;
}
