// EDUs queued for other servers until they accept them (migration 014).

import type { Kysely } from 'kysely';
import type { JsonObject } from '../../protocol/json.js';
import type { Schema } from '../schema.js';

export interface QueuedEdu {
  readonly id: number;
  readonly eduType: string;
  /** The content as stored (JSON text). */
  readonly content: string;
}

/** Queues one EDU for each destination (within the caller's transaction). */
export async function insertOutboundEdus(
  db: Kysely<Schema>,
  destinations: readonly string[],
  eduType: string,
  content: JsonObject,
  now: number,
): Promise<void> {
  if (destinations.length === 0) return;
  const json = JSON.stringify(content);
  await db
    .insertInto('federation_outbound_edus')
    .values(destinations.map((destination) => ({ destination, edu_type: eduType, content: json, queued_ts: now })))
    .execute();
}

/** The oldest EDUs queued for the destination, at most `limit`. */
export async function selectOutboundEdus(db: Kysely<Schema>, destination: string, limit: number): Promise<QueuedEdu[]> {
  const rows = await db
    .selectFrom('federation_outbound_edus')
    .select(['edu_id', 'edu_type', 'content'])
    .where('destination', '=', destination)
    .orderBy('edu_id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: Number(r.edu_id), eduType: r.edu_type, content: r.content }));
}

/** Removes the destination's EDUs up to and including `upToId` (they were accepted). */
export async function deleteOutboundEdus(db: Kysely<Schema>, destination: string, upToId: number): Promise<void> {
  await db.deleteFrom('federation_outbound_edus').where('destination', '=', destination).where('edu_id', '<=', upToId).execute();
}

/** The destinations with EDUs waiting. */
export async function destinationsWithEdus(db: Kysely<Schema>): Promise<string[]> {
  const rows = await db.selectFrom('federation_outbound_edus').select('destination').distinct().execute();
  return rows.map((r) => r.destination);
}
