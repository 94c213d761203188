// Value kinds of the key table: each turns a raw YAML value into its typed form or reports why it
// cannot, at the key path it was given, so one pass collects every problem of a file.

import { resolve } from 'node:path';
import { formatConnectionString, parseConnectionString } from './database.js';
import { parseDuration } from './duration.js';
import {
  type HostPort,
  isNatsAddress,
  isServerName,
  isUserId,
  parseAddressRange,
  parseBindAddress,
  parseClientBaseUrl,
} from './net.js';
import { parseSize } from './size.js';

export interface ConfigIssue {
  /** key path (`global.database.max_open_conns`, `media_api.thumbnail_sizes[1].method`) */
  path: string;
  message: string;
}

export interface KindContext {
  /** folder that relative paths are resolved against */
  readonly baseDir: string;
  /** global.data_dir, absolute, for defaults inside it; absent while that key itself is read */
  readonly dataDir?: string;
  error(path: string, message: string): void;
  warn(path: string, message: string): void;
}

export const INVALID: unique symbol = Symbol('invalid');
export type Parsed<T> = T | typeof INVALID;

export interface Kind<T> {
  /** the type as the docs name it */
  readonly label: string;
  parse(raw: unknown, at: string, ctx: KindContext): Parsed<T>;
}

/** A raw value as an error message shows it. */
export function describe(raw: unknown): string {
  if (typeof raw === 'string') {
    const shown = raw.length > 60 ? `${raw.slice(0, 57)}...` : raw;
    return JSON.stringify(shown);
  }
  if (raw === null || raw === undefined) return 'nothing';
  if (Array.isArray(raw)) return 'a list';
  if (typeof raw === 'object') return 'a mapping';
  return String(raw);
}

export function isMapping(raw: unknown): raw is Record<string, unknown> {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw);
}

function fail(ctx: KindContext, at: string, expectation: string, raw: unknown): typeof INVALID {
  ctx.error(at, `${expectation}, got ${describe(raw)}`);
  return INVALID;
}

/** A kind over strings only; `check` returns the typed value or undefined when the text is bad. */
function textKind<T>(label: string, expectation: string, check: (text: string, ctx: KindContext) => T | undefined): Kind<T> {
  return {
    label,
    parse(raw, at, ctx) {
      if (typeof raw !== 'string') return fail(ctx, at, expectation, raw);
      const value = check(raw, ctx);
      return value === undefined ? fail(ctx, at, expectation, raw) : value;
    },
  };
}

export const boolean: Kind<boolean> = {
  label: 'boolean',
  parse: (raw, at, ctx) => (typeof raw === 'boolean' ? raw : fail(ctx, at, 'must be true or false', raw)),
};

export function integer(min: number, max = Number.MAX_SAFE_INTEGER): Kind<number> {
  const bounded = max !== Number.MAX_SAFE_INTEGER;
  const expectation =
    min === max ? `must be ${min}`
    : bounded ? `must be an integer from ${min} to ${max}`
    : min === 1 ? 'must be a positive integer'
    : min === 0 ? 'must be a non-negative integer'
    : `must be an integer ≥ ${min}`;
  return {
    label: min === max ? `${min}` : bounded ? `integer ${min}–${max}` : `integer ≥ ${min}`,
    parse(raw, at, ctx) {
      const ok = typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= min && raw <= max;
      return ok ? raw : fail(ctx, at, expectation, raw);
    },
  };
}

/** Any string; `pattern` narrows it, described by `expectation`. */
export function string(pattern?: RegExp, expectation = 'must be a string'): Kind<string> {
  return textKind('string', expectation, (text) => (pattern === undefined || pattern.test(text) ? text : undefined));
}

export function oneOf<const T extends string>(values: readonly T[]): Kind<T> {
  const set: ReadonlySet<string> = new Set(values);
  return textKind(values.join(' | '), `must be one of ${values.join(', ')}`, (text) =>
    set.has(text) ? (text as T) : undefined,
  );
}

/**
 * One of `values`, written as text or as a whole number (YAML reads `version: 11` as a number):
 * room versions.
 */
export function versionOf<const T extends string>(values: readonly T[]): Kind<T> {
  const set: ReadonlySet<string> = new Set(values);
  return {
    label: values.join(' | '),
    parse(raw, at, ctx) {
      const text = typeof raw === 'number' && Number.isInteger(raw) ? String(raw) : raw;
      return typeof text === 'string' && set.has(text) ? (text as T) : fail(ctx, at, `must be one of ${values.join(', ')}`, raw);
    },
  };
}

/** Wraps a kind so that "" stands for "none" (null). */
export function orNone<T>(kind: Kind<T>): Kind<T | null> {
  return {
    label: `${kind.label} or ""`,
    parse: (raw, at, ctx) => (raw === '' ? null : kind.parse(raw, at, ctx)),
  };
}

/** Go-style duration, parsed to milliseconds; `min` is in milliseconds. */
export function duration(min = 0): Kind<number> {
  const expectation =
    min > 0 ? 'must be a positive duration such as "1h30m" or "500ms"' : 'must be a duration such as "1h30m" or "500ms"';
  return {
    label: 'duration',
    parse(raw, at, ctx) {
      const ms = raw === 0 ? 0 : typeof raw === 'string' ? parseDuration(raw) : undefined;
      return ms !== undefined && ms >= min ? ms : fail(ctx, at, expectation, raw);
    },
  };
}

/** Byte size: a number of bytes or a string like "512mb", parsed to bytes. */
export function size(min = 0): Kind<number> {
  const expectation = `must be a size such as "512mb", "1gb" or a number of bytes${min > 0 ? ` (at least ${min})` : ''}`;
  return {
    label: 'size',
    parse(raw, at, ctx) {
      const bytes = typeof raw === 'string' || typeof raw === 'number' ? parseSize(raw) : undefined;
      return bytes !== undefined && bytes >= min ? bytes : fail(ctx, at, expectation, raw);
    },
  };
}

/** A filesystem path, made absolute (and normalized) against the configuration file's folder. */
export const path: Kind<string> = textKind('path', 'must be a non-empty path', (text, ctx) =>
  text === '' ? undefined : resolve(ctx.baseDir, text),
);

export const serverName: Kind<string> = textKind(
  'server name',
  'must be a server name: host or host:port',
  (text) => (isServerName(text) ? text : undefined),
);

export const bindAddress: Kind<HostPort> = textKind(
  'host:port',
  'must be a listening address host:port (host may be empty)',
  (text) => parseBindAddress(text),
);

export const clientBaseUrl: Kind<string> = textKind(
  'URL or host[:port]',
  'must be an http(s) URL or host[:port]',
  (text) => parseClientBaseUrl(text),
);

export const natsAddress: Kind<string> = textKind(
  'NATS address',
  'must be a nats:// URL or host:port',
  (text) => (isNatsAddress(text) ? text : undefined),
);

/** An IP address or CIDR range, loaded as `address/prefix`. */
export const addressRange: Kind<string> = textKind(
  'IP address or CIDR range',
  'must be an IP address or CIDR range such as 10.0.0.0/8 or fd00::/8',
  (text) => parseAddressRange(text.trim()),
);

export const userId: Kind<string> = textKind('user ID', 'must be a user ID @localpart:server_name', (text) =>
  isUserId(text) ? text : undefined,
);

/** A connection string; SQLite paths come back absolute. */
export const connectionString: Kind<string> = {
  label: 'connection string',
  parse(raw, at, ctx) {
    if (typeof raw !== 'string') return fail(ctx, at, 'must be a connection string', raw);
    const target = parseConnectionString(raw, ctx.baseDir);
    if (typeof target === 'string') return fail(ctx, at, target, raw);
    return formatConnectionString(target);
  },
};

export function list<T>(item: Kind<T>): Kind<T[]> {
  return {
    label: `list of ${item.label}`,
    parse(raw, at, ctx) {
      if (!Array.isArray(raw)) return fail(ctx, at, 'must be a list', raw);
      const out: T[] = [];
      let ok = true;
      raw.forEach((element: unknown, i) => {
        const value = item.parse(element, `${at}[${i}]`, ctx);
        if (value === INVALID) ok = false;
        else out.push(value);
      });
      return ok ? out : INVALID;
    },
  };
}

export interface Field<T> {
  kind: Kind<T>;
  /** raw value used when the field is absent; absent and no default means required */
  default?: unknown;
}

/** A mapping with fixed fields, as found in lists (`thumbnail_sizes`); unknown fields are warned about. */
export function record<T extends object>(label: string, fields: { [K in keyof T]: Field<T[K]> }): Kind<T> {
  return {
    label,
    parse(raw, at, ctx) {
      if (!isMapping(raw)) return fail(ctx, at, `must be a mapping (${label})`, raw);
      const out: Record<string, unknown> = {};
      let ok = true;
      for (const [name, field] of Object.entries<Field<unknown>>(fields)) {
        const value = raw[name] ?? field.default;
        if (value === undefined) {
          ctx.error(`${at}.${name}`, 'is required');
          ok = false;
          continue;
        }
        const parsed = field.kind.parse(value, `${at}.${name}`, ctx);
        if (parsed === INVALID) ok = false;
        else out[name] = parsed;
      }
      for (const name of Object.keys(raw)) {
        if (!Object.hasOwn(fields, name)) ctx.warn(`${at}.${name}`, 'unknown key, ignored');
      }
      return ok ? (out as T) : INVALID;
    },
  };
}
