// Builds RoomEvents for authorization and state-resolution tests: readable ids, automatic
// timestamps and depths, auth_events and prev_events given by id.

import type { RoomEvent } from '../../src/protocol/events.js';
import type { JsonObject } from '../../src/protocol/json.js';

export interface EventSpec {
  id?: string;
  type: string;
  sender: string;
  state_key?: string;
  content?: JsonObject;
  auth_events?: string[];
  prev_events?: string[];
  origin_server_ts?: number;
  depth?: number;
  redacts?: string;
}

export const ROOM_ID = '!room:example.org';

export class EventFactory {
  private counter = 0;
  private ts = 1_000;

  constructor(readonly roomId: string = ROOM_ID) {}

  make(spec: EventSpec): RoomEvent {
    this.counter += 1;
    this.ts += 1;
    return {
      event_id: spec.id ?? `$e${this.counter}`,
      room_id: this.roomId,
      sender: spec.sender,
      type: spec.type,
      ...(spec.state_key !== undefined ? { state_key: spec.state_key } : {}),
      content: spec.content ?? {},
      origin_server_ts: spec.origin_server_ts ?? this.ts,
      depth: spec.depth ?? this.counter,
      auth_events: spec.auth_events ?? [],
      prev_events: spec.prev_events ?? [],
      ...(spec.redacts !== undefined ? { redacts: spec.redacts } : {}),
    };
  }
}
