// URL previews (`preview_url`), as Synapse makes them: the page is fetched (url-fetcher.ts, which
// keeps the server off its own network), an HTML page's Open Graph data read (open-graph.ts), and
// the image it names fetched the same way and kept as this server's media, so that clients show it
// from an mxc URI and never contact the site themselves. A URL of an image is its own preview;
// other types preview as {}. Previews are kept in memory for an hour; requests for a URL being
// fetched share the fetch.

import { Readable } from 'node:stream';
import { HearthError } from '../protocol/errors.js';
import type { MediaService } from './service.js';
import { decodeHtml, openGraph } from './open-graph.js';
import { imageSize } from './thumbnailer.js';
import type { FetchedUrl, UrlFetcher } from './url-fetcher.js';

/** How long a preview is kept (as Synapse). */
export const PREVIEW_TTL_MS = 60 * 60_000;
/** Previews kept at most; past it the oldest go. */
const MAX_CACHED = 1000;

const PAGE_ACCEPT = 'text/html,application/xhtml+xml,image/*;q=0.9,*/*;q=0.8';
const IMAGE_ACCEPT = 'image/*';
const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);

export type Preview = Record<string, string | number>;

/** URL parts a blacklist entry names (globs or `^regex`es); null: any (media_api.url_preview.url_blacklist). */
export interface UrlPattern {
  readonly scheme: string | null;
  readonly netloc: string | null;
  readonly path: string | null;
  readonly query: string | null;
}

export interface UrlPreviewOptions {
  readonly fetcher: UrlFetcher;
  readonly media: MediaService;
  readonly urlBlacklist: readonly UrlPattern[];
  readonly log: { warn(message: string, details?: object): void };
  readonly now?: () => number;
}

/** A glob (`*`, `?`, matching the whole value) or `^regex` (matching from the start), as Synapse reads them. */
function partMatcher(pattern: string): RegExp {
  if (pattern.startsWith('^')) return new RegExp(pattern);
  const body = pattern.replace(/[.+^${}()|[\]\\*?]/g, (c) => (c === '*' ? '.*' : c === '?' ? '.' : `\\${c}`));
  return new RegExp(`^${body}$`, 's');
}

type UrlPart = keyof UrlPattern;

function urlPart(url: URL, part: UrlPart): string {
  switch (part) {
    case 'scheme':
      return url.protocol.slice(0, -1);
    case 'netloc':
      return url.host;
    case 'path':
      return url.pathname;
    case 'query':
      return url.search.slice(1);
  }
}

export class UrlPreviewService {
  private readonly now: () => number;
  private readonly blacklist: readonly (readonly [UrlPart, RegExp])[][];
  /** Previews made, by URL, oldest first. */
  private readonly cache = new Map<string, { readonly preview: Preview; readonly expires: number }>();
  private readonly making = new Map<string, Promise<Preview>>();

  constructor(private readonly options: UrlPreviewOptions) {
    this.now = options.now ?? Date.now;
    this.blacklist = options.urlBlacklist.map((entry) =>
      (Object.keys(entry) as UrlPart[]).flatMap((part) => {
        const pattern = entry[part];
        return pattern === null ? [] : [[part, partMatcher(pattern)] as const];
      }),
    );
  }

  /**
   * The preview of `text` for `userId`, whose fetched image becomes theirs. 400 M_INVALID_PARAM
   * for anything but an http(s) URL; 403 for a blacklisted URL or address; 502 when the page
   * cannot be had. `ts` (a time the client would like the preview as of) is answered with the
   * preview kept, if any: the spec lets a server give a newer one.
   */
  async preview(userId: string, text: string, _ts?: number): Promise<Preview> {
    const url = this.checked(text);
    const key = url.href;
    const kept = this.cache.get(key);
    if (kept !== undefined) {
      if (kept.expires > this.now()) return kept.preview;
      this.cache.delete(key);
    }
    let pending = this.making.get(key);
    if (pending === undefined) {
      pending = this.make(userId, url).finally(() => this.making.delete(key));
      this.making.set(key, pending);
    }
    const made = await pending;
    if (!this.cache.has(key)) {
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { preview: made, expires: this.now() + PREVIEW_TTL_MS });
    }
    return made;
  }

  private checked(text: string): URL {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw HearthError.invalidParam('url is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw HearthError.invalidParam('Only http and https URLs can be previewed');
    if (url.hostname === '') throw HearthError.invalidParam('url has no host');
    if (this.isBlacklisted(url)) throw new HearthError(403, 'M_UNKNOWN', 'URL blocked');
    url.hash = '';
    return url;
  }

  private isBlacklisted(url: URL): boolean {
    return this.blacklist.some((entry) => entry.length > 0 && entry.every(([part, re]) => re.test(urlPart(url, part))));
  }

  private async make(userId: string, url: URL): Promise<Preview> {
    const page = await this.options.fetcher.fetch(url, PAGE_ACCEPT);
    if (page.mediaType?.startsWith('image/')) {
      return this.store(userId, page).catch((err: unknown) => {
        // Fetched but not kept: larger than uploads may be, say.
        if (err instanceof HearthError && err.status === 413) throw new HearthError(502, 'M_TOO_LARGE', err.message);
        throw err;
      });
    }
    if (page.mediaType === undefined || !HTML_TYPES.has(page.mediaType)) return {};
    const og: Preview = openGraph(decodeHtml(page.body, page.contentType), page.url);
    const imageUrl = og['og:image'];
    if (typeof imageUrl !== 'string') return og;
    try {
      const image = new URL(imageUrl);
      if (this.isBlacklisted(image)) throw new HearthError(403, 'M_UNKNOWN', 'URL blocked');
      const fetched = await this.options.fetcher.fetch(image, IMAGE_ACCEPT);
      if (!fetched.mediaType?.startsWith('image/')) throw new HearthError(502, 'M_UNKNOWN', `not an image: ${fetched.mediaType ?? 'no type'}`);
      // The page's own width and height give way to the image's.
      delete og['og:image:width'];
      delete og['og:image:height'];
      return { ...og, ...(await this.store(userId, fetched)) };
    } catch (err) {
      this.options.log.warn('the image of a URL preview could not be fetched', { url: imageUrl, err: err instanceof Error ? err.message : String(err) });
      for (const k of ['og:image', 'og:image:type', 'og:image:width', 'og:image:height', 'og:image:secure_url']) delete og[k];
      return og;
    }
  }

  /** Keeps a fetched image as the user's media; answers its preview keys. */
  private async store(userId: string, image: FetchedUrl): Promise<Preview> {
    const name = fileName(image.url);
    const uri = await this.options.media.upload(userId, Readable.from([image.body]), {
      contentType: image.mediaType,
      fileName: name === '' ? undefined : name,
      contentLength: image.body.length,
    });
    const size = await imageSize(image.body);
    return {
      'og:image': uri,
      'og:image:type': image.mediaType!,
      'matrix:image:size': image.body.length,
      ...(size !== undefined ? { 'og:image:width': size.width, 'og:image:height': size.height } : {}),
    };
  }
}

/** The last segment of a URL's path, as the name of the media kept from it. */
function fileName(url: URL): string {
  const last = url.pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(last).slice(0, 255);
  } catch {
    return last.slice(0, 255);
  }
}
