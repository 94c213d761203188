// The room routes of the client API, all served by the RoomService.

import type { AppServices } from '../../appservice/namespaces.js';
import type { RouteDef } from '../../http/route.js';
import type { RoomService } from '../../rooms/service.js';
import type { RoomUpgrades } from '../../rooms/upgrade.js';
import { createRoomRoutes } from './create-room.js';
import { directoryRoutes } from './directory.js';
import { eventRoutes } from './events.js';
import { memberRoutes } from './members.js';
import { hierarchyRoutes } from './hierarchy.js';
import { membershipRoutes } from './membership.js';
import { relationRoutes } from './relations.js';
import { roomSummaryRoutes } from './summary.js';
import { roomUpgradeRoutes } from './upgrade.js';

export function roomRoutes(deps: { rooms: RoomService; upgrades: RoomUpgrades; appServices?: AppServices }): RouteDef[] {
  return [...createRoomRoutes(deps), ...membershipRoutes(deps), ...eventRoutes(deps), ...memberRoutes(deps), ...directoryRoutes(deps), ...roomUpgradeRoutes(deps), ...roomSummaryRoutes(deps), ...hierarchyRoutes(deps), ...relationRoutes(deps)];
}
