// What the room server asks of other servers while it receives events: the port federation
// implements (tests implement it with a fake remote server). Every answer is untrusted: each PDU
// returned goes through the same checks as one pushed to us.

export interface RemoteEvents {
  /** Events by id, as `origin` serves them (GET /event); ids it does not have are left out. */
  events(origin: string, roomId: string, eventIds: readonly string[]): Promise<readonly unknown[]>;
  /**
   * Like POST /get_missing_events: events of the room that `latest` reaches back to, stopping at
   * `earliest` (not included), at most `limit`, in any order.
   */
  missingEvents(
    origin: string,
    roomId: string,
    earliest: readonly string[],
    latest: readonly string[],
    limit: number,
  ): Promise<readonly unknown[]>;
  /** Like GET /state_ids: the room's state before `eventId`, and its auth chain, as event ids. */
  stateIdsAt(origin: string, roomId: string, eventId: string): Promise<{ readonly pduIds: readonly string[]; readonly authChainIds: readonly string[] }>;
  /**
   * Like GET /backfill/{roomId}?v=...&limit=: the events `from` names and the history before them
   * (their prev events, theirs, ...), at most `limit`, in any order.
   */
  backfill(origin: string, roomId: string, from: readonly string[], limit: number): Promise<readonly unknown[]>;
}

/** A port that has nothing: every gap stays a gap (the room server alone, no federation). */
export const noRemoteEvents: RemoteEvents = {
  events: async () => [],
  missingEvents: async () => [],
  stateIdsAt: async () => ({ pduIds: [], authChainIds: [] }),
  backfill: async () => [],
};
