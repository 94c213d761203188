// Byte sizes written as a number of bytes or with a suffix ("512mb", "1gb", "1.5 GiB").
// Suffixes are binary multiples (1kb = 1024 bytes), as in Dendrite's configuration.

const MULTIPLIER: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

const SIZE = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/;

/**
 * Parses a size into whole bytes (fractions of a byte are dropped). Accepts a non-negative number
 * or a string such as "1073741824", "512mb", "1gb", "1.5 GiB". Returns undefined for anything else.
 */
export function parseSize(value: string | number): number | undefined {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  }
  const m = SIZE.exec(value.trim().toLowerCase());
  if (m === null) return undefined;
  const multiplier = MULTIPLIER[m[2] ?? ''];
  if (multiplier === undefined) return undefined;
  const bytes = Math.floor(Number(m[1]) * multiplier);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** Formats bytes with the largest suffix that divides them exactly: "1gb", "512mb", "1000". */
export function formatSize(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`not a byte count: ${bytes}`);
  if (bytes === 0) return '0';
  for (const unit of ['tb', 'gb', 'mb', 'kb'] as const) {
    const multiplier = MULTIPLIER[unit]!;
    if (bytes % multiplier === 0) return `${bytes / multiplier}${unit}`;
  }
  return String(bytes);
}
