// GET /_chat/client/v3/capabilities: what the logged-in user may do with this server. Room versions
// come from the protocol core's rule records, so a new version shows up here without a change.

import type { RouteDef } from '../../http/route.js';
import { DEFAULT_ROOM_VERSION, roomVersionsCapability } from '../../protocol/room-versions.js';

/** `defaultRoomVersion`: room_server.default_room_version. */
export function capabilities(defaultRoomVersion = DEFAULT_ROOM_VERSION): Record<string, unknown> {
  return {
    'm.room_versions': roomVersionsCapability(defaultRoomVersion),
    'm.change_password': { enabled: true },
    'm.set_displayname': { enabled: true },
    'm.set_avatar_url': { enabled: true },
    // No third-party identifiers (email, phone) are managed here.
    'm.3pid_changes': { enabled: false },
  };
}

export function capabilitiesRoutes(defaultRoomVersion?: string): RouteDef[] {
  const body = { capabilities: capabilities(defaultRoomVersion) };
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/capabilities',
      auth: 'guest',
      handler: () => ({ body }),
    },
  ];
}
