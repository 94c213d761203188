// Allocating stream positions. The allocation happens inside the writer's transaction and locks
// the stream's row until commit, so positions become visible in the order they were handed out:
// a reader that sees position N has also seen every position below it.

import { sql, type Kysely } from 'kysely';
import type { Schema } from './schema.js';

/** The persistent streams. (Typing lives in memory only and has its own counter.) */
export const PERSISTENT_STREAMS = [
  'events',
  'receipts',
  'presence',
  'account_data',
  'to_device',
  'device_lists',
] as const;
export type PersistentStream = (typeof PERSISTENT_STREAMS)[number];

/** The next position of `stream` (1 for the first), allocated within the caller's transaction. */
export async function allocateStreamPosition(db: Kysely<Schema>, stream: PersistentStream): Promise<number> {
  const row = await db
    .insertInto('stream_positions')
    .values({ stream, position: 1 })
    .onConflict((oc) =>
      oc.column('stream').doUpdateSet({ position: sql<number>`stream_positions.position + 1` }),
    )
    .returning('position')
    .executeTakeFirstOrThrow();
  return Number(row.position);
}

/** The latest allocated position of every persistent stream (0 for a stream never written). */
export async function currentStreamPositions(db: Kysely<Schema>): Promise<Record<PersistentStream, number>> {
  const rows = await db.selectFrom('stream_positions').select(['stream', 'position']).execute();
  const out = Object.fromEntries(PERSISTENT_STREAMS.map((s) => [s, 0])) as Record<PersistentStream, number>;
  for (const r of rows) if ((PERSISTENT_STREAMS as readonly string[]).includes(r.stream)) out[r.stream as PersistentStream] = Number(r.position);
  return out;
}

export interface ConsumerPosition {
  readonly stream: string;
  readonly position: number;
}

/** The consumer's stored position; a consumer without one is recorded at `initial` first. */
export async function claimConsumerPosition(
  db: Kysely<Schema>,
  name: string,
  stream: string,
  initial: number,
  now: number,
): Promise<ConsumerPosition> {
  await db
    .insertInto('stream_consumers')
    .values({ name, stream, position: initial, updated_ts: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('stream_consumers').select(['stream', 'position']).where('name', '=', name).executeTakeFirstOrThrow();
  return { stream: row.stream, position: Number(row.position) };
}

/** Records that the consumer has handled every row up to `position`. */
export async function saveConsumerPosition(db: Kysely<Schema>, name: string, position: number, now: number): Promise<void> {
  await db.updateTable('stream_consumers').set({ position, updated_ts: now }).where('name', '=', name).execute();
}
