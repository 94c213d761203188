// Server-side key backup routes: /room_keys/version[/{version}] and
// /room_keys/keys[/{roomId}[/{sessionId}]]?version=.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import { HearthError } from '../../protocol/errors.js';
import { parseKeysBody, type KeyBackupService, type KeySelection } from '../../users/key-backup.js';
import { body, missingParam, requesterOf } from '../user-data/fields.js';

const VERSIONS = ['r0', 'v3'] as const;

function route(method: RouteDef['method'], path: string, handler: RouteDef['handler']): RouteDef {
  return { method, api: 'client', versions: VERSIONS, path, handler };
}

/** The `version` query parameter every /room_keys/keys request names. */
function versionParam(req: HttpRequest): string {
  const v = req.query['version'];
  if (Array.isArray(v)) throw HearthError.invalidParam("'version' may be given once");
  if (v === undefined) throw missingParam('version');
  return v;
}

function selection(req: HttpRequest): KeySelection {
  return { roomId: req.params['roomId'], sessionId: req.params['sessionId'] };
}

export function roomKeyRoutes(deps: { backups: KeyBackupService }): RouteDef[] {
  const { backups } = deps;
  const keysRoutes = (path: string): RouteDef[] => [
    route('GET', path, async (req) => ({
      body: await backups.getKeys(requesterOf(req).userId, versionParam(req), selection(req)),
    })),
    route('PUT', path, async (req) => {
      const userId = requesterOf(req).userId;
      const version = versionParam(req);
      return { body: await backups.putKeys(userId, version, parseKeysBody(body(req), selection(req))) };
    }),
    route('DELETE', path, async (req) => ({
      body: await backups.deleteKeys(requesterOf(req).userId, versionParam(req), selection(req)),
    })),
  ];
  return [
    route('POST', '/room_keys/version', async (req) => ({ body: await backups.createVersion(requesterOf(req).userId, body(req)) })),
    route('GET', '/room_keys/version', async (req) => ({ body: await backups.versionInfo(requesterOf(req).userId, undefined) })),
    route('GET', '/room_keys/version/:version', async (req) => ({
      body: await backups.versionInfo(requesterOf(req).userId, req.params['version']!),
    })),
    route('PUT', '/room_keys/version/:version', async (req) => ({
      body: await backups.updateVersion(requesterOf(req).userId, req.params['version']!, body(req)),
    })),
    route('DELETE', '/room_keys/version/:version', async (req) => ({
      body: await backups.deleteVersion(requesterOf(req).userId, req.params['version']!),
    })),
    ...keysRoutes('/room_keys/keys'),
    ...keysRoutes('/room_keys/keys/:roomId'),
    ...keysRoutes('/room_keys/keys/:roomId/:sessionId'),
  ];
}
