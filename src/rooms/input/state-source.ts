// The events state resolution reads while the room server decides a received event: the room's
// stored events (rooms/state/event-source.ts), plus the events being decided, not yet stored.

import type { Kysely } from 'kysely';
import { referenceIds, type RoomEvent } from '../../protocol/events.js';
import type { StateResEventSource } from '../../protocol/state-res/index.js';
import type { Schema } from '../../storage/schema.js';
import { refOf } from '../head-loader.js';
import type { EventRef, RoomHead } from '../head.js';
import type { RoomReader } from '../reader.js';
import { authRoomEventOf } from '../stored-event.js';
import { StoredStateResSource } from '../state/event-source.js';

export interface SourceEvent {
  readonly event: RoomEvent;
  readonly ref: EventRef;
}

export class StoredStateSource implements StateResEventSource {
  private readonly unstored = new Map<string, SourceEvent & { readonly authIds: readonly string[] }>();
  private readonly storedSource: StoredStateResSource;

  constructor(
    db: Kysely<Schema>,
    private readonly reader: RoomReader,
    private readonly head: RoomHead,
    unstored: readonly (SourceEvent & { readonly pdu: { auth_events: Parameters<typeof referenceIds>[0] } })[],
  ) {
    this.storedSource = new StoredStateResSource({ db, reader }, { roomId: head.roomId, roomNid: head.roomNid! });
    for (const u of unstored) this.unstored.set(u.event.event_id, { event: u.event, ref: u.ref, authIds: referenceIds(u.pdu.auth_events) });
  }

  /** The events of the room with these ids, with their references. */
  async stored(ids: readonly string[]): Promise<Map<string, SourceEvent>> {
    const out = new Map<string, SourceEvent>();
    const wanted: string[] = [];
    for (const id of ids) {
      const u = this.unstored.get(id);
      if (u !== undefined) out.set(id, u);
      else wanted.push(id);
    }
    for (const [id, e] of await this.reader.events(wanted)) {
      if (e.roomId !== this.head.roomId) continue;
      out.set(id, { event: authRoomEventOf(e), ref: refOf(e, this.head.version) });
    }
    return out;
  }

  async getEvents(ids: readonly string[]): Promise<ReadonlyMap<string, RoomEvent>> {
    const out = new Map<string, RoomEvent>();
    const wanted: string[] = [];
    for (const id of ids) {
      const u = this.unstored.get(id);
      if (u !== undefined) out.set(id, u.event);
      else wanted.push(id);
    }
    for (const [id, e] of await this.storedSource.getEvents(wanted)) out.set(id, e);
    return out;
  }

  async getAuthChain(ids: readonly string[]): Promise<ReadonlySet<string>> {
    // An unstored event's chain: its auth events and their chains.
    const start = new Set<string>();
    const direct = new Set<string>();
    for (const id of ids) {
      const u = this.unstored.get(id);
      if (u === undefined) start.add(id);
      else for (const a of u.authIds) (direct.add(a), start.add(a));
    }
    const chain = new Set(await this.storedSource.getAuthChain([...start]));
    for (const a of direct) chain.add(a);
    return chain;
  }

  rejectedAmong(ids: readonly string[]): Promise<ReadonlySet<string>> {
    return this.storedSource.rejectedAmong(ids.filter((id) => !this.unstored.has(id)));
  }
}
