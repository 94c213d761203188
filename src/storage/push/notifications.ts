// Push notifications (migration 022): one row per event and local user it notifies, written by the
// push-rule pass (push/actions.ts), read by GET /notifications and by the pushers (push/sender.ts).

import type { Kysely, Selectable } from 'kysely';
import type BetterSqlite3 from 'better-sqlite3';
import { sqliteHandleOf } from '../database.js';
import type { PusherRow } from '../accounts/pushers.js';
import type { PushNotificationsTable, Schema } from '../schema.js';

export type NotificationRow = Selectable<PushNotificationsTable>;

const ROWS_PER_STATEMENT = 200;

function numeric(row: NotificationRow): NotificationRow {
  return { ...row, stream_ordering: Number(row.stream_ordering), event_nid: Number(row.event_nid), highlight: Number(row.highlight), received_ts: Number(row.received_ts) };
}

const SQLITE_ROWS_PER_TRANSACTION = 200;
const INSERT_SQL =
  'INSERT INTO push_notifications (user_id, stream_ordering, room_id, event_nid, actions_json, highlight, received_ts, thread_id) ' +
  'VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, stream_ordering) DO NOTHING';
/** Per SQLite handle, the insert prepared once (on first use: the table is made by a migration). */
const sqliteInserts = new WeakMap<object, BetterSqlite3.Statement>();

/**
 * Stores the rows; one already stored (the pass saw its batch again) is left as it is. The push-rule
 * pass writes thousands of rows a second: on SQLite they go through one prepared statement in one
 * transaction, on the connection Kysely lends (so nothing else runs on it meanwhile).
 */
export async function insertNotifications(db: Kysely<Schema>, rows: readonly NotificationRow[]): Promise<void> {
  if (rows.length === 0) return;
  const handle = sqliteHandleOf(db);
  if (handle !== undefined) {
    let insert = sqliteInserts.get(handle);
    if (insert === undefined) sqliteInserts.set(handle, (insert = handle.prepare(INSERT_SQL)));
    const statement = insert;
    const write = handle.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const r = rows[i]!;
        statement.run(r.user_id, r.stream_ordering, r.room_id, r.event_nid, r.actions_json, r.highlight, r.received_ts, r.thread_id);
      }
    });
    // In slices, each its own transaction, so that the send path is never held up long.
    for (let i = 0; i < rows.length; i += SQLITE_ROWS_PER_TRANSACTION) {
      await db.connection().execute(async () => write(i, Math.min(rows.length, i + SQLITE_ROWS_PER_TRANSACTION)));
    }
    return;
  }
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    await db
      .insertInto('push_notifications')
      .values(rows.slice(i, i + ROWS_PER_STATEMENT))
      .onConflict((oc) => oc.columns(['user_id', 'stream_ordering']).doNothing())
      .execute();
  }
}

/** The user's notifications after `after`, oldest first (what a pusher sends next). */
export async function notificationsAfter(db: Kysely<Schema>, userId: string, after: number, limit: number): Promise<NotificationRow[]> {
  const rows = await db
    .selectFrom('push_notifications')
    .selectAll()
    .where('user_id', '=', userId)
    .where('stream_ordering', '>', after)
    .orderBy('stream_ordering')
    .limit(limit)
    .execute();
  return rows.map(numeric);
}

/** The user's notifications before `before` (all when undefined), newest first (GET /notifications). */
export async function notificationsBefore(
  db: Kysely<Schema>,
  userId: string,
  options: { readonly before: number | undefined; readonly limit: number; readonly onlyHighlight: boolean },
): Promise<NotificationRow[]> {
  let q = db.selectFrom('push_notifications').selectAll().where('user_id', '=', userId);
  if (options.before !== undefined) q = q.where('stream_ordering', '<', options.before);
  if (options.onlyHighlight) q = q.where('highlight', '=', 1);
  const rows = await q.orderBy('stream_ordering', 'desc').limit(options.limit).execute();
  return rows.map(numeric);
}

/** Per room and thread the user was ever notified in: the position of the latest notification. */
export async function latestNotificationPerThread(db: Kysely<Schema>, userId: string): Promise<Map<string, Map<string, number>>> {
  const rows = await db
    .selectFrom('push_notifications')
    .select(['room_id', 'thread_id', (eb) => eb.fn.max('stream_ordering').as('position')])
    .where('user_id', '=', userId)
    .groupBy(['room_id', 'thread_id'])
    .execute();
  const out = new Map<string, Map<string, number>>();
  for (const r of rows) {
    let threads = out.get(r.room_id);
    if (threads === undefined) out.set(r.room_id, (threads = new Map()));
    threads.set(r.thread_id, Number(r.position));
  }
  return out;
}

/** Every pusher, for the sender's start. */
export async function allPushers(db: Kysely<Schema>): Promise<PusherRow[]> {
  return (await db.selectFrom('pushers').selectAll().execute()).map((r) => ({ ...r, delivered_up_to: Number(r.delivered_up_to), failing_since: r.failing_since === null ? null : Number(r.failing_since) }));
}

/** Pushers that were never started begin after `position` (what is notified from now on). */
export async function startNewPushers(db: Kysely<Schema>, position: number): Promise<void> {
  await db.updateTable('pushers').set({ delivered_up_to: position }).where('delivered_up_to', '<', 0).execute();
}

/** Records how far a pusher was sent, and whether its gateway is failing. */
export async function savePusherProgress(
  db: Kysely<Schema>,
  key: { readonly userId: string; readonly appId: string; readonly pushkey: string },
  deliveredUpTo: number,
  failingSince: number | null,
): Promise<void> {
  await db
    .updateTable('pushers')
    .set({ delivered_up_to: deliveredUpTo, failing_since: failingSince })
    .where('user_id', '=', key.userId)
    .where('app_id', '=', key.appId)
    .where('pushkey', '=', key.pushkey)
    .execute();
}

/** Deletes the notifications received before `before`. */
export async function pruneNotifications(db: Kysely<Schema>, before: number): Promise<void> {
  await db.deleteFrom('push_notifications').where('received_ts', '<', before).execute();
}

/**
 * A stretch of a room's notifications to count: (after, upTo], of one thread only (`thread`), or of
 * every thread but some (`except`: those counted from their own receipts).
 */
export interface NotificationRange {
  readonly roomId: string;
  readonly after: number;
  readonly upTo: number;
  readonly thread?: string;
  readonly except?: readonly string[];
}

/** Counts per room, per thread ('main' for the main timeline). */
export type ThreadCounts = Map<string, Map<string, { notifications: number; highlights: number }>>;

/** Parameters per statement at most (each range takes three, and one per thread it names). */
const PARAMETERS_PER_STATEMENT = 900;

/** Per room and thread, the user's notifications and highlights in the ranges; one statement per few hundred ranges. */
export async function countNotifications(db: Kysely<Schema>, userId: string, ranges: readonly NotificationRange[]): Promise<ThreadCounts> {
  const out: ThreadCounts = new Map();
  for (let i = 0; i < ranges.length; ) {
    const chunk: NotificationRange[] = [];
    for (let parameters = 0; i < ranges.length && (chunk.length === 0 || parameters < PARAMETERS_PER_STATEMENT); i++) {
      const r = ranges[i]!;
      chunk.push(r);
      parameters += 3 + (r.thread !== undefined ? 1 : 0) + (r.except?.length ?? 0);
    }
    const rows = await db
      .selectFrom('push_notifications')
      .select(['room_id', 'thread_id', (eb) => eb.fn.countAll<number>().as('n'), (eb) => eb.fn.sum<number>('highlight').as('h')])
      .where('user_id', '=', userId)
      .where((eb) =>
        eb.or(
          chunk.map((r) => {
            const conditions = [eb('room_id', '=', r.roomId), eb('stream_ordering', '>', r.after), eb('stream_ordering', '<=', r.upTo)];
            if (r.thread !== undefined) conditions.push(eb('thread_id', '=', r.thread));
            if (r.except !== undefined && r.except.length > 0) conditions.push(eb('thread_id', 'not in', r.except));
            return eb.and(conditions);
          }),
        ),
      )
      .groupBy(['room_id', 'thread_id'])
      .execute();
    for (const r of rows) {
      let threads = out.get(r.room_id);
      if (threads === undefined) out.set(r.room_id, (threads = new Map()));
      const known = threads.get(r.thread_id);
      threads.set(r.thread_id, { notifications: Number(r.n) + (known?.notifications ?? 0), highlights: Number(r.h ?? 0) + (known?.highlights ?? 0) });
    }
  }
  return out;
}
