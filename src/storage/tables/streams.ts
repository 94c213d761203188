// Stream positions (migration 002) and the positions of stream consumers (migration 010).

export interface StreamPositionsTable {
  stream: string;
  position: number;
}

export interface StreamConsumersTable {
  name: string;
  stream: string;
  /** Every row of the stream up to this position has been handled. */
  position: number;
  updated_ts: number;
}

export interface StreamsTables {
  stream_positions: StreamPositionsTable;
  stream_consumers: StreamConsumersTable;
}
