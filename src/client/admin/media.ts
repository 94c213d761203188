// The admin API's media endpoints (Synapse's paths and shapes): quarantine of one item, of a
// room's media and of a user's uploads (and lifting it), what a room refers to, a user's uploads,
// one item's details, and deletion (one item, a user's, or this server's older than a date).

import type { RouteDef } from '../../http/route.js';
import type { MediaService } from '../../media/service.js';
import { HearthError } from '../../protocol/errors.js';
import type { MediaOrder } from '../../storage/media/media.js';
import { param, query, queryInt, requester } from '../rooms/fields.js';

const ORDERS: readonly MediaOrder[] = ['media_id', 'upload_name', 'created_ts', 'media_length', 'media_type', 'quarantined_by'];

export function adminMediaRoutes(deps: { media: MediaService; serverName: string }): RouteDef[] {
  const { media } = deps;
  const route = (method: RouteDef['method'], path: string, handler: RouteDef['handler']): RouteDef => ({ method, api: 'admin', versions: ['v1'], path, body: method === 'GET' || method === 'DELETE' ? 'none' : 'json', handler });
  const localUser = (userId: string) => {
    if (!userId.endsWith(`:${deps.serverName}`)) throw HearthError.invalidParam('Only users of this server have uploads here');
    return userId;
  };
  const quarantineRoom: RouteDef['handler'] = async (req) => ({ body: { num_quarantined: await media.quarantineRoom(param(req, 'roomId'), requester(req).userId) } });
  const userMedia: RouteDef['handler'] = async (req) => {
    const userId = localUser(param(req, 'userId'));
    const orderBy = (query(req, 'order_by') ?? 'created_ts') as MediaOrder;
    if (!ORDERS.includes(orderBy)) throw HearthError.invalidParam(`order_by must be one of ${ORDERS.join(', ')}`);
    const dir = query(req, 'dir') ?? 'f';
    if (dir !== 'f' && dir !== 'b') throw HearthError.invalidParam('dir must be f or b');
    const from = queryInt(req, 'from', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = queryInt(req, 'limit', 100, 0, 1000);
    const { media: list, total } = await media.userMedia(userId, { from, limit, orderBy, dir });
    return { body: { media: list, total, ...(from + list.length < total ? { next_token: from + list.length } : {}) } };
  };
  return [
    route('POST', '/media/quarantine/:serverName/:mediaId', async (req) => {
      await media.quarantine(param(req, 'serverName'), param(req, 'mediaId'), requester(req).userId);
      return { body: {} };
    }),
    route('POST', '/media/unquarantine/:serverName/:mediaId', async (req) => {
      await media.quarantine(param(req, 'serverName'), param(req, 'mediaId'), null);
      return { body: {} };
    }),
    route('POST', '/room/:roomId/media/quarantine', quarantineRoom),
    route('POST', '/media/quarantine/:roomId', quarantineRoom),
    route('POST', '/quarantine_media/:roomId', quarantineRoom),
    route('POST', '/user/:userId/media/quarantine', async (req) => ({ body: { num_quarantined: await media.quarantineUser(localUser(param(req, 'userId')), requester(req).userId) } })),
    route('GET', '/room/:roomId/media', async (req) => ({ body: await media.mediaInRoom(param(req, 'roomId')) })),
    route('GET', '/users/:userId/media', userMedia),
    route('DELETE', '/users/:userId/media', async (req) => {
      const ids = await media.deleteUserMedia(localUser(param(req, 'userId')));
      return { body: { deleted_media: ids, total: ids.length } };
    }),
    route('GET', '/media/:serverName/:mediaId', async (req) => ({ body: { media_info: await media.info(param(req, 'serverName'), param(req, 'mediaId')) } })),
    route('DELETE', '/media/:serverName/:mediaId', async (req) => {
      const mediaId = param(req, 'mediaId');
      await media.delete(param(req, 'serverName'), mediaId);
      return { body: { deleted_media: [mediaId], total: 1 } };
    }),
    route('POST', '/media/delete', async (req) => {
      const before = query(req, 'before_ts');
      if (before === undefined || !/^\d{1,15}$/.test(before)) throw new HearthError(400, 'M_MISSING_PARAM', 'before_ts (milliseconds) is required');
      const sizeGt = queryInt(req, 'size_gt', 0, 0, Number.MAX_SAFE_INTEGER);
      const ids = await media.deleteBefore(Number(before), sizeGt);
      return { body: { deleted_media: ids, total: ids.length } };
    }),
    route('POST', '/media/:serverName/delete', async (req) => {
      if (param(req, 'serverName') !== deps.serverName) throw HearthError.invalidParam('Only media of this server can be deleted');
      const before = query(req, 'before_ts');
      if (before === undefined || !/^\d{1,15}$/.test(before)) throw new HearthError(400, 'M_MISSING_PARAM', 'before_ts (milliseconds) is required');
      const ids = await media.deleteBefore(Number(before), queryInt(req, 'size_gt', 0, 0, Number.MAX_SAFE_INTEGER));
      return { body: { deleted_media: ids, total: ids.length } };
    }),
  ];
}
