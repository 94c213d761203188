// Member lists: /rooms/{roomId}/members (at, membership, not_membership) and /joined_members.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import type { RoomService } from '../../rooms/service.js';
import { param, query, requester } from './fields.js';

const MEMBERSHIPS: readonly string[] = ['join', 'invite', 'knock', 'leave', 'ban'];

function membershipParam(value: string | undefined, key: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!MEMBERSHIPS.includes(value)) throw HearthError.invalidParam(`${key} must be one of ${MEMBERSHIPS.join(', ')}`);
  return value;
}

export function memberRoutes(deps: { rooms: RoomService }): RouteDef[] {
  const { rooms } = deps;
  return [
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/rooms/:roomId/members',
      auth: 'guest',
      handler: async (req) => {
        const at = query(req, 'at');
        const membership = membershipParam(query(req, 'membership'), 'membership');
        const notMembership = membershipParam(query(req, 'not_membership'), 'not_membership');
        const chunk = await rooms.members(requester(req), param(req, 'roomId'), {
          ...(at !== undefined && at !== '' ? { at } : {}),
          ...(membership !== undefined ? { membership } : {}),
          ...(notMembership !== undefined ? { notMembership } : {}),
        });
        return { body: { chunk } };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: ['r0', 'v3'],
      path: '/rooms/:roomId/joined_members',
      auth: 'guest',
      handler: async (req) => ({ body: { joined: await rooms.joinedMembers(requester(req), param(req, 'roomId')) } }),
    },
  ];
}
