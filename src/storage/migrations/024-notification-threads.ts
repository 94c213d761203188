// The thread of each push notification (client-server API, "Threaded read receipts"): unread
// counts are partitioned per thread, the main timeline being the thread `main`. An event is in a
// thread when it has an m.thread relation to the root, or relates (within 3 hops) to an event that
// has; rows written before this migration are given theirs from event_relations here.

import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import type { HearthMigration } from './index.js';

export const notificationThreads: HearthMigration = {
  name: '024-notification-threads',
  async up(db: Kysely<unknown>, _dialect: DialectName) {
    await db.schema.alterTable('push_notifications').addColumn('thread_id', 'text', (c) => c.notNull().defaultTo('main')).execute();
    // The event's own m.thread relation, else that of the event it relates to, up to 3 hops.
    const thread = sql`(SELECT COALESCE(t0.relates_to, t1.relates_to, t2.relates_to, t3.relates_to)
        FROM event_relations r0
        LEFT JOIN event_relations t0 ON t0.event_nid = r0.event_nid AND t0.rel_type = 'm.thread'
        LEFT JOIN events p1 ON p1.event_id = r0.relates_to AND r0.rel_type <> 'm.thread'
        LEFT JOIN event_relations t1 ON t1.event_nid = p1.event_nid AND t1.rel_type = 'm.thread'
        LEFT JOIN event_relations r1 ON r1.event_nid = p1.event_nid AND r1.rel_type <> 'm.thread'
        LEFT JOIN events p2 ON p2.event_id = r1.relates_to
        LEFT JOIN event_relations t2 ON t2.event_nid = p2.event_nid AND t2.rel_type = 'm.thread'
        LEFT JOIN event_relations r2 ON r2.event_nid = p2.event_nid AND r2.rel_type <> 'm.thread'
        LEFT JOIN events p3 ON p3.event_id = r2.relates_to
        LEFT JOIN event_relations t3 ON t3.event_nid = p3.event_nid AND t3.rel_type = 'm.thread'
        WHERE r0.event_nid = push_notifications.event_nid)`;
    // Only notifications of events that relate to something can be in a thread.
    await sql`UPDATE push_notifications SET thread_id = COALESCE(${thread}, 'main')
      WHERE event_nid IN (SELECT event_nid FROM event_relations)`.execute(db);
  },
};
