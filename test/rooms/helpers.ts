// A room service over a real database for tests: fresh database, migrations, a signing key, a
// notifier, and profiles from an in-memory map.

import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { currentStreamPositions } from '../../src/storage/streams.js';
import type { Schema } from '../../src/storage/schema.js';
import { generateSigningKey, type SigningKey } from '../../src/protocol/signing.js';
import { Notifier } from '../../src/sync/notifier.js';
import { RoomService, type Actor, type MemberProfile } from '../../src/rooms/service.js';
import type { TestDatabase } from '../support/databases.js';

export const SERVER = 'hs.test';

export interface RoomsHarness {
  readonly database: Database<Schema>;
  readonly rooms: RoomService;
  readonly key: SigningKey;
  readonly notifier: Notifier;
  readonly profiles: Map<string, MemberProfile>;
  close(): Promise<void>;
}

export async function roomsHarness(
  target: TestDatabase,
  options: { defaultRoomVersion?: string; now?: () => number } = {},
): Promise<RoomsHarness> {
  const database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
  await migrateToLatest(database.db as never, database.dialect);
  const key = generateSigningKey();
  // As the server starts: from the positions the database holds (a second service on a used
  // database must not take its events stream to start at 0).
  const notifier = new Notifier(await currentStreamPositions(database.db));
  const profiles = new Map<string, MemberProfile>();
  const rooms = new RoomService({
    db: database.db,
    dialect: database.dialect,
    serverName: SERVER,
    signingKey: key,
    notifier,
    profiles: { profile: async (u) => profiles.get(u) },
    ...(options.defaultRoomVersion !== undefined ? { defaultRoomVersion: options.defaultRoomVersion } : {}),
    ...(options.now !== undefined ? { now: options.now } : {}),
  });
  return { database, rooms, key, notifier, profiles, close: () => database.close() };
}

export function user(localpart: string, deviceId = 'DEV'): Actor {
  return { userId: `@${localpart}:${SERVER}`, deviceId, isGuest: false, isAdmin: false };
}
