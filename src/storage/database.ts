// Opens the database a connection string names: a SQLite file (the embedded default) or a
// PostgreSQL pool. Both are reached through Kysely, so storage code is written once.

import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, type LogEvent, PostgresDialect, SqliteDialect, type SqliteDatabase, type SqliteStatement, sql } from 'kysely';
import type Pg from 'pg';
import { HearthError } from '../protocol/errors.js';
import { WalCheckpointer, type CheckpointStats } from './wal-checkpointer.js';

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
  /** Told of every statement's duration as it finishes (Kysely's log hook); none: nothing is timed. */
  onQuery?: (milliseconds: number, failed: boolean) => void;
}

/** A PostgreSQL pool's connections. */
export interface PoolStats {
  readonly total: number;
  readonly idle: number;
  /** Queries waiting for a connection. */
  readonly waiting: number;
}

export interface Database<Schema> {
  readonly db: Kysely<Schema>;
  readonly dialect: DialectName;
  /** PostgreSQL only. */
  readonly poolStats?: () => PoolStats;
  /** A SQLite file only: what its write-ahead log's checkpointer has done. */
  readonly checkpointStats?: () => CheckpointStats;
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

/**
 * Starts a statement's SQL text that PostgreSQL should parse and plan once per connection and then
 * run by name: for the few statements run many times a second (the send path's), where parsing
 * and planning cost about as much as running them. Harmless to SQLite, whose statements are
 * prepared once anyway. Only for statements whose result columns are named: a prepared `select *`
 * would fail once a migration changed the table.
 */
export const PREPARED = '/* prepared */ ';

/** pg's client, running SQL that starts with PREPARED as a named prepared statement. */
function preparingClient(pg: typeof Pg): typeof Pg.Client {
  const names = new Map<string, string>();
  return class extends pg.Client {
    override query(...args: unknown[]): never {
      const [text, values] = args;
      if (typeof text === 'string' && text.startsWith(PREPARED) && args.length === 2 && Array.isArray(values)) {
        let name = names.get(text);
        if (name === undefined) names.set(text, (name = `hearth_${names.size}`));
        return super.query({ name, text, values }) as never;
      }
      return (super.query as (...a: unknown[]) => never)(...args);
    }
  };
}

function queryLog(onQuery: DatabaseOptions['onQuery']): { log?: (event: LogEvent) => void } {
  if (onQuery === undefined) return {};
  return { log: (event) => onQuery(event.queryDurationMillis, event.level === 'error') };
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
      Client: preparingClient(pg),
    });
    // An idle connection that breaks (server restart, dropped network, a forced disconnect) is
    // dropped by the pool and reopened on demand; without a listener its error would crash us.
    pool.on('error', () => {});
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }), ...queryLog(options.onQuery) });
    const poolStats = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
    return { db, dialect, poolStats, close: () => db.destroy() };
  }

  const path = sqlitePath(options.connectionString);
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqlite = new BetterSqlite3(path);
  // WAL lets readers run beside the one writer; busy_timeout waits out a writer instead of failing.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // Checkpoints run on side connections (wal-checkpointer.ts), not in the commits of this
  // connection, which runs on the event loop.
  const inMemory = path === ':memory:';
  if (!inMemory) sqlite.pragma('wal_autocheckpoint = 0');
  // A 4 MB page cache instead of better-sqlite3's 16 MB: the OS caches the file anyway, and the
  // server's memory target is tight.
  sqlite.pragma('cache_size = -4000');
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: cachingStatements(sqlite) }), ...queryLog(options.onQuery) });
  sqliteHandles.set(db, sqlite);
  if (inMemory) return { db, dialect, close: () => db.destroy() };
  const checkpointer = new WalCheckpointer(resolve(path), db as Kysely<unknown>, (pages) => sqlite.pragma(`wal_autocheckpoint = ${pages}`));
  return {
    db,
    dialect,
    checkpointStats: () => checkpointer.stats(),
    // The side connections close first, so that the main connection, closing last, checkpoints
    // the whole log and removes it.
    close: async () => {
      await checkpointer.close();
      await db.destroy();
    },
  };
}

const STATEMENT_CACHE_SIZE = 1000;

const sqliteHandles = new WeakMap<object, BetterSqlite3.Database>();

/**
 * The SQLite connection under a database openDatabase opened (undefined for PostgreSQL): for the
 * few statements every send runs, run inside a transaction of that database without Kysely's
 * per-statement promise chain. Only inside a transaction: the connection is shared, and a
 * statement run outside one could see another transaction's uncommitted rows.
 */
export function sqliteHandleOf(db: object): BetterSqlite3.Database | undefined {
  return sqliteHandles.get(db);
}

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

/** Runs a trivial query, so that a database that cannot be reached fails before anything else. */
export async function probeDatabase(db: Kysely<unknown>): Promise<void> {
  await sql`select 1`.execute(db);
}

const CONFIG_KEY = 'global.database.connection_string';

/** Host, port, database and user a PostgreSQL connection string names; never its password. */
export function describePostgres(connectionString: string): { host: string; port: string; database: string; user: string } {
  let url: URL | undefined;
  try {
    url = new URL(connectionString);
  } catch {
    url = undefined;
  }
  const param = (name: string) => url?.searchParams.get(name) ?? undefined;
  const user = decodeURIComponent(url?.username ?? '') || param('user') || process.env['PGUSER'] || userInfo().username;
  return {
    host: param('host') || decodeURIComponent(url?.hostname ?? '') || process.env['PGHOST'] || 'localhost',
    port: param('port') || url?.port || process.env['PGPORT'] || '5432',
    database: decodeURIComponent((url?.pathname ?? '').replace(/^\//, '')) || process.env['PGDATABASE'] || user,
    user,
  };
}

/** The errors of an error and of its causes, outermost first. */
function causes(err: unknown): (Error & { code?: unknown; path?: unknown })[] {
  const out: (Error & { code?: unknown })[] = [];
  for (let e: unknown = err; e instanceof Error && out.length < 10; e = (e as { cause?: unknown }).cause) {
    out.push(e);
    // A connection to a name with several addresses fails with one error per address.
    if (e instanceof AggregateError && e.errors[0] instanceof Error) out.push(e.errors[0]);
  }
  return out;
}

/**
 * What went wrong opening the database, in words an operator can act on, when `err` is a failure
 * to reach, log in to or open it; undefined for anything else.
 */
export function explainDatabaseFailure(connectionString: string, err: unknown): string | undefined {
  const chain = causes(err);
  const code = (e: Error & { code?: unknown }) => (typeof e.code === 'string' ? e.code : '');
  const find = (...codes: string[]) => chain.find((e) => codes.includes(code(e)));

  if (dialectOf(connectionString) === 'postgres') {
    const { host, port, database, user } = describePostgres(connectionString);
    const server = `the PostgreSQL server at ${host}:${port}`;
    const target = `database "${database}" as user "${user}"`;
    const fix = `The database is set by ${CONFIG_KEY} (or HEARTH_GLOBAL__DATABASE__CONNECTION_STRING).`;
    if (find('ECONNREFUSED')) {
      return `cannot reach ${server} (${target}): connection refused. Is PostgreSQL running and listening on that address and port? ${fix}`;
    }
    if (find('ENOENT') && host.startsWith('/')) {
      return `cannot reach ${server} (${target}): there is no PostgreSQL socket in ${host}. Is PostgreSQL running? ${fix}`;
    }
    if (find('ENOTFOUND', 'EAI_AGAIN')) {
      return `cannot reach ${server} (${target}): the host name ${host} does not resolve. ${fix}`;
    }
    if (find('ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH')) {
      return `cannot reach ${server} (${target}): no answer. Is the host up, and does its firewall let port ${port} through? ${fix}`;
    }
    if (find('3D000')) {
      return (
        `${server} has no database "${database}". Create it (createdb -O ${user} -E UTF8 ${database}) ` +
        `or correct the database name. ${fix}`
      );
    }
    if (find('28P01')) {
      return `${server} refused the password of user "${user}" (${target}). Correct the user name and password. ${fix}`;
    }
    const refused = find('28000');
    if (refused) {
      return (
        `${server} refused the connection (${target}): ${refused.message}. Create the user ` +
        `(createuser ${user} --pwprompt), allow the connection in pg_hba.conf, or correct the user name. ${fix}`
      );
    }
    if (chain.some((e) => /client password must be a string|password authentication/i.test(e.message))) {
      return `${server} asks for a password for user "${user}" (${target}) and none is given. Add it to the connection string. ${fix}`;
    }
    const tls = chain.find((e) => /\bSSL\b|certificate/i.test(e.message));
    if (tls) return `cannot connect to ${server} (${target}): ${tls.message}. Check sslmode in the connection string. ${fix}`;
    return undefined;
  }

  const path = resolve(sqlitePath(connectionString));
  const fix = `The file is set by ${CONFIG_KEY}, by default inside global.data_dir.`;
  const user = userInfo();
  const who = `the user running Hearth (${user.username}, uid ${user.uid})`;
  const denied = find('EACCES', 'EPERM', 'EROFS');
  if (denied) {
    const where = typeof denied.path === 'string' ? denied.path : dirname(path);
    return `cannot create the folder of the SQLite database ${path}: ${where} cannot be written by ${who}. Make it writable, or choose another place. ${fix}`;
  }
  if (find('SQLITE_CANTOPEN')) {
    return `cannot open the SQLite database ${path}: its folder ${dirname(path)} is missing or cannot be written by ${who}. Make it writable, or choose another place. ${fix}`;
  }
  if (chain.some((e) => code(e).startsWith('SQLITE_READONLY'))) {
    return `the SQLite database ${path} (or its folder ${dirname(path)}) is read-only for ${who}. Make both writable. ${fix}`;
  }
  if (find('SQLITE_NOTADB')) return `${path} is not a SQLite database. ${fix}`;
  if (find('ENOTDIR')) return `cannot create the folder of the SQLite database ${path}: a file stands in the way. ${fix}`;
  return undefined;
}
