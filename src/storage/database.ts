// Opens the database a connection string names: a SQLite file (the embedded default) or a
// PostgreSQL pool. Both are reached through Kysely, so storage code is written once.

import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type Pg from 'pg';
import { HearthError } from '../protocol/errors.js';

export type DialectName = 'sqlite' | 'postgres';

export interface DatabaseOptions {
  /** `postgres://…` / `postgresql://…`, or a SQLite path, optionally as `file:path`. */
  connectionString: string;
  /** PostgreSQL pool size. */
  maxOpenConns?: number;
  /** Idle PostgreSQL connections kept open; more are closed after a short idle time. */
  maxIdleConns?: number;
  /** Seconds a PostgreSQL connection lives; -1 or 0 for no limit. */
  connMaxLifetimeSeconds?: number;
}

export interface Database<Schema> {
  readonly db: Kysely<Schema>;
  readonly dialect: DialectName;
  close(): Promise<void>;
}

export function dialectOf(connectionString: string): DialectName {
  return /^postgres(ql)?:\/\//i.test(connectionString) ? 'postgres' : 'sqlite';
}

/** The file a SQLite connection string names (`file:` prefix and query string removed). */
export function sqlitePath(connectionString: string): string {
  let path = connectionString.replace(/^file:(\/\/)?/, '');
  const q = path.indexOf('?');
  if (q >= 0) path = path.slice(0, q);
  if (path === '') throw HearthError.unknown('SQLite connection string names no file');
  return path;
}

// The PostgreSQL driver is loaded only when a PostgreSQL database is opened: it holds some 15 MB
// that a server on SQLite does not need.
const loadPg = (): typeof Pg => createRequire(import.meta.url)('pg') as typeof Pg;

// int8 (bigint) and numeric counts come back as strings by default; every integer we store fits in
// a double, so read them as numbers.
const INT8_OID = 20;
function pgTypes(pg: typeof Pg) {
  return {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === INT8_OID && format !== 'binary') return (v: string) => Number(v);
      return pg.types.getTypeParser(oid, format as 'text');
    },
  };
}

export function openDatabase<Schema>(options: DatabaseOptions): Database<Schema> {
  const dialect = dialectOf(options.connectionString);
  if (dialect === 'postgres') {
    const maxOpen = options.maxOpenConns ?? 90;
    const lifetime = options.connMaxLifetimeSeconds ?? -1;
    const pg = loadPg();
    const pool = new pg.Pool({
      connectionString: options.connectionString,
      max: maxOpen,
      min: Math.min(options.maxIdleConns ?? 5, maxOpen),
      idleTimeoutMillis: 10_000,
      maxLifetimeSeconds: lifetime > 0 ? lifetime : 0,
      types: pgTypes(pg),
    });
    // An idle connection that breaks (server restart, dropped network, a forced disconnect) is
    // dropped by the pool and reopened on demand; without a listener its error would crash us.
    pool.on('error', () => {});
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect, close: () => db.destroy() };
  }

  const path = sqlitePath(options.connectionString);
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqlite = new BetterSqlite3(path);
  // WAL lets readers run beside the one writer; busy_timeout waits out a writer instead of failing.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // Checkpoint less often than every 1,000 pages: fewer fsyncs on a busy send path.
  sqlite.pragma('wal_autocheckpoint = 10000');
  // A 4 MB page cache instead of better-sqlite3's 16 MB: the OS caches the file anyway, and the
  // server's memory target is tight.
  sqlite.pragma('cache_size = -4000');
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: cachingStatements(sqlite) }) });
  return { db, dialect, close: () => db.destroy() };
}

const STATEMENT_CACHE_SIZE = 1000;

/**
 * The SQLite handle as Kysely sees it, with prepared statements reused by SQL text: Kysely asks
 * for a new statement on every query, and preparing costs more than running a simple one. Reuse is
 * safe because Kysely runs one query at a time on its single SQLite connection.
 */
function cachingStatements(sqlite: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare(sqlText: string): SqliteStatement {
      let stmt = cache.get(sqlText);
      if (stmt !== undefined) {
        // Most recently used last, so the first entry is the one to evict.
        cache.delete(sqlText);
      } else {
        stmt = sqlite.prepare(sqlText) as unknown as SqliteStatement;
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sqlText, stmt);
      return stmt;
    },
  };
}
