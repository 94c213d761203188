// The events state resolution reads, from the database: one room's events by id (redacted ones in
// their redacted form, as authorization reads them), auth chains through the event_auth index and
// rejections through event statuses. One source serves one resolution (or the few of one input
// step): what it has read is kept for its life, and nothing of it outlives it.

import type { Kysely } from 'kysely';
import type { RoomEvent } from '../../protocol/events.js';
import type { StateResEventSource } from '../../protocol/state-res/index.js';
import { eventsByIds } from '../../storage/rooms/events.js';
import { authChainIds, statusesOf } from '../../storage/rooms/graph.js';
import type { Schema } from '../../storage/schema.js';
import type { RoomReader } from '../reader.js';
import { authRoomEventOf, storedEventFromRow, type StoredEvent } from '../stored-event.js';

/** Ids per read: well under the bound parameters either database takes. */
const READ_BATCH = 2000;
/** Auth chains remembered per source. */
const CHAINS_KEPT = 8;

export interface StoredStateResSourceDeps {
  readonly db: Kysely<Schema>;
  /** When given, events its cache holds are taken from there (nothing is added to it). */
  readonly reader?: RoomReader;
}

export class StoredStateResSource implements StateResEventSource {
  /** Events read so far; null for an id this room does not have. */
  private readonly events = new Map<string, RoomEvent | null>();
  private readonly rejected = new Set<string>();
  private readonly statusKnown = new Set<string>();
  /** Auth chains asked for, by the ids asked with (a resolution asks for each once; a merge after it, again). */
  private readonly chains = new Map<string, ReadonlySet<string>>();

  constructor(
    private readonly deps: StoredStateResSourceDeps,
    readonly room: { readonly roomId: string; readonly roomNid: number },
  ) {}

  async getEvents(ids: readonly string[]): Promise<ReadonlyMap<string, RoomEvent>> {
    const out = new Map<string, RoomEvent>();
    let wanted: string[] = [];
    for (const id of new Set(ids)) {
      const known = this.events.get(id);
      if (known === undefined) wanted.push(id);
      else if (known !== null) out.set(id, known);
    }
    if (wanted.length === 0) return out;
    if (this.deps.reader !== undefined) {
      const cached = this.deps.reader.cachedEvents(wanted);
      for (const e of cached.values()) this.take(e, out);
      if (cached.size > 0) wanted = wanted.filter((id) => !cached.has(id));
    }
    // The room's large states are read without passing through the reader's cache: a resolution
    // over thousands of events would push out what syncs read.
    for (let i = 0; i < wanted.length; i += READ_BATCH) {
      for (const row of await eventsByIds(this.deps.db, wanted.slice(i, i + READ_BATCH))) {
        this.take(storedEventFromRow(row), out);
      }
    }
    for (const id of wanted) if (!this.events.has(id)) this.events.set(id, null);
    return out;
  }

  private take(e: StoredEvent, out: Map<string, RoomEvent>): void {
    // An event of another room is absent from this one.
    if (e.roomNid !== this.room.roomNid) return;
    const ev = authRoomEventOf(e);
    this.events.set(e.eventId, ev);
    out.set(e.eventId, ev);
  }

  async getAuthChain(ids: readonly string[]): Promise<ReadonlySet<string>> {
    const key = ids.join(' ');
    let chain = this.chains.get(key);
    if (chain === undefined) {
      chain = await authChainIds(this.deps.db, ids);
      if (this.chains.size >= CHAINS_KEPT) this.chains.delete(this.chains.keys().next().value as string);
      this.chains.set(key, chain);
    }
    return chain;
  }

  async rejectedAmong(ids: readonly string[]): Promise<ReadonlySet<string>> {
    const out = new Set<string>();
    const wanted: string[] = [];
    for (const id of new Set(ids)) {
      if (this.rejected.has(id)) out.add(id);
      else if (!this.statusKnown.has(id)) wanted.push(id);
    }
    const statuses = await statusesOf(this.deps.db, wanted);
    for (const id of wanted) {
      this.statusKnown.add(id);
      if (statuses.get(id) === 'rejected') {
        this.rejected.add(id);
        out.add(id);
      }
    }
    return out;
  }
}
