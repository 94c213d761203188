// Account data, global and per room, and room tags (the m.tag room account data):
// /user/{userId}/account_data/{type}, /user/{userId}/rooms/{roomId}/account_data/{type},
// /user/{userId}/rooms/{roomId}/tags[/{tag}].

import type { HttpRequest, RouteDef } from '../../http/route.js';
import type { AccountDataService } from '../../users/account-data.js';
import { body, param, requesterOf, VERSIONS } from './fields.js';

export function accountDataRoutes(deps: { accountData: AccountDataService }): RouteDef[] {
  const { accountData } = deps;
  const me = (req: HttpRequest) => requesterOf(req).userId;
  return [
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/account_data/:type',
      handler: async (req) => {
        await accountData.setGlobal(me(req), param(req, 'userId'), param(req, 'type'), body(req));
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/account_data/:type',
      handler: async (req) => ({ body: await accountData.getGlobal(me(req), param(req, 'userId'), param(req, 'type')) }),
    },
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/rooms/:roomId/account_data/:type',
      handler: async (req) => {
        await accountData.setRoom(me(req), param(req, 'userId'), param(req, 'roomId'), param(req, 'type'), body(req));
        return { body: {} };
      },
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/rooms/:roomId/account_data/:type',
      handler: async (req) => ({
        body: await accountData.getRoom(me(req), param(req, 'userId'), param(req, 'roomId'), param(req, 'type')),
      }),
    },
    {
      method: 'GET',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/rooms/:roomId/tags',
      handler: async (req) => ({ body: await accountData.getTags(me(req), param(req, 'userId'), param(req, 'roomId')) }),
    },
    {
      method: 'PUT',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/rooms/:roomId/tags/:tag',
      handler: async (req) => {
        await accountData.putTag(me(req), param(req, 'userId'), param(req, 'roomId'), param(req, 'tag'), body(req));
        return { body: {} };
      },
    },
    {
      method: 'DELETE',
      api: 'client',
      versions: VERSIONS,
      path: '/user/:userId/rooms/:roomId/tags/:tag',
      handler: async (req) => {
        await accountData.deleteTag(me(req), param(req, 'userId'), param(req, 'roomId'), param(req, 'tag'));
        return { body: {} };
      },
    },
  ];
}
