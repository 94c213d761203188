// Thumbnails with sharp (libvips): `crop` fills the box and cuts off what overflows, `scale` fits
// the image inside the box; neither enlarges. JPEG stays JPEG, other stills become PNG; an
// animated GIF or WebP asked for `animated` stays animated in its own format. An image over the
// pixel limit is refused from its header, before anything is decoded. At most
// `max_thumbnail_generators` run at once; the rest wait their turn.

import type { Metadata, default as Sharp } from 'sharp';
import { HearthError } from '../protocol/errors.js';

let loaded: Promise<typeof Sharp> | undefined;
/**
 * sharp, loaded on first use: libvips adds about 20 MB to the resident memory of a server that
 * never makes a thumbnail.
 */
function loadSharp(): Promise<typeof Sharp> {
  loaded ??= import('sharp').then((m) => {
    // libvips keeps a cache of decoded images and operations: not wanted in a long-running server.
    m.default.cache(false);
    return m.default;
  });
  return loaded;
}

/** Types a thumbnail is made of. */
export const THUMBNAILABLE = new Set(['image/jpeg', 'image/jpg', 'image/png', 'image/gif', 'image/webp']);

/** Images with more pixels than this (all frames together) are not thumbnailed (as Synapse's max_image_pixels). */
export const MAX_IMAGE_PIXELS = 32_000_000;

export type ThumbnailMethod = 'crop' | 'scale';

export interface ThumbnailRequest {
  readonly width: number;
  readonly height: number;
  readonly method: ThumbnailMethod;
  /** Keep an animated image's animation. */
  readonly animated: boolean;
}

export interface Thumbnail {
  readonly data: Buffer;
  readonly contentType: string;
  readonly width: number;
  readonly height: number;
  readonly animated: boolean;
}

export class Thumbnailer {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly maxConcurrent: number) {}

  /** A thumbnail of the file at `input` (of `contentType`); 400 or 413 when it cannot be made. */
  async make(input: string, contentType: string, req: ThumbnailRequest): Promise<Thumbnail> {
    if (!THUMBNAILABLE.has(contentType)) throw new HearthError(400, 'M_UNKNOWN', `Cannot make a thumbnail of ${contentType}`);
    await this.turn();
    try {
      return await render(input, contentType, req);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async turn(): Promise<void> {
    if (this.running < this.maxConcurrent) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
  }
}

async function render(input: string, contentType: string, req: ThumbnailRequest): Promise<Thumbnail> {
  const sharp = await loadSharp();
  const mayAnimate = req.animated && (contentType === 'image/gif' || contentType === 'image/webp');
  let meta: Metadata;
  try {
    meta = await sharp(input, { animated: mayAnimate, limitInputPixels: false }).metadata();
  } catch {
    throw new HearthError(400, 'M_UNKNOWN', 'The image could not be read');
  }
  const frames = mayAnimate ? (meta.pages ?? 1) : 1;
  const width = meta.width ?? 0;
  const frameHeight = meta.pageHeight ?? meta.height ?? 0;
  if (width * frameHeight * frames > MAX_IMAGE_PIXELS) throw HearthError.tooLarge('The image is too large to make a thumbnail of');
  const animated = frames > 1;
  try {
    let image = sharp(input, { animated, limitInputPixels: MAX_IMAGE_PIXELS });
    // Stills are turned upright as their EXIF orientation says.
    if (!animated) image = image.rotate();
    image = image.resize(req.width, req.height, { fit: req.method === 'crop' ? 'cover' : 'inside', withoutEnlargement: true });
    let outType: string;
    if (animated) {
      outType = contentType;
      image = contentType === 'image/gif' ? image.gif() : image.webp();
    } else if (contentType === 'image/jpeg' || contentType === 'image/jpg') {
      outType = 'image/jpeg';
      image = image.jpeg({ quality: 80 });
    } else {
      outType = 'image/png';
      image = image.png();
    }
    const { data, info } = await image.toBuffer({ resolveWithObject: true });
    return { data, contentType: outType, width: info.width, height: info.pageHeight ?? info.height, animated };
  } catch (err) {
    if (err instanceof HearthError) throw err;
    throw new HearthError(400, 'M_UNKNOWN', 'A thumbnail of the image could not be made');
  }
}

/** An image's width and height (upright, as EXIF orientation turns it), read from its header; undefined when unreadable. */
export async function imageSize(data: Buffer): Promise<{ width: number; height: number } | undefined> {
  const sharp = await loadSharp();
  try {
    const meta = await sharp(data, { limitInputPixels: false }).metadata();
    if (meta.width === undefined || meta.height === undefined) return undefined;
    const height = meta.pageHeight ?? meta.height;
    // Orientations 5 to 8 turn the image a quarter.
    return (meta.orientation ?? 1) >= 5 ? { width: height, height: meta.width } : { width: meta.width, height };
  } catch {
    return undefined;
  }
}
