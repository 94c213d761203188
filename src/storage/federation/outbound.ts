// What the federation sender reads: the servers to send to, and this server's own events in the
// rooms each of them is joined to, from its join on, in stream order. A member event about a server's user (a kick,
// a ban, a leave) goes to that server too, joined or not: it must learn it is out.

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

/** Users of `server`: a server name holds neither `%` nor `_`, LIKE's wildcards. */
function senderOf(server: string): string {
  return `%:${server}`;
}

/** This server's events after `after` for `destination` (see above), oldest first. */
export async function localEventsFor(db: Kysely<Schema>, destination: string, ourServer: string, after: number, limit: number): Promise<OutboundPdu[]> {
  const rows = await forDestination(db, destination, ourServer, after)
    .select(['e.stream_ordering', 'e.json'])
    .orderBy('e.stream_ordering')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ position: Number(r.stream_ordering), json: r.json }));
}

/** This server's events after `after` that `destination` is sent. */
function forDestination(db: Kysely<Schema>, destination: string, ourServer: string, after: number) {
  return db
    .selectFrom('events as e')
    .leftJoin('room_joined_servers as j', (join) => join.onRef('j.room_nid', '=', 'e.room_nid').on('j.server_name', '=', destination))
    .where('e.stream_ordering', '>', after)
    .where('e.sender', 'like', senderOf(ourServer))
    .where((eb) =>
      eb.or([
        // At its joined_since: this server's own join through another, which brought the server in.
        eb.and([eb('j.room_nid', 'is not', null), eb('e.stream_ordering', '>=', eb.ref('j.joined_since'))]),
        eb.and([eb('e.type', '=', 'm.room.member'), eb('e.state_key', 'like', senderOf(destination))]),
      ]),
    );
}

/**
 * The newest of this server's events after `after` in each room `destination` is joined to,
 * oldest first: what a server back from an outage is sent (it fetches what came before).
 */
export async function latestLocalEventsFor(db: Kysely<Schema>, destination: string, ourServer: string, after: number): Promise<OutboundPdu[]> {
  const latest = await forDestination(db, destination, ourServer, after)
    .select((eb) => eb.fn.max('e.stream_ordering').as('position'))
    .groupBy('e.room_nid')
    .execute();
  const positions = latest.map((r) => Number(r.position)).filter((p) => Number.isFinite(p));
  if (positions.length === 0) return [];
  const rows = await db.selectFrom('events').select(['stream_ordering', 'json']).where('stream_ordering', 'in', positions).orderBy('stream_ordering').execute();
  return rows.map((r) => ({ position: Number(r.stream_ordering), json: r.json }));
}
