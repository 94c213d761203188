// Go-style duration strings ("168h0m0s", "1h30m", "500ms", "-1.5h"), the format Dendrite's
// configuration uses, converted to milliseconds.

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3, // U+00B5 micro sign
  'μs': 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

// One component: a decimal number (digits before or after the point, at least one) and a unit.
const COMPONENT = /(\d*)(?:\.(\d*))?([a-zµμ]+)/y;

/**
 * Parses a Go-style duration into whole milliseconds (sub-millisecond parts are rounded to the
 * nearest millisecond). Returns undefined when the text is not a duration. A bare "0" is allowed,
 * as in Go; any other number needs a unit.
 */
export function parseDuration(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  COMPONENT.lastIndex = 0;
  while (COMPONENT.lastIndex < rest.length) {
    const at = COMPONENT.lastIndex;
    const m = COMPONENT.exec(rest);
    if (m === null || m.index !== at) return undefined;
    const [, whole = '', frac, unit = ''] = m;
    if (whole === '' && (frac === undefined || frac === '')) return undefined;
    const scale = UNIT_MS[unit];
    if (scale === undefined) return undefined;
    total += Number(`${whole === '' ? '0' : whole}.${frac ?? '0'}`) * scale;
  }
  if (!Number.isFinite(total)) return undefined;
  const ms = Math.round(total);
  return sign * ms === 0 ? 0 : sign * ms; // never -0
}

/** Formats whole milliseconds the way Go prints durations: "168h0m0s", "1m30s", "500ms", "0s". */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms)) throw new RangeError(`not a whole number of milliseconds: ${ms}`);
  if (ms < 0) return `-${formatDuration(-ms)}`;
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const millis = ms % 60_000;
  const whole = Math.floor(millis / 1000);
  const frac = millis % 1000;
  const seconds = frac === 0 ? `${whole}` : `${whole}.${String(frac).padStart(3, '0').replace(/0+$/, '')}`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
