// Client-API routes from the spec's deprecated sections that bridges, tools and widgets still
// call (the event stream, initialSync, send without a transaction id).

import type { RouteDef } from '../../http/route.js';
import type { RoomService } from '../../rooms/service.js';
import type { EventStreamService } from '../../sync/event-stream.js';
import type { LegacyInitialSync } from '../../sync/initial-sync.js';
import { legacyEventRoutes } from './events.js';
import { legacyInitialSyncRoutes } from './initial-sync.js';
import { legacySendRoutes } from './send.js';

export interface LegacyRouteDeps {
  readonly eventStream: EventStreamService;
  readonly initialSync: LegacyInitialSync;
  readonly rooms: RoomService;
}

export function legacyRoutes(deps: LegacyRouteDeps): RouteDef[] {
  return [...legacyEventRoutes(deps), ...legacyInitialSyncRoutes(deps), ...legacySendRoutes(deps)];
}
