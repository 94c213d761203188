// What the federation sender reads: the servers to send to, and this server's own events in the
// rooms each of them is joined to, in stream order.

import type { Kysely } from 'kysely';
import type { Schema } from '../schema.js';

export interface OutboundPdu {
  readonly position: number;
  readonly json: string;
}

/** Every other server with a joined member in a room this server is in. */
export async function destinations(db: Kysely<Schema>, ourServer: string): Promise<string[]> {
  const rows = await db.selectFrom('room_joined_servers').select('server_name').distinct().where('server_name', '<>', ourServer).execute();
  return rows.map((r) => r.server_name);
}

/** Senders of `server`: a server name holds neither `%` nor `_`, LIKE's wildcards. */
function senderOf(server: string): string {
  return `%:${server}`;
}

/** This server's events after `after` in the rooms `destination` is joined to, oldest first. */
export async function localEventsFor(db: Kysely<Schema>, destination: string, ourServer: string, after: number, limit: number): Promise<OutboundPdu[]> {
  const rows = await db
    .selectFrom('events as e')
    .innerJoin('room_joined_servers as j', (join) => join.onRef('j.room_nid', '=', 'e.room_nid').on('j.server_name', '=', destination))
    .select(['e.stream_ordering', 'e.json'])
    .where('e.stream_ordering', '>', after)
    .where('e.sender', 'like', senderOf(ourServer))
    .orderBy('e.stream_ordering')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ position: Number(r.stream_ordering), json: r.json }));
}

/**
 * The newest of this server's events after `after` in each room `destination` is joined to,
 * oldest first: what a server back from an outage is sent (it fetches what came before).
 */
export async function latestLocalEventsFor(db: Kysely<Schema>, destination: string, ourServer: string, after: number): Promise<OutboundPdu[]> {
  const latest = await db
    .selectFrom('events as e')
    .innerJoin('room_joined_servers as j', (join) => join.onRef('j.room_nid', '=', 'e.room_nid').on('j.server_name', '=', destination))
    .select((eb) => eb.fn.max('e.stream_ordering').as('position'))
    .where('e.stream_ordering', '>', after)
    .where('e.sender', 'like', senderOf(ourServer))
    .groupBy('e.room_nid')
    .execute();
  const positions = latest.map((r) => Number(r.position)).filter((p) => Number.isFinite(p));
  if (positions.length === 0) return [];
  const rows = await db.selectFrom('events').select(['stream_ordering', 'json']).where('stream_ordering', 'in', positions).orderBy('stream_ordering').execute();
  return rows.map((r) => ({ position: Number(r.stream_ordering), json: r.json }));
}
