// End-to-end encryption keys and the device_lists stream (migration 005), cross-signing keys and
// signatures, and server-side key backups (migration 006); other servers' users' device lists
// (migration 015).

export interface DeviceListChangesTable {
  stream_position: number;
  user_id: string;
  /** Null: a change for everyone sharing a room with `user_id`; else only this user hears of it. */
  only_for: string | null;
}

export interface DeviceKeysTable {
  user_id: string;
  device_id: string;
  /** The device keys object as uploaded (signed by the device). */
  key_json: string;
}

export interface OneTimeKeysTable {
  user_id: string;
  device_id: string;
  algorithm: string;
  key_id: string;
  key_json: string;
}

export interface FallbackKeysTable {
  user_id: string;
  device_id: string;
  algorithm: string;
  key_id: string;
  key_json: string;
  /** 1 once claimed (it stays claimable until replaced). */
  used: number;
}

export interface CrossSigningKeysTable {
  user_id: string;
  /** 'master', 'self_signing' or 'user_signing'. */
  key_type: string;
  /** The unpadded base64 Ed25519 public key (the key ID is `ed25519:<public_key>`). */
  public_key: string;
  /** The key object as uploaded, with the signatures it was uploaded with. */
  key_json: string;
}

export interface CrossSigningSignaturesTable {
  signer_user_id: string;
  /** `ed25519:<device ID or public key>` of the signer's key. */
  signing_key_id: string;
  target_user_id: string;
  /** A device ID, or the public key of the target user's master key. */
  target_key_id: string;
  signature: string;
}

export interface BackupVersionsTable {
  user_id: string;
  version: number;
  algorithm: string;
  /** JSON object, as the client gave it. */
  auth_data: string;
  /** Bumped whenever the version's keys change. */
  etag: number;
  /** 1 once deleted (its number is not given out again). */
  deleted: number;
}

export interface BackupKeysTable {
  user_id: string;
  version: number;
  room_id: string;
  session_id: string;
  first_message_index: number;
  forwarded_count: number;
  is_verified: number;
  /** JSON object, opaque to the server. */
  session_data: string;
}

/** Another server's user whose device list is kept (sharing a room with one of ours). */
export interface RemoteDeviceListsTable {
  user_id: string;
  /** The last `stream_id` of the user's server applied: from /user/devices or an m.device_list_update. */
  stream_id: number;
  /** 1 when a change may have been missed: the copy is not used until fetched again. */
  stale: number;
  /**
   * Since when (events-stream position) the user had shared a room with ours when the list was
   * fetched: a later one now means a break, when their server told us nothing.
   */
  shared_since: number;
  /** JSON cross-signing keys as their server gave them, or null. */
  master_key: string | null;
  self_signing_key: string | null;
  updated_ts: number;
}

export interface RemoteDevicesTable {
  user_id: string;
  device_id: string;
  /** The device keys object, checked to name this user and device; null: the device has none. */
  key_json: string | null;
  display_name: string | null;
}

export interface DeviceKeyTables {
  device_list_changes: DeviceListChangesTable;
  device_keys: DeviceKeysTable;
  one_time_keys: OneTimeKeysTable;
  fallback_keys: FallbackKeysTable;
  cross_signing_keys: CrossSigningKeysTable;
  cross_signing_signatures: CrossSigningSignaturesTable;
  backup_versions: BackupVersionsTable;
  backup_keys: BackupKeysTable;
  remote_device_lists: RemoteDeviceListsTable;
  remote_devices: RemoteDevicesTable;
}
