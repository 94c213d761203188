// Unpadded base64 (spec appendices, "Unpadded Base64"): RFC 4648 base64 with the trailing `=`
// padding removed. The standard alphabet is used for keys, signatures and hashes; the URL-safe
// alphabet for event ids from room version 4 on.

export type Base64Alphabet = 'standard' | 'url';

const STANDARD_CHARS = /^[A-Za-z0-9+/]*$/;
const URL_CHARS = /^[A-Za-z0-9_-]*$/;

function bytesView(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Standard-alphabet unpadded base64 of `bytes`. */
export function encodeBase64(bytes: Uint8Array): string {
  const padded = bytesView(bytes).toString('base64');
  let end = padded.length;
  while (end > 0 && padded.charCodeAt(end - 1) === 61 /* = */) end--;
  return end === padded.length ? padded : padded.slice(0, end);
}

/** URL-safe unpadded base64 of `bytes` (`-` and `_` instead of `+` and `/`). */
export function encodeBase64Url(bytes: Uint8Array): string {
  // Node's base64url encoder never pads.
  return bytesView(bytes).toString('base64url');
}

/**
 * Decodes padded or unpadded base64 of `alphabet`, leniently: characters of the other alphabet
 * are read as their counterparts and any other stray character is skipped. For trusted input
 * (configuration, our own data); use `decodeBase64Strict` for anything a peer sent.
 */
export function decodeBase64(text: string, alphabet: Base64Alphabet = 'standard'): Uint8Array {
  return Buffer.from(text, alphabet === 'url' ? 'base64url' : 'base64');
}

/**
 * Decodes padded or unpadded base64 of `alphabet`, or returns null when `text` holds a character
 * outside the alphabet, misplaced padding, or a length no byte string encodes to.
 */
export function decodeBase64Strict(text: string, alphabet: Base64Alphabet = 'standard'): Uint8Array | null {
  let body = text;
  if (body.length > 0 && body.charCodeAt(body.length - 1) === 61 /* = */) {
    // Padding, when present, must complete the last quantum exactly.
    if (body.length % 4 !== 0) return null;
    body = body.endsWith('==') ? body.slice(0, -2) : body.slice(0, -1);
  }
  if (body.length % 4 === 1) return null;
  if (!(alphabet === 'url' ? URL_CHARS : STANDARD_CHARS).test(body)) return null;
  return Buffer.from(body, alphabet === 'url' ? 'base64url' : 'base64');
}
