// Reads for serving events to other servers (rooms/query/for-servers.ts): whether a server has
// joined members, the prev edges of events for walks back over the graph, and what the history
// visibility rules for servers read of a state snapshot (its history_visibility and the member
// events of one server's users).

import type { Kysely } from 'kysely';
import type { EventStatus, Schema } from '../schema.js';

const IDS_PER_STATEMENT = 500;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Whether `serverName` has joined members in the room's current state. */
export async function serverJoinedNow(db: Kysely<Schema>, roomNid: number, serverName: string): Promise<boolean> {
  const row = await db
    .selectFrom('room_joined_servers')
    .select('joined_members')
    .where('room_nid', '=', roomNid)
    .where('server_name', '=', serverName)
    .executeTakeFirst();
  return row !== undefined && Number(row.joined_members) > 0;
}

/** An event as a walk over the graph reads it. */
export interface GraphNode {
  readonly nid: number;
  readonly eventId: string;
  readonly depth: number;
  /** Undefined off the timeline. */
  readonly streamOrdering: number | undefined;
  readonly status: EventStatus;
}

function nodeOf(r: { event_nid: number | bigint; event_id: string; depth: number | bigint; stream_ordering: number | bigint | null; status: EventStatus }): GraphNode {
  return {
    nid: Number(r.event_nid),
    eventId: r.event_id,
    depth: Number(r.depth),
    streamOrdering: r.stream_ordering === null ? undefined : Number(r.stream_ordering),
    status: r.status,
  };
}

/** The room's stored events among these ids. */
export async function graphNodesByIds(db: Kysely<Schema>, roomNid: number, eventIds: readonly string[]): Promise<GraphNode[]> {
  const out: GraphNode[] = [];
  for (const part of chunks([...new Set(eventIds)], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('events')
      .select(['event_nid', 'event_id', 'depth', 'stream_ordering', 'status'])
      .where('room_nid', '=', roomNid)
      .where('event_id', 'in', part)
      .execute();
    for (const r of rows) out.push(nodeOf(r));
  }
  return out;
}

/**
 * The stored prev events of these events (of the same room), per citing event's nid. Prev events
 * this server does not have are absent.
 */
export async function prevNodesOf(db: Kysely<Schema>, roomNid: number, eventNids: readonly number[]): Promise<Map<number, GraphNode[]>> {
  const out = new Map<number, GraphNode[]>();
  for (const nid of eventNids) out.set(nid, []);
  for (const part of chunks([...new Set(eventNids)], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('event_edges as g')
      .innerJoin('events as p', 'p.event_id', 'g.prev_event_id')
      .select(['g.event_nid as child', 'p.event_nid', 'p.event_id', 'p.depth', 'p.stream_ordering', 'p.status'])
      .where('g.event_nid', 'in', part)
      .where('p.room_nid', '=', roomNid)
      .execute();
    for (const r of rows) out.get(Number(r.child))?.push(nodeOf(r));
  }
  return out;
}

/** What the history visibility rules for a server read of one snapshot, as event nids. */
export interface ServerStateNids {
  /** The m.room.history_visibility event, if any. */
  readonly visibility: number | undefined;
  /** The member events of the server's users, by user id. */
  readonly members: ReadonlyMap<string, number>;
}

/**
 * For each snapshot: its history_visibility event and the member events of `serverName`'s users.
 * The server's users are found by the suffix of the state key, so no list of them is needed;
 * chains are read once for all snapshots (two statements per 500 snapshots).
 */
export async function serverStateInSnapshots(db: Kysely<Schema>, snapshotNids: readonly number[], serverName: string): Promise<Map<number, ServerStateNids>> {
  const out = new Map<number, ServerStateNids>();
  const wanted = [...new Set(snapshotNids)];
  if (wanted.length === 0) return out;
  const chains = new Map<number, number[]>();
  for (const part of chunks(wanted, IDS_PER_STATEMENT)) {
    const rows = await db.selectFrom('state_snapshots').select(['snapshot_nid', 'chain']).where('snapshot_nid', 'in', part).execute();
    for (const r of rows) chains.set(Number(r.snapshot_nid), [...(JSON.parse(r.chain) as number[]), Number(r.snapshot_nid)]);
  }
  const suffix = `:${serverName}`;
  type Entry = { readonly member: string | undefined; readonly eventNid: number | null };
  const entries = new Map<number, Entry[]>();
  for (const part of chunks([...new Set([...chains.values()].flat())], IDS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('state_snapshot_entries as e')
      .innerJoin('event_state_keys as k', 'k.state_key_nid', 'e.state_key_nid')
      .select(['e.snapshot_nid', 'k.event_type', 'k.state_key', 'e.event_nid'])
      .where('e.snapshot_nid', 'in', part)
      .where((eb) =>
        eb.or([
          eb.and([eb('k.event_type', '=', 'm.room.history_visibility'), eb('k.state_key', '=', '')]),
          // LIKE narrows; the exact server (after the user id's first colon) is checked below.
          eb.and([eb('k.event_type', '=', 'm.room.member'), eb('k.state_key', 'like', `%${suffix}`)]),
        ]),
      )
      .execute();
    for (const r of rows) {
      let member: string | undefined;
      if (r.event_type === 'm.room.member') {
        if (r.state_key.slice(r.state_key.indexOf(':') + 1) !== serverName) continue;
        member = r.state_key;
      }
      let list = entries.get(Number(r.snapshot_nid));
      if (list === undefined) entries.set(Number(r.snapshot_nid), (list = []));
      list.push({ member, eventNid: r.event_nid === null ? null : Number(r.event_nid) });
    }
  }
  for (const [nid, chain] of chains) {
    // Later snapshots in the chain override earlier ones.
    let visibility: number | undefined;
    const members = new Map<string, number>();
    for (const link of chain) {
      for (const e of entries.get(link) ?? []) {
        if (e.member === undefined) visibility = e.eventNid ?? undefined;
        else if (e.eventNid === null) members.delete(e.member);
        else members.set(e.member, e.eventNid);
      }
    }
    out.set(nid, { visibility, members });
  }
  return out;
}

/** The `content` of each of these events, by nid. */
export async function contentsByNids(db: Kysely<Schema>, nids: readonly number[]): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>();
  for (const part of chunks([...new Set(nids)], IDS_PER_STATEMENT)) {
    const rows = await db.selectFrom('events').select(['event_nid', 'json']).where('event_nid', 'in', part).execute();
    for (const r of rows) out.set(Number(r.event_nid), (JSON.parse(r.json) as { content?: unknown }).content);
  }
  return out;
}
