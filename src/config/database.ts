// Database connection strings: `file:<path>` selects SQLite, `postgres://` or `postgresql://`
// selects PostgreSQL.

import { resolve } from 'node:path';

export type DatabaseTarget =
  | { kind: 'sqlite'; /** absolute file path, or ":memory:" */ path: string; query: string }
  | { kind: 'postgres'; url: string };

/**
 * Parses a connection string. A relative SQLite path is resolved against `baseDir`; `file::memory:`
 * names an in-memory database. Anything after `?` in a SQLite string is kept in `query`.
 * Returns an error message instead when the string is neither form.
 */
export function parseConnectionString(text: string, baseDir: string): DatabaseTarget | string {
  if (/^postgres(ql)?:\/\//i.test(text)) {
    try {
      new URL(text);
    } catch {
      return 'must be a valid postgres:// URL';
    }
    return { kind: 'postgres', url: text };
  }
  if (text.startsWith('file:')) {
    const q = text.indexOf('?');
    let path = q < 0 ? text.slice(5) : text.slice(5, q);
    const query = q < 0 ? '' : text.slice(q + 1);
    if (path.startsWith('///')) path = path.slice(2); // file:///abs/path
    else if (path.startsWith('//')) return 'file URLs with a host are not supported; use file:/absolute/path';
    if (path === '') return 'names no database file';
    if (path === ':memory:') return { kind: 'sqlite', path, query };
    return { kind: 'sqlite', path: resolve(baseDir, path), query };
  }
  return 'must start with file: (SQLite) or postgres:// / postgresql:// (PostgreSQL)';
}

/** Writes a target back as a connection string (SQLite paths as given, so absolute once resolved). */
export function formatConnectionString(target: DatabaseTarget): string {
  if (target.kind === 'postgres') return target.url;
  return `file:${target.path}${target.query === '' ? '' : `?${target.query}`}`;
}
