// Discovery documents: /.well-known/chat/client tells clients where the client API is, and
// /.well-known/chat/server tells other servers where federation is (both also under `matrix`).
// Each answers 404 while its configuration key is empty, as Synapse does.

import type { RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';

export interface WellKnownSettings {
  /** `global.well_known_client_name`: the client API's base URL, or null when not served. */
  readonly clientBaseUrl: string | null;
  /** `global.well_known_server_name`: `host[:port]` of federation, or null when not served. */
  readonly serverName: string | null;
}

function notServed(): HearthError {
  return HearthError.notFound('.well-known not available');
}

export function wellKnownRoutes(settings: WellKnownSettings): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'wellKnown',
      path: '/client',
      handler: () => {
        if (settings.clientBaseUrl === null) throw notServed();
        return { body: { 'm.homeserver': { base_url: settings.clientBaseUrl } } };
      },
    },
    {
      method: 'GET',
      api: 'wellKnown',
      path: '/server',
      handler: () => {
        if (settings.serverName === null) throw notServed();
        return { body: { 'm.server': settings.serverName } };
      },
    },
  ];
}
