// GET /notifications (client API, "Listing notifications"): the requester's notifications.

import type { RouteDef } from '../../http/route.js';
import { listNotifications } from '../../push/notification-list.js';
import type { Kysely } from 'kysely';
import type { RoomReader } from '../../rooms/reader.js';
import type { Schema } from '../../storage/schema.js';
import { query, queryInt, requester } from '../rooms/fields.js';

/** Notifications per page without `limit` (as the reference server), and at most. */
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;

export function notificationRoutes(deps: { readonly db: Kysely<Schema>; readonly reader: RoomReader; readonly now: () => number }): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/notifications',
      handler: async (req) => {
        const from = query(req, 'from');
        const limit = queryInt(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
        // Any other value of `only` is ignored, as the reference server does.
        const onlyHighlight = query(req, 'only') === 'highlight';
        return { body: await listNotifications(deps, requester(req), { from: from === '' ? undefined : from, limit, onlyHighlight }) };
      },
    },
  ];
}
