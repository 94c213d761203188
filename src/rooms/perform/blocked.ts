// Rooms an admin blocked: nobody here joins them, knocks on them or is invited to them.

import { HearthError } from '../../protocol/errors.js';
import { blockedRoom } from '../../storage/admin/rooms.js';
import type { RoomCore } from '../core.js';

export async function refuseBlocked(core: RoomCore, roomId: string): Promise<void> {
  if ((await blockedRoom(core.db, roomId)) !== undefined) throw HearthError.forbidden('This room has been blocked on this server');
}
