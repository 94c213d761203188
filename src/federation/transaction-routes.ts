// PUT /_chat/federation/v1/send/{txnId}: the one route through which other servers push PDUs and EDUs.

import type { RouteDef } from '../http/route.js';
import type { TransactionReceiver } from './transactions.js';

/** 50 PDUs of at most 64 KiB each, and 100 EDUs. */
const TRANSACTION_BODY_LIMIT = 8 * 1024 * 1024;

export function transactionRoutes(deps: { readonly transactions: TransactionReceiver }): RouteDef[] {
  return [
    {
      method: 'PUT',
      api: 'federation',
      versions: ['v1'],
      path: '/send/:txnId',
      auth: 'server',
      bodyLimit: TRANSACTION_BODY_LIMIT,
      // PDUs are kept as their JSON text, which keeps NUL in strings on every backend.
      allowNulInBodyStrings: true,
      handler: async (req) => ({ body: await deps.transactions.receive(req.origin!, req.params['txnId']!, req.body) }),
    },
  ];
}
