// Real databases for storage tests: a SQLite file in a fresh temp folder, and a PostgreSQL database
// created for the test and dropped afterwards. PostgreSQL comes from HEARTH_TEST_POSTGRES
// (default postgres://postgres@127.0.0.1:5432/postgres). Outside CI a machine without PostgreSQL skips those
// tests and says so; in CI (CI=true) an unreachable PostgreSQL fails them.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DialectName } from '../../src/storage/database.js';

export interface TestDatabase {
  readonly dialect: DialectName;
  readonly connectionString: string;
  drop(): Promise<void>;
}

const ADMIN_URL = process.env['HEARTH_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function createSqliteDatabase(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-test-'));
  return {
    dialect: 'sqlite',
    connectionString: `file:${join(dir, 'hearth.db')}`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  // Generous: a loaded machine (two suites and their servers on two cores) can take seconds to connect.
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 15_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

let postgresReachable: Promise<string | undefined> | undefined;

/** Undefined when PostgreSQL answers; otherwise why not. */
export function postgresUnavailable(): Promise<string | undefined> {
  postgresReachable ??= (async () => {
    // Asked up to three times, so one slow connection on a busy machine is not taken for absence.
    let last: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await withAdmin((c) => c.query('select 1'));
        return undefined;
      } catch (err) {
        last = err;
      }
    }
    return `PostgreSQL at ${ADMIN_URL} unreachable: ${String(last)}`;
  })();
  return postgresReachable;
}

export async function createPostgresDatabase(): Promise<TestDatabase> {
  const name = `hearth_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    dialect: 'postgres',
    connectionString: url.toString(),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/**
 * The backends to run a storage suite on, with the skip reason for PostgreSQL when it is absent
 * outside CI. Use as `for (const b of await storageBackends()) describe(b.name, { skip: b.skip }, ...)`.
 */
export async function storageBackends(): Promise<
  { name: DialectName; skip: string | false; create: () => Promise<TestDatabase> }[]
> {
  // HEARTH_TEST_BACKENDS=sqlite (or postgres) runs one backend's suites only (CI's second Node version).
  const only = process.env['HEARTH_TEST_BACKENDS']?.split(',').map((b) => b.trim());
  const wanted = (name: DialectName) => only === undefined || only.includes(name);
  const why = wanted('postgres') ? await postgresUnavailable() : undefined;
  if (why && process.env['CI'] === 'true') throw new Error(why);
  const all = [
    { name: 'sqlite' as const, skip: false as const, create: createSqliteDatabase },
    { name: 'postgres' as const, skip: why ?? (false as const), create: createPostgresDatabase },
  ];
  return all.filter((b) => wanted(b.name));
}
