// Shared setup for the per-user data service tests: a migrated database on each backend, a real
// notifier, and helpers that check a change wakes (or does not wake) a waiting sync.

import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { Kysely } from 'kysely';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrations/index.js';
import type { Schema } from '../../src/storage/schema.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import type { TestDatabase } from '../support/databases.js';

export const SERVER = 'hs.test';

export interface DbHandle {
  db: Kysely<Schema>;
  dialect: 'sqlite' | 'postgres';
}

/** Registers before/after hooks that create, migrate and drop a database for the suite. */
export function useDatabase(create: () => Promise<TestDatabase>): DbHandle {
  const handle = {} as DbHandle;
  let target: TestDatabase;
  let database: Database<Schema>;
  before(async () => {
    target = await create();
    database = openDatabase<Schema>({ connectionString: target.connectionString, maxOpenConns: 8 });
    await migrateToLatest(database.db as Kysely<unknown>, database.dialect);
    handle.db = database.db;
    handle.dialect = database.dialect;
  });
  after(async () => {
    await database.close();
    // pg's pool.end() resolves before its sockets finish closing; dropping the database WITH
    // (FORCE) at that moment makes a closing client emit an unhandled error. Let them settle.
    if (database.dialect === 'postgres') await new Promise((r) => setTimeout(r, 100));
    await target.drop();
  });
  return handle;
}

/** Inserts a local account row (what registration would have written). */
export async function addUser(db: Kysely<Schema>, localpart: string, opts: { deactivated?: boolean } = {}): Promise<string> {
  const userId = `@${localpart}:${SERVER}`;
  await db
    .insertInto('users')
    // Only the columns this area relies on; the rest keep their defaults.
    .values({ user_id: userId, localpart, deactivated: opts.deactivated ? 1 : 0, created_ts: Date.now() } as never)
    .execute();
  return userId;
}

export async function addDevice(db: Kysely<Schema>, userId: string, deviceId: string): Promise<void> {
  await db
    .insertInto('devices')
    .values({ user_id: userId, device_id: deviceId, created_ts: Date.now() } as never)
    .execute();
}

/** Asserts that `action` wakes a sync of `userId` (in `roomIds`) waiting from now. */
export async function assertWakes(
  notifier: InProcessBus,
  who: { userId: string; roomIds?: string[] },
  action: () => Promise<unknown>,
): Promise<void> {
  const waiting = notifier.wait({ userId: who.userId, roomIds: who.roomIds ?? [], since: notifier.current(), timeoutMs: 3000 });
  await action();
  assert.equal(await waiting, true, `a sync of ${who.userId} was not woken`);
}

/** Asserts that `action` does not wake a sync of `userId` (in `roomIds`). */
export async function assertDoesNotWake(
  notifier: InProcessBus,
  who: { userId: string; roomIds?: string[] },
  action: () => Promise<unknown>,
): Promise<void> {
  const since = notifier.current();
  await action();
  const woken = await notifier.wait({ userId: who.userId, roomIds: who.roomIds ?? [], since, timeoutMs: 30 });
  assert.equal(woken, false, `a sync of ${who.userId} was woken`);
}

/** Room membership as the room server would answer it, held in memory for the tests. */
export class FakeRooms {
  private readonly members = new Map<string, Set<string>>();
  private readonly publicRooms = new Set<string>();
  /** roomId → eventId → order */
  private readonly events = new Map<string, Map<string, number>>();

  join(roomId: string, ...userIds: string[]): this {
    let set = this.members.get(roomId);
    if (!set) this.members.set(roomId, (set = new Set()));
    for (const u of userIds) set.add(u);
    return this;
  }

  leave(roomId: string, userId: string): this {
    this.members.get(roomId)?.delete(userId);
    return this;
  }

  makePublic(roomId: string): this {
    this.publicRooms.add(roomId);
    return this;
  }

  addEvent(roomId: string, eventId: string, order: number): this {
    let m = this.events.get(roomId);
    if (!m) this.events.set(roomId, (m = new Map()));
    m.set(eventId, order);
    return this;
  }

  readonly isJoined = async (userId: string, roomId: string) => this.members.get(roomId)?.has(userId) ?? false;
  readonly eventOrder = async (roomId: string, eventId: string) => this.events.get(roomId)?.get(eventId);
  readonly usersSharingRooms = async (userId: string) => {
    const out = new Set<string>();
    for (const set of this.members.values()) if (set.has(userId)) for (const u of set) out.add(u);
    return out;
  };
  readonly usersInPublicRooms = async () => {
    const out = new Set<string>();
    for (const r of this.publicRooms) for (const u of this.members.get(r) ?? []) out.add(u);
    return out;
  };
}
