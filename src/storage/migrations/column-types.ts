import type { DialectName } from '../database.js';

/** An auto-incrementing integer primary key column, as each backend spells it. */
export function serialType(dialect: DialectName): 'integer' | 'bigserial' {
  return dialect === 'postgres' ? 'bigserial' : 'integer';
}
