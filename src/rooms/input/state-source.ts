// The events state resolution reads while the room server decides a received event: stored events
// of the room (redacted ones in their redacted form, as authorization reads them), with their auth
// chains walked over the stored auth references, plus the events being decided, not yet stored.

import type { Kysely } from 'kysely';
import { referenceIds, type RoomEvent } from '../../protocol/events.js';
import type { StateResEventSource } from '../../protocol/state-res/index.js';
import { authChainIds, statusesOf } from '../../storage/rooms/graph.js';
import type { Schema } from '../../storage/schema.js';
import { redactedRoomEvent } from '../builder.js';
import { refOf } from '../head-loader.js';
import type { EventRef, RoomHead } from '../head.js';
import type { RoomReader } from '../reader.js';
import { roomEventOf } from '../stored-event.js';

export interface SourceEvent {
  readonly event: RoomEvent;
  readonly ref: EventRef;
}

export class StoredStateSource implements StateResEventSource {
  private readonly unstored = new Map<string, SourceEvent & { readonly authIds: readonly string[] }>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly reader: RoomReader,
    private readonly head: RoomHead,
    unstored: readonly (SourceEvent & { readonly pdu: { auth_events: Parameters<typeof referenceIds>[0] } })[],
  ) {
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
      const event = roomEventOf(e);
      out.set(id, { event: e.redactedBy === undefined ? event : redactedRoomEvent(event, this.head), ref: refOf(e, this.head.version) });
    }
    return out;
  }

  async getEvents(ids: readonly string[]): Promise<ReadonlyMap<string, RoomEvent>> {
    const out = new Map<string, RoomEvent>();
    for (const [id, e] of await this.stored(ids)) out.set(id, e.event);
    return out;
  }

  async getAuthChain(ids: readonly string[]): Promise<ReadonlySet<string>> {
    const start = new Set<string>();
    const direct = new Set<string>();
    for (const id of ids) {
      const u = this.unstored.get(id);
      if (u === undefined) start.add(id);
      else for (const a of u.authIds) (direct.add(a), start.add(a));
    }
    const chain = await authChainIds(this.db, [...start]);
    for (const a of direct) chain.add(a);
    return chain;
  }

  async rejectedAmong(ids: readonly string[]): Promise<ReadonlySet<string>> {
    const statuses = await statusesOf(this.db, ids);
    return new Set([...statuses].flatMap(([id, s]) => (s === 'rejected' ? [id] : [])));
  }
}
