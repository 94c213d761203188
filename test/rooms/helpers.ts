// A room service over a real database for tests: fresh database, migrations, a signing key, a
// notifier, and profiles from an in-memory map. Also the hooks that give a suite one, and the check
// for a refusal.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import { currentStreamPositions } from '../../src/streams/positions.js';
import type { Schema } from '../../src/storage/schema.js';
import { generateSigningKey, type SigningKey } from '../../src/protocol/signing.js';
import { HearthError } from '../../src/protocol/errors.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { RoomService, type Actor, type MemberProfile } from '../../src/rooms/service.js';
import type { KeyRing } from '../../src/rooms/input/key-ring.js';
import type { RemoteEvents } from '../../src/rooms/input/remote-events.js';
import type { TestDatabase } from '../support/databases.js';
import { forwardTo } from '../support/forward.js';

export const SERVER = 'hs.test';

export interface RoomsHarness {
  readonly database: Database<Schema>;
  readonly rooms: RoomService;
  readonly key: SigningKey;
  readonly notifier: InProcessBus;
  readonly profiles: Map<string, MemberProfile>;
  close(): Promise<void>;
}

export interface RoomsHarnessOptions {
  defaultRoomVersion?: string;
  now?: () => number;
  /** Other servers' keys and events, for events received from them. */
  keyRing?: KeyRing;
  remoteEvents?: RemoteEvents;
  /** Parsed state events per room head beyond the pinned ones (small: most state loads when read). */
  maxLoadedState?: number;
}

export async function roomsHarness(target: TestDatabase, options: RoomsHarnessOptions = {}): Promise<RoomsHarness> {
  const database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
  await migrateToLatest(database.db as never, database.dialect);
  const key = generateSigningKey();
  // As the server starts: from the positions the database holds (a second service on a used
  // database must not take its events stream to start at 0).
  const notifier = new InProcessBus(await currentStreamPositions(database.db));
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
    ...(options.keyRing !== undefined ? { keyRing: options.keyRing } : {}),
    ...(options.remoteEvents !== undefined ? { remoteEvents: options.remoteEvents } : {}),
    ...(options.maxLoadedState !== undefined ? { maxLoadedState: options.maxLoadedState } : {}),
  });
  return { database, rooms, key, notifier, profiles, close: () => database.close() };
}

/**
 * A second room service over the harness's database, as after a restart: nothing of the database
 * in memory. `deps` overrides its options.
 */
export async function restartedRooms(
  h: Pick<RoomsHarness, 'database' | 'key'>,
  deps: Partial<ConstructorParameters<typeof RoomService>[0]> = {},
): Promise<RoomService> {
  return new RoomService({
    db: h.database.db,
    dialect: h.database.dialect,
    serverName: SERVER,
    signingKey: h.key,
    notifier: new InProcessBus(await currentStreamPositions(h.database.db)),
    ...deps,
  });
}

export function user(localpart: string, deviceId = 'DEV'): Actor {
  return { userId: `@${localpart}:${SERVER}`, deviceId, isGuest: false, isAdmin: false };
}

/** A suite's harness, with the database it runs on; closing it is the suite's `after` hook's job. */
export interface SuiteRoomsHarness extends Omit<RoomsHarness, 'close'> {
  readonly target: TestDatabase;
}

/**
 * For a suite on one storage backend: registers hooks that make a harness on a fresh database before
 * the suite's tests and close and drop it after them, and returns an object standing for it. Hooks
 * the suite registers later run after these, so its own `before` can already use the harness.
 */
export function useRoomsHarness(
  backend: { create(): Promise<TestDatabase> },
  options: RoomsHarnessOptions = {},
): SuiteRoomsHarness {
  let target: TestDatabase | undefined;
  let harness: (RoomsHarness & SuiteRoomsHarness) | undefined;
  before(async () => {
    target = await backend.create();
    harness = { ...(await roomsHarness(target, options)), target };
  });
  after(async () => {
    await harness?.close();
    await target?.drop();
  });
  return forwardTo(() => harness, 'the rooms harness');
}

/** Asserts that `p` fails with a HearthError of this status and errcode (and message); returns it. */
export async function rejectsWith(p: Promise<unknown>, status: number, errcode: string, message?: RegExp): Promise<HearthError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof HearthError, `expected HearthError, got ${String(err)}`);
    assert.equal(err.errcode, errcode, err.message);
    assert.equal(err.status, status);
    if (message !== undefined) assert.match(err.message, message);
    return err;
  }
  assert.fail(`expected ${status} ${errcode}`);
}
