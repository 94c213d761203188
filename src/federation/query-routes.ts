// Federation queries other servers ask of this one: its software version (unauthenticated), and,
// signed, a local user's profile and a local room alias.

import type { HttpRequest, RouteDef } from '../http/route.js';
import { HearthError } from '../protocol/errors.js';
import { serverNameOf } from '../protocol/ids/accessors.js';
import { parseRoomAlias } from '../protocol/ids/room-ids.js';
import { parseUserId } from '../protocol/ids/user-id.js';

export interface FederationQueryDeps {
  readonly serverName: string;
  readonly version: string;
  readonly profiles: {
    localProfile(userId: string): Promise<{ readonly displayname: string | null; readonly avatar_url: string | null } | undefined>;
  };
  readonly rooms: { resolveAlias(alias: string): Promise<{ room_id: string; servers: string[] }> };
}

function queryParam(req: HttpRequest, name: string): string {
  const value = req.query[name];
  if (typeof value !== 'string' || value === '') throw HearthError.invalidParam(`${name} is required, once`);
  return value;
}

export function federationQueryRoutes(deps: FederationQueryDeps): RouteDef[] {
  const local = (domain: string, what: string) => {
    if (domain !== deps.serverName) throw HearthError.invalidParam(`${what} is not hosted on this server`);
  };
  return [
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/version',
      auth: 'none',
      handler: () => ({ body: { server: { name: 'Hearth', version: deps.version } } }),
    },
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/query/profile',
      auth: 'server',
      handler: async (req) => {
        const userId = parseUserId(queryParam(req, 'user_id'));
        local(serverNameOf(userId), 'The user');
        const field = req.query['field'];
        if (field !== undefined && field !== 'displayname' && field !== 'avatar_url') {
          throw HearthError.invalidParam('field must be displayname or avatar_url');
        }
        const profile = await deps.profiles.localProfile(userId);
        if (profile === undefined) throw HearthError.notFound('Profile not found');
        const body: Record<string, string> = {};
        if (profile.displayname !== null && field !== 'avatar_url') body['displayname'] = profile.displayname;
        if (profile.avatar_url !== null && field !== 'displayname') body['avatar_url'] = profile.avatar_url;
        return { body };
      },
    },
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/query/directory',
      auth: 'server',
      handler: async (req) => {
        const alias = parseRoomAlias(queryParam(req, 'room_alias'));
        local(serverNameOf(alias), 'The room alias');
        return { body: await deps.rooms.resolveAlias(alias) };
      },
    },
  ];
}
