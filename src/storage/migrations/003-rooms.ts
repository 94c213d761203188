// Rooms, events and room state. State is stored as deltas: a snapshot lists only what changed
// against its parent, and every so often a full snapshot bounds the chain a read must walk.

import { sql, type ColumnDefinitionBuilder, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import { serialType } from './column-types.js';
import type { HearthMigration } from './index.js';

export const rooms: HearthMigration = {
  name: '003-rooms',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    const serial = serialType(dialect);
    const serialKey = (c: ColumnDefinitionBuilder) =>
      dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey();
    // SQLite: tables keyed by their primary key alone are stored as that one b-tree, so a write
    // touches one page instead of a row page and an index page.
    const keyedTable = <T extends { modifyEnd(node: ReturnType<typeof sql>): T }>(t: T): T =>
      dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t;

    await db.schema
      .createTable('rooms')
      .addColumn('room_nid', serial, serialKey)
      .addColumn('room_id', 'text', (c) => c.notNull().unique())
      .addColumn('room_version', 'text', (c) => c.notNull())
      .addColumn('creator', 'text', (c) => c.notNull())
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .addColumn('is_public', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('state_snapshot_nid', 'bigint')
      .addColumn('name', 'text')
      .addColumn('topic', 'text')
      .addColumn('canonical_alias', 'text')
      .addColumn('avatar_url', 'text')
      .addColumn('join_rule', 'text')
      .addColumn('history_visibility', 'text')
      .addColumn('guest_access', 'text')
      .addColumn('room_type', 'text')
      .addColumn('joined_members', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('invited_members', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.createIndex('rooms_public').on('rooms').columns(['is_public', 'joined_members']).execute();

    await db.schema
      .createTable('event_state_keys')
      .addColumn('state_key_nid', serial, serialKey)
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('state_key', 'text', (c) => c.notNull())
      .addUniqueConstraint('event_state_keys_pair', ['event_type', 'state_key'])
      .execute();

    await db.schema
      .createTable('events')
      .addColumn('event_nid', serial, serialKey)
      .addColumn('event_id', 'text', (c) => c.notNull().unique())
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('state_key', 'text')
      .addColumn('sender', 'text', (c) => c.notNull())
      .addColumn('origin_server_ts', 'bigint', (c) => c.notNull())
      .addColumn('depth', 'bigint', (c) => c.notNull())
      .addColumn('stream_ordering', 'bigint', (c) => c.notNull().unique())
      .addColumn('json', 'text', (c) => c.notNull())
      .addColumn('unsigned_json', 'text')
      .addColumn('redacts', 'text')
      .addColumn('redacted_by', 'text')
      .addColumn('rejected', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('rejection_reason', 'text')
      .addColumn('state_before_nid', 'bigint')
      .addColumn('state_after_nid', 'bigint')
      .addColumn('txn_device_id', 'text')
      .addColumn('txn_id', 'text')
      .execute();
    // Pagination and sync: a room's events in stream order.
    await db.schema.createIndex('events_room_stream').on('events').columns(['room_nid', 'stream_ordering']).execute();
    // Idempotent sends: one event per (room, sender, device, txnId). Rows without a txnId hold
    // NULLs, which never collide.
    await db.schema
      .createIndex('events_txn')
      .on('events')
      .columns(['room_nid', 'sender', 'txn_device_id', 'txn_id'])
      .unique()
      .execute();
    // State events of a room by type and key (history visibility, a user's membership history).
    await db.schema
      .createIndex('events_room_state')
      .on('events')
      .columns(['room_nid', 'type', 'state_key', 'stream_ordering'])
      .where(sql.ref('state_key'), 'is not', null)
      .execute();
    // A user's membership changes across rooms (sync).
    await db.schema
      .createIndex('events_member_target')
      .on('events')
      .columns(['state_key', 'stream_ordering'])
      .where(sql.ref('type'), '=', 'm.room.member')
      .execute();
    await db.schema
      .createIndex('events_redacts')
      .on('events')
      .column('redacts')
      .where(sql.ref('redacts'), 'is not', null)
      .execute();

    await db.schema
      .createTable('state_snapshots')
      .addColumn('snapshot_nid', serial, serialKey)
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('parent_nid', 'bigint')
      .addColumn('chain_length', 'integer', (c) => c.notNull())
      .addColumn('chain', 'text', (c) => c.notNull())
      .execute();

    await keyedTable(
      db.schema
        .createTable('state_snapshot_entries')
        .addColumn('snapshot_nid', 'bigint', (c) => c.notNull())
        .addColumn('state_key_nid', 'bigint', (c) => c.notNull())
        .addColumn('event_nid', 'bigint')
        .addPrimaryKeyConstraint('state_snapshot_entries_pk', ['snapshot_nid', 'state_key_nid'])
    ).execute();

    await keyedTable(
      db.schema
        .createTable('room_memberships')
        .addColumn('room_nid', 'bigint', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('membership', 'text', (c) => c.notNull())
        .addColumn('event_nid', 'bigint', (c) => c.notNull())
        .addColumn('stream_ordering', 'bigint', (c) => c.notNull())
        .addColumn('forgotten', 'integer', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('room_memberships_pk', ['room_nid', 'user_id'])
    ).execute();
    await db.schema
      .createIndex('room_memberships_user')
      .on('room_memberships')
      .columns(['user_id', 'membership'])
      .execute();
    await db.schema
      .createIndex('room_memberships_room')
      .on('room_memberships')
      .columns(['room_nid', 'membership'])
      .execute();

    await keyedTable(
      db.schema
        .createTable('forward_extremities')
        .addColumn('room_nid', 'bigint', (c) => c.notNull())
        .addColumn('event_nid', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('forward_extremities_pk', ['room_nid', 'event_nid'])
    ).execute();

    await db.schema
      .createTable('room_aliases')
      .addColumn('alias', 'text', (c) => c.primaryKey())
      .addColumn('room_id', 'text', (c) => c.notNull())
      .addColumn('creator', 'text', (c) => c.notNull())
      .addColumn('created_ts', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('room_aliases_room').on('room_aliases').column('room_id').execute();
  },
};
