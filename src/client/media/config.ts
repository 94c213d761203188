// GET /_chat/media/{r0,v3,v1}/config and the authenticated GET /_chat/client/v1/media/config: the
// largest upload the server accepts, from media_api.max_file_size_bytes. With no limit (0) the key
// is left out, which the spec reads as "unknown".

import type { RouteDef } from '../../http/route.js';

export function mediaConfigRoutes(deps: { maxUploadBytes: number }): RouteDef[] {
  const handler: RouteDef['handler'] = () => ({ body: deps.maxUploadBytes > 0 ? { 'm.upload.size': deps.maxUploadBytes } : {} });
  return [
    { method: 'GET', api: 'media', versions: ['r0', 'v3', 'v1'], path: '/config', handler },
    { method: 'GET', api: 'client', versions: ['v1'], path: '/media/config', handler },
  ];
}
