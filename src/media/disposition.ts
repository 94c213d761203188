// How a piece of media is offered to a browser: in place only for types it shows without running
// anything (as Synapse's list), as a download otherwise; the file name UTF-8 encoded (RFC 6266).

const INLINE_TYPES = new Set([
  'text/css', 'text/plain', 'text/csv', 'application/json', 'application/ld+json',
  'image/jpeg', 'image/gif', 'image/png', 'image/apng', 'image/webp', 'image/avif',
  'video/mp4', 'video/webm', 'video/ogg', 'video/quicktime',
  'audio/mp4', 'audio/webm', 'audio/aac', 'audio/mpeg', 'audio/ogg', 'audio/wave', 'audio/wav', 'audio/x-wav', 'audio/x-pn-wav', 'audio/flac', 'audio/x-flac',
]);

/** The Content-Disposition of media of this type and name. */
export function contentDisposition(contentType: string, fileName: string | undefined): string {
  const base = contentType.split(';')[0]!.trim().toLowerCase();
  return `${INLINE_TYPES.has(base) ? 'inline' : 'attachment'}${fileName ? `; filename*=utf-8''${encodeURIComponent(fileName)}` : ''}`;
}

/** The file name a Content-Disposition gives (`filename*` first), if any. */
export function fileNameOf(disposition: string | undefined): string | undefined {
  if (disposition === undefined) return undefined;
  const extended = /filename\*\s*=\s*(?:utf-8|UTF-8)''([^;]+)/.exec(disposition);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]!.trim());
    } catch {
      return undefined;
    }
  }
  const plain = /filename\s*=\s*(?:"([^"]*)"|([^;]+))/i.exec(disposition);
  const name = plain?.[1] ?? plain?.[2]?.trim();
  return name === '' ? undefined : name;
}
