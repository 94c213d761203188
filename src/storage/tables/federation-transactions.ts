// Tables of federation transactions: inbound answers (migration 012), and the EDUs queued for
// other servers and the to-device message ids received from them (migration 014).

import type { Generated } from 'kysely';

export interface InboundTransactionsTable {
  origin: string;
  txn_id: string;
  answer: string;
  received_ts: number;
}

export interface OutboundEdusTable {
  edu_id: Generated<number>;
  destination: string;
  edu_type: string;
  /** The EDU's content, JSON. */
  content: string;
  queued_ts: number;
}

export interface InboundToDeviceTable {
  origin: string;
  sender: string;
  message_id: string;
  received_ts: number;
}

export interface FederationTransactionTables {
  federation_inbound_transactions: InboundTransactionsTable;
  federation_outbound_edus: OutboundEdusTable;
  federation_inbound_to_device: InboundToDeviceTable;
}
