// The media repository's routes: uploads (`/_chat/media/{r0,v3}/upload`, `/v1/create` and
// `PUT /v3/upload/{serverName}/{mediaId}`), downloads and thumbnails both unauthenticated under
// `/_chat/media/{r0,v3}/` (as clients before spec 1.11 fetch them) and authenticated under
// `/_chat/client/v1/media/` (as newer ones do).

import type { Readable } from 'node:stream';
import type { HttpRequest, RouteDef } from '../../http/route.js';
import { DEFAULT_WAIT_MS, MAX_WAIT_MS, type MediaService, type UploadInfo } from '../../media/service.js';
import type { ThumbnailMethod } from '../../media/thumbnailer.js';
import { HearthError } from '../../protocol/errors.js';
import { serveFile } from './serve.js';

/** Thumbnail dimensions beyond this are not made (Synapse's limit too). */
const MAX_THUMBNAIL_SIDE = 4096;

function single(req: HttpRequest, name: string): string | undefined {
  const v = req.query[name];
  return Array.isArray(v) ? v[0] : v;
}

function uploadInfo(req: HttpRequest): UploadInfo {
  const type = req.headers['content-type'];
  const length = req.headers['content-length'];
  const fileName = single(req, 'filename');
  return {
    contentType: typeof type === 'string' && type !== '' ? type : undefined,
    fileName: fileName !== undefined && fileName !== '' ? fileName : undefined,
    contentLength: typeof length === 'string' && /^\d+$/.test(length) ? Number(length) : undefined,
  };
}

function requesterId(req: HttpRequest): string {
  if (req.requester === undefined) throw new HearthError(401, 'M_MISSING_TOKEN', 'Missing access token');
  return req.requester.userId;
}

/** `timeout_ms`: how long to wait for media not uploaded yet. */
function waitOf(req: HttpRequest): number {
  const v = single(req, 'timeout_ms');
  if (v === undefined) return DEFAULT_WAIT_MS;
  if (!/^\d{1,12}$/.test(v)) throw HearthError.invalidParam('timeout_ms must be a non-negative integer');
  return Math.min(Number(v), MAX_WAIT_MS);
}

/** `allow_remote=false`: another server's media only if kept here already (servers ask so of each other, to avoid loops). */
function allowRemote(req: HttpRequest): boolean {
  const v = single(req, 'allow_remote');
  if (v !== undefined && v !== 'true' && v !== 'false') throw HearthError.invalidParam('allow_remote must be true or false');
  return v !== 'false';
}

function dimension(req: HttpRequest, name: 'width' | 'height'): number {
  const v = single(req, name);
  if (v === undefined) throw new HearthError(400, 'M_MISSING_PARAM', `Missing ${name} parameter`);
  if (!/^\d{1,9}$/.test(v) || Number(v) < 1) throw HearthError.invalidParam(`${name} must be a positive integer`);
  return Math.min(Number(v), MAX_THUMBNAIL_SIDE);
}

export function mediaRoutes(deps: { media: MediaService }): RouteDef[] {
  const { media } = deps;
  const download: RouteDef['handler'] = async (req) => {
    const file = await media.download(req.params['serverName'] ?? '', req.params['mediaId'] ?? '', waitOf(req), allowRemote(req));
    return serveFile(req, file, req.params['fileName']);
  };
  const thumbnail: RouteDef['handler'] = async (req) => {
    const method = single(req, 'method') ?? 'scale';
    if (method !== 'crop' && method !== 'scale') throw HearthError.invalidParam('method must be "crop" or "scale"');
    const animated = single(req, 'animated');
    if (animated !== undefined && animated !== 'true' && animated !== 'false') throw HearthError.invalidParam('animated must be true or false');
    const file = await media.thumbnail(
      req.params['serverName'] ?? '',
      req.params['mediaId'] ?? '',
      { width: dimension(req, 'width'), height: dimension(req, 'height'), method: method as ThumbnailMethod, animated: animated === 'true' },
      waitOf(req),
      allowRemote(req),
    );
    return serveFile(req, file, undefined);
  };
  const legacy = ['r0', 'v3'];
  return [
    {
      method: 'POST',
      api: 'media',
      versions: ['r0', 'v3', 'v1'],
      path: '/upload',
      body: 'stream',
      rateLimit: 'media_create',
      handler: async (req) => ({ body: { content_uri: await media.upload(requesterId(req), req.body as Readable, uploadInfo(req)) } }),
    },
    {
      method: 'POST',
      api: 'media',
      versions: ['v1'],
      path: '/create',
      body: 'none',
      rateLimit: 'media_create',
      handler: async (req) => ({ body: await media.create(requesterId(req)) }),
    },
    {
      method: 'PUT',
      api: 'media',
      versions: legacy,
      path: '/upload/:serverName/:mediaId',
      body: 'stream',
      rateLimit: 'media_create',
      handler: async (req) => {
        await media.uploadTo(requesterId(req), req.params['serverName'] ?? '', req.params['mediaId'] ?? '', req.body as Readable, uploadInfo(req));
        return { body: {} };
      },
    },
    { method: 'GET', api: 'media', versions: legacy, path: '/download/:serverName/:mediaId', auth: 'none', handler: download },
    { method: 'GET', api: 'media', versions: legacy, path: '/download/:serverName/:mediaId/:fileName', auth: 'none', handler: download },
    { method: 'GET', api: 'media', versions: legacy, path: '/thumbnail/:serverName/:mediaId', auth: 'none', handler: thumbnail },
    { method: 'GET', api: 'client', versions: ['v1'], path: '/media/download/:serverName/:mediaId', auth: 'guest', handler: download },
    { method: 'GET', api: 'client', versions: ['v1'], path: '/media/download/:serverName/:mediaId/:fileName', auth: 'guest', handler: download },
    { method: 'GET', api: 'client', versions: ['v1'], path: '/media/thumbnail/:serverName/:mediaId', auth: 'guest', handler: thumbnail },
  ];
}
