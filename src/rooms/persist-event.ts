// What the writer is given: one event with everything already decided about it. Building and
// signing a local event produces one (rooms/builder.ts); receiving a PDU from another server is
// the other producer. The writer decides nothing; it writes exactly this, in one transaction with
// the rest of its batch.

import type { Pdu, RoomEvent, StateKey } from '../protocol/events.js';
import type { JsonObject } from '../protocol/json.js';
import type { EventStatus } from '../storage/schema.js';
import type { EventRef, RoomHead, RoomSummary, SnapshotRef } from './head.js';

export type { EventStatus } from '../storage/schema.js';

/**
 * Where the event sits on the events stream: `stream` takes the next position (clients see it as
 * new), `backfill` a negative one (history fetched later, never new), `none` no position (outliers,
 * rejected and soft-failed events).
 */
export type PositionKind = 'stream' | 'backfill' | 'none';

/** One key of the current state changing. */
export interface StateChange {
  readonly key: StateKey;
  /** The new current event at the key; null when the key leaves the state. */
  readonly event: RoomEvent | null;
  readonly ref: EventRef | null;
  /** What was current before. */
  readonly prevRef: EventRef | null;
  /** For a member key, the membership it held before (null: none, or not a member key). */
  readonly prevMembership: string | null;
}

/** How the room's current state changes when the event is accepted. */
export interface CurrentStateChange {
  /** Keys whose event changed (empty when only a redaction changed a current event's content). */
  readonly changes: readonly StateChange[];
  /** The snapshot holding the current state afterwards. */
  readonly snapshot: SnapshotRef;
  readonly summary: RoomSummary;
}

export interface PersistEvent {
  /** The room's head the event was decided against (its room nid, id, version and liveness). */
  readonly head: RoomHead;
  readonly ref: EventRef;
  readonly pdu: Pdu;
  /** The PDU as stored. */
  readonly json: string;
  readonly event: RoomEvent;
  readonly status: EventStatus;
  readonly rejectionReason: string | undefined;
  readonly position: PositionKind;
  readonly stateKey: StateKey | undefined;
  /** The state before and after the event; null when not known (outliers). */
  readonly snapshotBefore: SnapshotRef | null;
  readonly snapshotAfter: SnapshotRef | null;
  /** Server-side unsigned data (prev_content, replaces_state, invite_room_state ...). */
  readonly unsigned: JsonObject | undefined;
  /** The transaction id a client sent the event with, and from which device. */
  readonly txn: { readonly deviceId: string; readonly txnId: string } | undefined;
  /** The room's forward extremities once the event is stored; undefined when they do not change. */
  readonly extremities: readonly EventRef[] | undefined;
  /** The change to the room's current state; undefined when it does not change. */
  readonly currentState: CurrentStateChange | undefined;
  /** A redaction stored earlier that takes effect on this event (it arrived before its target). */
  readonly redactedBy?: string | undefined;
  /** For a redaction that takes effect: the redacted event's id. */
  readonly redactionTarget: string | undefined;
  /** Prev events the server lacks (added) and ones it now has (removed) as backward extremities. */
  readonly backward: { readonly add: readonly string[]; readonly remove: readonly string[] } | undefined;
  /** The event is stored already as an outlier (ref.nid is its row): its row is updated, not inserted. */
  readonly upgradesOutlier?: boolean;
  /**
   * Received from another server: events relating to it (an edit, a reaction) may have come first,
   * as nothing makes them cite it.
   */
  readonly received?: boolean;
  /**
   * For a backfilled event: the position reserved for it before it was decided (a backfill decides
   * history oldest first but numbers it newest first). Without one the writer allocates.
   */
  readonly reservedPosition?: number;
  /**
   * Decided against the room's current state as it then stood (its state before is that state):
   * a local event, or a received one citing exactly the room's extremities.
   */
  readonly onCurrentState?: boolean;
  /** Set by the writer for events that take a position. */
  streamOrdering: number | undefined;
  /** Set by the writer when relations to the event were stored before it (they came first). */
  hasRelations?: boolean;
}
