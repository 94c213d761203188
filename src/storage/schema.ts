// The whole database as Kysely sees it: one interface per area, in tables/.
// Booleans are stored as 0/1 integers so both backends read the same.

import type { AccountsTables } from './tables/accounts.js';
import type { DeviceKeyTables } from './tables/device-keys.js';
import type { ErasedUsersTables } from './tables/erased-users.js';
import type { PusherTables } from './tables/pushers.js';
import type { RoomsTables } from './tables/rooms.js';
import type { StreamsTables } from './tables/streams.js';
import type { UserDataTables } from './tables/user-data.js';

export type * from './tables/accounts.js';
export type * from './tables/device-keys.js';
export type * from './tables/erased-users.js';
export type * from './tables/pushers.js';
export type * from './tables/rooms.js';
export type * from './tables/streams.js';
export type * from './tables/user-data.js';

export interface Schema extends AccountsTables, StreamsTables, RoomsTables, UserDataTables, DeviceKeyTables, ErasedUsersTables, PusherTables {}
