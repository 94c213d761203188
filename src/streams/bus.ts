// The stream bus: how a committed change reaches whoever waits for it. Writers call `notify` after
// their transaction commits; long-polling syncs `wait` for changes that concern them; stream
// consumers (consumer.ts) `listen` to a whole stream.
//
// What the bus guarantees:
// - A notified position is readable: the change's transaction committed before `notify`, and since
//   positions are allocated under the stream's row lock (storage/streams.ts), every lower position
//   of that stream is readable too.
// - `current()` never goes back; per stream it is the highest position notified (or read at start).
// - `wait` misses nothing that lands between a caller's read and its wait (a recent log covers the
//   gap; when the log no longer reaches back that far it wakes, possibly needlessly).
// - Notifications are hints, not data: listeners may see positions skipped, coalesced or (across
//   processes) late, and none while they were not running. The database holds the truth; consumers
//   read rows after their own stored position and use notifications only to know when to look.
//
// The implementation today is InProcessBus (in-process-bus.ts). A bus for several processes (NATS)
// implements this interface around an InProcessBus per process: `notify` publishes the change on a
// subject per stream, each process hands every change it receives (its own included) to its local
// bus's `notify`, and `wait`, `listen` and `waiting` stay local. Nothing else changes for callers.

import type { StreamName, StreamPositions } from './positions.js';

export interface StreamChange {
  readonly stream: StreamName;
  readonly position: number;
  /** Users whose sync this change concerns directly (to-device, account data, invites, ...). */
  readonly userIds?: readonly string[];
  /** Rooms whose members' syncs this change concerns (room events, receipts, typing). */
  readonly roomIds?: readonly string[];
}

export interface WaitOptions {
  readonly userId: string;
  readonly roomIds: Iterable<string>;
  /** The positions the caller's response already covers. */
  readonly since: StreamPositions;
  readonly timeoutMs: number;
  /**
   * Registers `cancel`, which ends the wait early (returning false), and returns a function that
   * unregisters it; `cancel` may be called at once. A waiting sync holds only these closures.
   */
  readonly onCancel?: (cancel: () => void) => () => void;
}

export interface StreamBus {
  /** The latest position of every stream this bus has been told of. */
  current(): StreamPositions;
  /** A committed change: moves the stream's position and wakes the waits and listeners it concerns. */
  notify(change: StreamChange): void;
  /** Resolves true when a change concerning the user or rooms arrives after `since`, false on timeout or cancellation. */
  wait(options: WaitOptions): Promise<boolean>;
  /**
   * Calls `listener` with every change of `stream` from now on, synchronously inside `notify` (so it
   * must be quick and must not throw); returns a function that stops it.
   */
  listen(stream: StreamName, listener: (change: StreamChange) => void): () => void;
  /** How many waits are pending in this process (for metrics and tests). */
  readonly waiting: number;
}
