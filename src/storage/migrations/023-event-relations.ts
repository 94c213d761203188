// Event relations: one row per timeline event that relates to another (threads, edits, reactions,
// references), for GET /relations and /threads and the aggregations bundled with served events;
// `events.has_relations` marks the events something relates to, so that serving an event without
// relations reads nothing more. Relations of events stored before this migration are read from
// their JSON here.

import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';
import { relationOf } from '../../protocol/relations.js';
import type { JsonObject } from '../../protocol/json.js';
import type { HearthMigration } from './index.js';

const BATCH = 1_000;

export const eventRelations: HearthMigration = {
  name: '023-event-relations',
  async up(db: Kysely<unknown>, dialect: DialectName) {
    await db.schema
      .createTable('event_relations')
      .addColumn('event_nid', 'bigint', (c) => c.primaryKey())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('room_nid', 'bigint', (c) => c.notNull())
      .addColumn('relates_to', 'text', (c) => c.notNull())
      .addColumn('rel_type', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('sender', 'text', (c) => c.notNull())
      .addColumn('aggregation_key', 'text')
      .addColumn('stream_ordering', 'bigint', (c) => c.notNull())
      .addColumn('origin_server_ts', 'bigint', (c) => c.notNull())
      // On SQLite the key is the table, and every index holds it: a page of relations is read
      // from the target's index alone.
      .$call((t) => (dialect === 'sqlite' ? t.modifyEnd(sql`without rowid`) : t))
      .execute();
    // Relations count only in the room of the event they relate to.
    await db.schema.createIndex('event_relations_target').on('event_relations').columns(['relates_to', 'room_nid', 'rel_type', 'stream_ordering']).execute();
    await db.schema.createIndex('event_relations_room').on('event_relations').columns(['room_nid', 'rel_type', 'stream_ordering']).execute();
    // A user's reaction with a key, looked up before each new one (an event may have thousands).
    await db.schema.createIndex('event_relations_annotation').on('event_relations').columns(['relates_to', 'sender', 'aggregation_key']).execute();
    await db.schema.alterTable('events').addColumn('has_relations', 'integer').execute();

    // Relations already stored: timeline events whose JSON names m.relates_to, not redacted.
    const q = db as unknown as Kysely<{
      events: { event_nid: number; event_id: string; room_nid: number; type: string; sender: string; json: string; stream_ordering: number | null; status: string; redacted_by: string | null; origin_server_ts: number; has_relations: number | null };
      event_relations: Record<string, unknown>;
    }>;
    for (let after = 0; ; ) {
      const rows = await q
        .selectFrom('events')
        .select(['event_nid', 'event_id', 'room_nid', 'type', 'sender', 'json', 'stream_ordering', 'origin_server_ts'])
        .where('event_nid', '>', after)
        .where('status', '=', 'timeline')
        .where('redacted_by', 'is', null)
        .where('stream_ordering', 'is not', null)
        .where('json', 'like', '%m.relates_to%')
        .orderBy('event_nid')
        .limit(BATCH)
        .execute();
      if (rows.length === 0) break;
      after = Number(rows[rows.length - 1]!.event_nid);
      const relations = rows.flatMap((r) => {
        const content = (JSON.parse(r.json) as { content?: JsonObject }).content;
        const rel = content === undefined ? undefined : relationOf(content);
        if (rel === undefined) return [];
        return [{
          event_nid: r.event_nid,
          event_id: r.event_id,
          room_nid: r.room_nid,
          relates_to: rel.eventId,
          rel_type: rel.relType,
          type: r.type,
          sender: r.sender,
          aggregation_key: rel.key ?? null,
          stream_ordering: r.stream_ordering!,
          origin_server_ts: r.origin_server_ts,
        }];
      });
      if (relations.length === 0) continue;
      await q.insertInto('event_relations').values(relations).execute();
      const targets = [...new Set(relations.map((r) => r.relates_to))];
      await q.updateTable('events').set({ has_relations: 1 }).where('event_id', 'in', targets).execute();
    }
  },
};
