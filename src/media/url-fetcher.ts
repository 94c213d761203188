// Fetches the pages and images of URL previews: URLs users chose, so the server must not be
// turned against its own network. The host is resolved first and refused when any of its
// addresses is blacklisted (and not whitelisted); the connection then goes to the address checked,
// never to a second resolution that could answer otherwise. Redirects are followed a few times,
// each hop checked the same way; a body larger than the limit is cut off and refused; each hop has
// a time limit.

import { lookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate, type ZlibOptions } from 'node:zlib';
import { HearthError } from '../protocol/errors.js';

/** Redirects followed at most, per URL. */
export const MAX_REDIRECTS = 5;

/** Addresses never fetched, whatever the whitelist says (as Synapse). */
const ALWAYS_BLOCKED = ['0.0.0.0', '::'];

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

export interface UrlFetcherOptions {
  /** `address/prefix` ranges never connected to... */
  readonly blacklist: readonly string[];
  /** ...unless one of these covers the address. */
  readonly whitelist: readonly string[];
  /** Largest body read, in bytes. */
  readonly maxBytes: number;
  /** Time limit of each request (connection, headers and body). */
  readonly timeoutMs: number;
  readonly userAgent: string;
  /** Every address of a host name; by default the system resolver's. */
  readonly resolve?: (host: string) => Promise<readonly ResolvedAddress[]>;
}

export interface FetchedUrl {
  /** Where the body came from, after redirects. */
  readonly url: URL;
  /** The media type, lower-cased, without parameters; undefined when not given. */
  readonly mediaType: string | undefined;
  /** The Content-Type header as sent (for its charset). */
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

function rangeList(ranges: readonly string[]): BlockList {
  const list = new BlockList();
  for (const range of ranges) {
    const [address = '', prefix] = range.split('/');
    const family = isIP(address);
    if (family === 0) throw new Error(`not an IP address or CIDR range: ${range}`);
    list.addSubnet(address, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** `::ffff:10.0.0.1` as `10.0.0.1`: an IPv4 address in IPv6 dress is judged as the IPv4 address it is. */
function unmapped(address: string): string {
  const m = /^::ffff:(.+)$/i.exec(address);
  if (m === null) return address;
  if (isIP(m[1]!) === 4) return m[1]!;
  // ::ffff:a00:1, the same in hex.
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(m[1]!);
  if (hex === null) return address;
  const hi = parseInt(hex[1]!, 16);
  const lo = parseInt(hex[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Which addresses may be connected to. */
export class AddressFilter {
  private readonly blocked: BlockList;
  private readonly allowed: BlockList;
  private readonly always = new Set(ALWAYS_BLOCKED);

  constructor(blacklist: readonly string[], whitelist: readonly string[]) {
    this.blocked = rangeList(blacklist);
    this.allowed = rangeList(whitelist);
  }

  allows(address: string): boolean {
    const plain = unmapped(address);
    const family = isIP(plain);
    if (family === 0 || this.always.has(plain)) return false;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    return !this.blocked.check(plain, type) || this.allowed.check(plain, type);
  }
}

async function systemResolve(host: string): Promise<readonly ResolvedAddress[]> {
  const found = await lookup(host, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

const blocked = () => new HearthError(403, 'M_UNKNOWN', 'IP address blocked');
const failed = (why: string) => new HearthError(502, 'M_UNKNOWN', `Failed to download content: ${why}`);

export class UrlFetcher {
  private readonly filter: AddressFilter;
  private readonly resolve: (host: string) => Promise<readonly ResolvedAddress[]>;

  constructor(private readonly options: UrlFetcherOptions) {
    this.filter = new AddressFilter(options.blacklist, options.whitelist);
    this.resolve = options.resolve ?? systemResolve;
  }

  /**
   * GETs an http(s) URL, following redirects. 403 when a hop's host has a blocked address; 502
   * M_TOO_LARGE past the size limit; 502 M_UNKNOWN when the host cannot be resolved or reached,
   * answers other than 2xx, redirects too often or elsewhere than http(s), or takes too long.
   */
  async fetch(start: URL, accept: string): Promise<FetchedUrl> {
    let url = start;
    for (let hop = 0; ; hop++) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw failed(`cannot follow a redirect to ${url.protocol}`);
      const target = await this.checkedAddress(url.hostname);
      const res = await this.get(url, target, accept);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && status !== 304) {
        res.destroy();
        const location = res.headers.location;
        if (location === undefined) throw failed(`redirect (${status}) without a Location`);
        if (hop >= MAX_REDIRECTS) throw failed('too many redirects');
        try {
          url = new URL(location, url);
        } catch {
          throw failed('redirect to an invalid URL');
        }
        continue;
      }
      if (status < 200 || status >= 300) {
        res.destroy();
        throw failed(`the server answered ${status}`);
      }
      const body = await decoded(await this.read(res), res.headers['content-encoding'], this.options.maxBytes);
      const contentType = res.headers['content-type'];
      const mediaType = contentType?.split(';')[0]!.trim().toLowerCase();
      return { url, mediaType: mediaType === '' ? undefined : mediaType, contentType, body };
    }
  }

  /** The address to connect to for `hostname`: every one it resolves to must be allowed. */
  private async checkedAddress(hostname: string): Promise<ResolvedAddress> {
    const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    const family = isIP(host);
    if (family !== 0) {
      if (!this.filter.allows(host)) throw blocked();
      return { address: host, family: family === 6 ? 6 : 4 };
    }
    let found: readonly ResolvedAddress[];
    try {
      found = await this.resolve(host);
    } catch {
      throw failed(`cannot resolve ${host}`);
    }
    if (found.length === 0) throw failed(`cannot resolve ${host}`);
    if (found.some((a) => !this.filter.allows(a.address))) throw blocked();
    return found[0]!;
  }

  private get(url: URL, target: ResolvedAddress, accept: string): Promise<IncomingMessage> {
    // The connection goes to the address checked, whatever the name would resolve to now.
    const pinned: LookupFunction = (_host, options, callback) => {
      if (options.all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, [target]);
      else callback(null, target.address, target.family);
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, {
        method: 'GET',
        agent: false,
        lookup: pinned,
        headers: {
          'user-agent': this.options.userAgent,
          accept,
          'accept-language': 'en',
          'accept-encoding': 'gzip, deflate, br',
        },
      });
      const timer = setTimeout(() => req.destroy(failed('timed out')), this.options.timeoutMs);
      req.once('close', () => clearTimeout(timer));
      req.once('response', (res) => {
        // The timer runs on through the body; its errors are read()'s to report.
        res.once('error', () => undefined);
        resolve(res);
      });
      req.on('error', (err) => reject(err instanceof HearthError ? err : failed(err.message)));
      req.end();
    });
  }

  private read(res: IncomingMessage): Promise<Buffer> {
    const max = this.options.maxBytes;
    const length = Number(res.headers['content-length']);
    if (Number.isFinite(length) && length > max) {
      res.destroy();
      return Promise.reject(tooLarge(max));
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > max) {
          res.destroy();
          reject(tooLarge(max));
          return;
        }
        chunks.push(chunk);
      });
      res.once('end', () => resolve(Buffer.concat(chunks)));
      res.once('close', () => reject(failed('the connection closed early')));
      res.once('error', (err) => reject(err instanceof HearthError ? err : failed(err.message)));
    });
  }
}

function tooLarge(max: number): HearthError {
  return new HearthError(502, 'M_TOO_LARGE', `The content is larger than the ${max} bytes allowed`);
}

const DECOMPRESSORS: Readonly<Record<string, (data: Buffer, options: ZlibOptions) => Promise<Buffer>>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/** The body with its Content-Encoding undone, no larger than `max` once undone. */
async function decoded(body: Buffer, encoding: string | undefined, max: number): Promise<Buffer> {
  const e = encoding?.trim().toLowerCase();
  if (e === undefined || e === '' || e === 'identity') return body;
  const decompress = Object.hasOwn(DECOMPRESSORS, e) ? DECOMPRESSORS[e]! : undefined;
  if (decompress === undefined) throw failed(`unknown content encoding ${e}`);
  try {
    return await decompress(body, { maxOutputLength: max });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(max);
    throw failed('the content could not be decompressed');
  }
}
