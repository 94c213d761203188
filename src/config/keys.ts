// The shape of one record of the key table, and the types that tie a record's path and kind to the
// matching property of HearthConfig.

import type { Kind } from './kinds.js';
import type { HearthConfig } from './types.js';

/** Dotted paths of HearthConfig's leaves (lists and scalars; plain objects are sections). */
type LeafPaths<T, Prefix extends string = ''> = {
  [K in keyof T & string]: T[K] extends readonly unknown[]
    ? `${Prefix}${K}`
    : [T[K]] extends [object]
      ? LeafPaths<T[K], `${Prefix}${K}.`>
      : `${Prefix}${K}`;
}[keyof T & string];

type ValueAt<T, P extends string> = P extends `${infer Head}.${infer Rest}`
  ? Head extends keyof T
    ? ValueAt<T[Head], Rest>
    : never
  : P extends keyof T
    ? T[P]
    : never;

export type ConfigPath = LeafPaths<HearthConfig>;
export type ConfigValue<P extends ConfigPath> = ValueAt<HearthConfig, P>;

/** A default that lives under the data directory: `${prefix}<data_dir>/${child}`. */
export interface DataDirDefault {
  readonly underDataDir: string;
  readonly prefix?: string;
}

export interface KeyRecord<P extends ConfigPath = ConfigPath> {
  readonly path: P;
  readonly kind: Kind<ConfigValue<P>>;
  /**
   * Raw YAML value used when the key is absent or null; it goes through `kind` like a written
   * value, so defaults are validated and resolved the same way. Undefined: the key is required.
   */
  readonly default: unknown;
  readonly doc: string;
  /** Raw value shown (commented out) in generated files when the default says little. */
  readonly example?: unknown;
  /** Other paths the same key is read from (Dendrite's spelling). */
  readonly aliases?: readonly string[];
}

/**
 * Keys accepted for compatibility and otherwise ignored: no validation, no value, and no warning
 * unless `warning` says why the key no longer has an effect.
 */
export interface IgnoredKey {
  readonly path: string;
  readonly doc: string;
  readonly warning?: string;
}

export function key<P extends ConfigPath>(record: KeyRecord<P>): KeyRecord<P> {
  return record;
}

export function isDataDirDefault(value: unknown): value is DataDirDefault {
  return typeof value === 'object' && value !== null && 'underDataDir' in value;
}

/** The raw default of a key, with `<data_dir>` replaced by `dataDir`. */
export function rawDefault(record: KeyRecord, dataDir: string): unknown {
  const value = record.default;
  if (!isDataDirDefault(value)) return value;
  return `${value.prefix ?? ''}${dataDir.replace(/\/+$/, '')}/${value.underDataDir}`;
}
