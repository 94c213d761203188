// Tables of inbound federation transactions (migration 012).

export interface InboundTransactionsTable {
  origin: string;
  txn_id: string;
  answer: string;
  received_ts: number;
}

export interface FederationTransactionTables {
  federation_inbound_transactions: InboundTransactionsTable;
}
