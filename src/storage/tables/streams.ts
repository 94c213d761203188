// Stream positions (migration 002).

export interface StreamPositionsTable {
  stream: string;
  position: number;
}

export interface StreamsTables {
  stream_positions: StreamPositionsTable;
}
