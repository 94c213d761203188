// End-to-end encryption keys and the device_lists stream (migration 005).

export interface DeviceListChangesTable {
  stream_position: number;
  user_id: string;
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

export interface DeviceKeyTables {
  device_list_changes: DeviceListChangesTable;
  device_keys: DeviceKeysTable;
  one_time_keys: OneTimeKeysTable;
  fallback_keys: FallbackKeysTable;
}
