// Queries compiled once and run many times with fresh values: the send path runs the same few
// statements for every event, and building and compiling them through Kysely each time costs as
// much as running them. The SQL still comes from Kysely, for whichever dialect the database has;
// PostgreSQL prepares each once per connection (PREPARED).

import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';
import { PREPARED } from '../database.js';
import type { Schema } from '../schema.js';

const MARK = '\u0000hearth-param:';

/** A query taking named arguments; run it with the database or a transaction. */
export type CompiledStatement<A, R> = (db: Kysely<Schema>, args: A) => Promise<QueryResult<R>>;

/**
 * Compiles the query `build` makes (against the database it closes over), with `param(name)` standing for a value given at each run.
 * A placeholder must be used as a plain value (compared, inserted, set), never inside an
 * expression Kysely rewrites.
 */
export function compileOnce<A extends Record<string, unknown>, R>(
  build: (param: <K extends keyof A & string>(name: K) => A[K]) => Compilable<R>,
): CompiledStatement<A, R> {
  const built: CompiledQuery<R> = build((name) => `${MARK}${name}` as never).compile();
  const compiled = { ...built, sql: PREPARED + built.sql };
  const constants = compiled.parameters;
  const slots = constants.map((p) => (typeof p === 'string' && p.startsWith(MARK) ? p.slice(MARK.length) : undefined));
  if (!slots.some((s) => s !== undefined) && constants.length > 0) throw new Error('compileOnce: no placeholder reached the parameters');
  return (target, args) =>
    target.executeQuery<R>({ ...compiled, parameters: slots.map((name, i) => (name === undefined ? constants[i] : args[name])) });
}
