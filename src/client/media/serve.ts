// Sending media and thumbnails: the headers that keep a browser from running what it is given
// (a sandboxing Content-Security-Policy, nosniff, `inline` only for types safe to show), caching,
// and byte ranges (RFC 9110 14) for players and resumed downloads.

import { createReadStream } from 'node:fs';
import type { HttpRequest, HttpResponse } from '../../http/route.js';
import { contentDisposition } from '../../media/disposition.js';
import type { MediaFile } from '../../media/service.js';

const CSP = "sandbox; default-src 'none'; script-src 'none'; plugin-types application/pdf; style-src 'unsafe-inline'; media-src 'self'; object-src 'self';";

/** The file as a reply: whole (200), a range of it (206), or 416 for a range it does not have. */
export function serveFile(req: HttpRequest, file: MediaFile, fileName: string | undefined): HttpResponse {
  const baseType = file.contentType.split(';')[0]!.trim().toLowerCase();
  // Text is served as UTF-8 unless it says otherwise, so that a browser never guesses.
  const contentType = baseType.startsWith('text/') && !/charset=/i.test(file.contentType) ? `${file.contentType}; charset=utf-8` : file.contentType;
  const disposition = contentDisposition(file.contentType, fileName ?? file.uploadName ?? undefined);
  const headers: Record<string, string> = {
    'content-type': contentType,
    'content-disposition': disposition,
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
    'cross-origin-resource-policy': 'cross-origin',
    'cache-control': 'public, max-age=86400, s-maxage=86400',
    'accept-ranges': 'bytes',
  };
  const range = parseRange(req.headers['range'], file.size);
  if (range === 'unsatisfiable') {
    return { status: 416, headers: { ...headers, 'content-range': `bytes */${file.size}`, 'content-type': 'application/json' }, body: JSON.stringify({ errcode: 'M_UNKNOWN', error: 'Range not satisfiable' }) };
  }
  if (range === undefined) {
    return { status: 200, headers: { ...headers, 'content-length': String(file.size) }, body: createReadStream(file.path) };
  }
  const [start, end] = range;
  return {
    status: 206,
    headers: { ...headers, 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${file.size}` },
    body: createReadStream(file.path, { start, end }),
  };
}

/**
 * One byte range of `Range: bytes=...` as [start, end] (inclusive); undefined to send it all (no
 * header, or one this server does not take: several ranges, other units); 'unsatisfiable' when
 * it starts past the end.
 */
function parseRange(header: string | string[] | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (typeof header !== 'string') return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    // The last N bytes.
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  if (end < start) return undefined;
  return [start, end];
}
