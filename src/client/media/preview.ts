// GET /_chat/client/v1/media/preview_url (spec 1.11) and the legacy /_chat/media/{r0,v3,v1}/
// preview_url, both authenticated: the preview of a URL (media/url-preview.ts). Mounted only when
// media_api.url_preview.enabled; otherwise unknown, as on Synapse with previews off.

import type { HttpRequest, RouteDef } from '../../http/route.js';
import type { UrlPreviewService } from '../../media/url-preview.js';
import { HearthError } from '../../protocol/errors.js';

function single(req: HttpRequest, name: string): string | undefined {
  const v = req.query[name];
  return Array.isArray(v) ? v[0] : v;
}

export function previewRoutes(deps: { preview: UrlPreviewService }): RouteDef[] {
  const handler: RouteDef['handler'] = async (req) => {
    if (req.requester === undefined) throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
    const url = single(req, 'url');
    if (url === undefined || url === '') throw new HearthError(400, 'M_MISSING_PARAM', 'Missing url parameter');
    const ts = single(req, 'ts');
    if (ts !== undefined && !/^\d{1,15}$/.test(ts)) throw HearthError.invalidParam('ts must be a timestamp in milliseconds');
    return { body: await deps.preview.preview(req.requester.userId, url, ts === undefined ? undefined : Number(ts)) };
  };
  return [
    { method: 'GET', api: 'media', versions: ['r0', 'v3', 'v1'], path: '/preview_url', handler },
    { method: 'GET', api: 'client', versions: ['v1'], path: '/media/preview_url', handler },
  ];
}
