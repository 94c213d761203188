// Versioned migrations, applied in order at start. A migration is written once for both backends;
// `dialect` covers the few places where SQL differs (auto-increment ids).

import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DialectName } from '../database.js';
import { accounts } from './001-accounts.js';
import { streams } from './002-streams.js';
import { rooms } from './003-rooms.js';
import { userData } from './004-user-data.js';
import { deviceLists } from './005-device-lists.js';
import { crossSigningBackup } from './006-cross-signing-backup.js';
import { pushersOpenid } from './007-pushers-openid.js';
import { erasedUsers } from './008-erased-users.js';
import { eventGraph } from './009-event-graph.js';
import { streamConsumers } from './010-stream-consumers.js';
import { serverKeys } from './011-server-keys.js';
import { inboundTransactions } from './012-inbound-transactions.js';
import { joinedSince } from './013-joined-since.js';
import { eduQueues } from './014-edu-queues.js';
import { remoteDeviceLists } from './015-remote-device-lists.js';
import { appserviceQueues } from './016-appservice-queues.js';
import { appserviceEphemeral } from './017-appservice-ephemeral-directory.js';
import { media } from './018-media.js';
import { search } from './019-search.js';
import { adminUsers } from './020-admin-users.js';
import { adminRooms } from './021-admin-rooms.js';
import { pushNotifications } from './022-push-notifications.js';
import { eventRelations } from './023-event-relations.js';
import { notificationThreads } from './024-notification-threads.js';
import { searchBackfill } from './025-search-backfill.js';

export interface HearthMigration {
  readonly name: string;
  up(db: Kysely<unknown>, dialect: DialectName): Promise<void>;
}

export const migrations: readonly HearthMigration[] = [accounts, streams, rooms, userData, deviceLists, crossSigningBackup, pushersOpenid, erasedUsers, eventGraph, streamConsumers, serverKeys, inboundTransactions, joinedSince, eduQueues, remoteDeviceLists, appserviceQueues, appserviceEphemeral, media, search, adminUsers, adminRooms, pushNotifications, eventRelations, notificationThreads, searchBackfill];

const MIGRATION_TABLE = 'hearth_migrations';

/** Applies every migration not yet applied; throws with the failing migration's name. */
export function migrateToLatest(db: Kysely<unknown>, dialect: DialectName): Promise<string[]> {
  return migrateTo(db, dialect, undefined);
}

/**
 * Applies the migrations not yet applied up to and including `target` (every one when undefined).
 * Upgrade tests use it to write a database with an earlier schema.
 */
export async function migrateTo(db: Kysely<unknown>, dialect: DialectName, target: string | undefined): Promise<string[]> {
  if (target !== undefined && !migrations.some((m) => m.name === target)) throw new Error(`no migration named ${target}`);
  const provider: MigrationProvider = {
    async getMigrations() {
      const out: Record<string, Migration> = {};
      for (const m of migrations) out[m.name] = { up: (k) => m.up(k, dialect) };
      return out;
    },
  };
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: `${MIGRATION_TABLE}_lock`,
    // Names are ASCII and numbered: a plain comparison. (The default, localeCompare, loads ICU's
    // collation data: some 3 MB of resident memory for as long as the server runs.)
    nameComparator: (a, b) => (a < b ? -1 : a > b ? 1 : 0),
  });
  const { error, results } = target === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${String(error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
