// The federation media API both ways. Serving: `GET /federation/v1/media/download/{mediaId}` and
// `/thumbnail/{mediaId}` answer this server's media to other servers as multipart/mixed (a JSON
// part, then the file). Fetching: another server's media is asked of its origin the same way,
// falling back to the legacy `/media/v3/download/{origin}/{mediaId}?allow_remote=false` when
// the origin does not know the federation path. A file part given as a Location is not followed.

import { createReadStream } from 'node:fs';
import type { HttpRequest, RouteDef } from '../http/route.js';
import { contentDisposition, fileNameOf } from '../media/disposition.js';
import { boundaryOf, multipartBody, newBoundary, readMultipartFile } from '../media/multipart.js';
import type { MediaFile, MediaService, RemoteMediaSource } from '../media/service.js';
import { HearthError } from '../protocol/errors.js';
import { isJsonObject } from '../protocol/json.js';
import type { FederationClient, FederationStreamResponse } from './client.js';

function single(req: HttpRequest, name: string): string | undefined {
  const v = req.query[name];
  return Array.isArray(v) ? v[0] : v;
}

function multipartReply(file: MediaFile) {
  const boundary = newBoundary();
  return {
    status: 200,
    headers: { 'content-type': `multipart/mixed; boundary=${boundary}` },
    body: multipartBody(boundary, { 'Content-Type': file.contentType, 'Content-Disposition': contentDisposition(file.contentType, file.uploadName ?? undefined) }, createReadStream(file.path)),
  };
}

export function federationMediaRoutes(deps: { media: MediaService; serverName: string }): RouteDef[] {
  const { media, serverName } = deps;
  const wait = (req: HttpRequest) => {
    const v = single(req, 'timeout_ms');
    return v !== undefined && /^\d{1,9}$/.test(v) ? Number(v) : undefined;
  };
  const positive = (req: HttpRequest, name: string) => {
    const v = single(req, name);
    if (v === undefined || !/^\d{1,9}$/.test(v) || Number(v) < 1) throw HearthError.invalidParam(`${name} must be a positive integer`);
    return Math.min(Number(v), 4096);
  };
  return [
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/media/download/:mediaId',
      auth: 'server',
      handler: async (req) => multipartReply(await media.download(serverName, req.params['mediaId'] ?? '', wait(req))),
    },
    {
      method: 'GET',
      api: 'federation',
      versions: ['v1'],
      path: '/media/thumbnail/:mediaId',
      auth: 'server',
      handler: async (req) => {
        const method = single(req, 'method') ?? 'scale';
        if (method !== 'crop' && method !== 'scale') throw HearthError.invalidParam('method must be "crop" or "scale"');
        const file = await media.thumbnail(
          serverName,
          req.params['mediaId'] ?? '',
          { width: positive(req, 'width'), height: positive(req, 'height'), method, animated: single(req, 'animated') === 'true' },
          wait(req),
        );
        return multipartReply(file);
      },
    },
  ];
}

function header(res: { headers: Readonly<Record<string, string | string[] | undefined>> }, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function errcodeOf(res: FederationStreamResponse): string | undefined {
  return isJsonObject(res.json) && typeof res.json['errcode'] === 'string' ? res.json['errcode'] : undefined;
}

/** The origin does not serve the federation media path (an older server). */
function unrecognized(res: FederationStreamResponse): boolean {
  return res.status === 405 || ((res.status === 404 || res.status === 400) && (errcodeOf(res) === 'M_UNRECOGNIZED' || res.json === undefined));
}

/** Fetches other servers' media with the federation client. */
export function remoteMediaSource(client: Pick<FederationClient, 'requestStream'>): RemoteMediaSource {
  return {
    async fetch(origin, mediaId, timeoutMs) {
      const id = encodeURIComponent(mediaId);
      let res: FederationStreamResponse;
      try {
        res = await client.requestStream({ destination: origin, method: 'GET', path: `/federation/v1/media/download/${id}`, query: { timeout_ms: String(timeoutMs - 10_000 > 0 ? timeoutMs - 10_000 : 0) }, timeoutMs });
        if (res.body === undefined && unrecognized(res)) {
          res = await client.requestStream({
            destination: origin,
            method: 'GET',
            path: `/media/v3/download/${encodeURIComponent(origin)}/${id}`,
            query: { allow_remote: 'false', timeout_ms: String(Math.max(0, timeoutMs - 10_000)) },
            timeoutMs,
          });
          if (res.body !== undefined) {
            const type = header(res, 'content-type');
            const name = fileNameOf(header(res, 'content-disposition'));
            return { ...(type ? { contentType: type } : {}), ...(name ? { fileName: name } : {}), body: res.body };
          }
        }
      } catch (err) {
        throw new HearthError(502, 'M_UNKNOWN', `The media could not be fetched from ${origin}: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (res.body === undefined) {
        if (res.status === 404) throw HearthError.notFound('Media not found');
        if (errcodeOf(res) === 'M_NOT_YET_UPLOADED') throw new HearthError(504, 'M_NOT_YET_UPLOADED', 'The media has not been uploaded yet');
        throw new HearthError(502, 'M_UNKNOWN', `${origin} answered ${res.status} for its media`);
      }
      const boundary = boundaryOf(header(res, 'content-type'));
      if (boundary === undefined) {
        res.body.destroy();
        throw new HearthError(502, 'M_UNKNOWN', `${origin} answered its media without a multipart body`);
      }
      let part;
      try {
        part = await readMultipartFile(res.body as AsyncIterable<Buffer>, boundary);
      } catch (err) {
        res.body.destroy();
        throw new HearthError(502, 'M_UNKNOWN', `${origin} answered a malformed multipart body: ${err instanceof Error ? err.message : String(err)}`);
      }
      // A Location would have this server fetch an address another server chose (which could be
      // one inside this server's network): not followed.
      if (part.headers['location'] !== undefined) {
        res.body.destroy();
        throw new HearthError(502, 'M_UNKNOWN', `${origin} answered its media with a Location, which this server does not follow`);
      }
      const type = part.headers['content-type'];
      const name = fileNameOf(part.headers['content-disposition']);
      return { ...(type ? { contentType: type } : {}), ...(name ? { fileName: name } : {}), body: part.body };
    },
  };
}
