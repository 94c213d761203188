// Application services' delivery state (migrations 016 and 017).

/**
 * One row per service: the transaction ids it has been given, how far its events have been
 * delivered, and the transaction in flight, kept as sent so that a retry (after a failure or a
 * restart) is the same transaction, id and body.
 */
export interface AppServiceQueuesTable {
  as_id: string;
  /** The last transaction id given out (ids rise by one). */
  last_txn_id: number;
  /** Events up to this stream position have been delivered (a 200 from the service). */
  delivered_position: number;
  pending_txn_id: number | null;
  /** The pending transaction's body, as sent. */
  pending_body: string | null;
  /** The last stream position the pending transaction covers. */
  pending_position: number | null;
  /**
   * JSON: how far the receipts, presence and to-device streams have been delivered
   * (`{"receipts": n, "presence": n, "to_device": n}`); null until the first ephemeral transaction.
   */
  ephemeral_positions: string | null;
  /** JSON, the same: what the pending transaction covers of them (null when it covers only events). */
  pending_ephemeral_positions: string | null;
}

/** A room a service published in one of its networks' directories (`/directory/list/appservice`). */
export interface AppServiceRoomListTable {
  as_id: string;
  network_id: string;
  room_id: string;
}

export interface AppServiceTables {
  appservice_queues: AppServiceQueuesTable;
  appservice_room_list: AppServiceRoomListTable;
}
