// Reading a configuration: YAML text, then environment overrides, then every key through its
// kind, then the rules between keys. All problems are collected and thrown together.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import type { ConfigPath, KeyRecord } from './keys.js';
import { rawDefault } from './keys.js';
import { type ConfigIssue, INVALID, type KindContext, describe, isMapping } from './kinds.js';
import { CROSS_CHECKS, KEYS, SECTION_PATHS, type ValueReader, findKey, ignoredKey, isIgnoredKey } from './schema.js';
import type { HearthConfig } from './types.js';

export type { ConfigIssue } from './kinds.js';

export type Environment = Readonly<Record<string, string | undefined>>;

export const ENV_PREFIX = 'HEARTH_';

export function formatIssue(issue: ConfigIssue): string {
  return `${issue.path}: ${issue.message}`;
}

/** Every problem of a configuration, one line each in the message. */
export class ConfigError extends Error {
  constructor(
    readonly issues: readonly ConfigIssue[],
    source?: string,
  ) {
    const where = source === undefined ? '' : ` in ${source}`;
    const count = issues.length === 1 ? '1 problem' : `${issues.length} problems`;
    super([`invalid configuration${where} (${count}):`, ...issues.map((i) => `  ${formatIssue(i)}`)].join('\n'));
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  config: HearthConfig;
  /** unknown keys and environment variables that name no key; the configuration is usable */
  warnings: ConfigIssue[];
}

export interface ParseOptions {
  /** folder relative paths are resolved against (the configuration file's folder) */
  baseDir: string;
  /** environment variables; `HEARTH_<PATH>` ones override keys. Default: none. */
  env?: Environment;
  /** where the text came from, for the error message */
  source?: string;
}

/** The name of the environment variable that overrides a key path. */
export function envName(path: string): string {
  return ENV_PREFIX + path.split('.').join('__').toUpperCase();
}

/** Reads a configuration file and the environment. Throws ConfigError listing every problem. */
export function loadConfig(path: string, env: Environment = process.env): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError([{ path: '(file)', message: `cannot read ${path}: ${reason}` }], path);
  }
  return parseConfig(text, { baseDir: dirname(resolve(path)), env, source: path });
}

interface Override {
  value: unknown;
  variable: string;
}

/** Parses configuration text. Throws ConfigError listing every problem. */
export function parseConfig(yamlText: string, options: ParseOptions): LoadedConfig {
  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const baseDir = resolve(options.baseDir);
  const ctx: KindContext = {
    baseDir,
    error: (path, message) => errors.push({ path, message }),
    warn: (path, message) => warnings.push({ path, message }),
  };
  const fail = (): never => {
    throw new ConfigError(errors, options.source);
  };

  const doc = parseDocument(yamlText, { uniqueKeys: true, prettyErrors: true });
  for (const e of doc.errors) errors.push(yamlIssue(e.message, e.linePos?.[0]));
  if (errors.length > 0) fail();
  for (const w of doc.warnings) warnings.push(yamlIssue(w.message, w.linePos?.[0]));

  let root: unknown;
  try {
    root = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    // Unresolved aliases and alias bombs surface only here.
    ctx.error('(yaml)', err instanceof Error ? err.message : String(err));
    fail();
  }
  if (root === null || root === undefined) root = {};
  if (!isMapping(root)) {
    ctx.error('(top level)', `must be a mapping of sections, got ${describe(root)}`);
    fail();
  }
  const file = root as Record<string, unknown>;
  checkKeys(file, '', ctx);
  const overrides = environmentOverrides(options.env ?? {}, ctx);

  // The data folder comes first: other keys' defaults lie inside it.
  const dataDirKey = findKey('global.data_dir')!;
  const parsedDataDir = readKey(dataDirKey, file, overrides.get(dataDirKey.path), '', ctx);
  const dataDir = typeof parsedDataDir === 'string' ? parsedDataDir : resolve(baseDir, String(dataDirKey.default));
  const keyCtx: KindContext = { ...ctx, dataDir };
  const values = new Map<string, unknown>();
  for (const record of KEYS) {
    const value =
      record === dataDirKey ? parsedDataDir : readKey(record, file, overrides.get(record.path), dataDir, keyCtx);
    if (value !== INVALID) values.set(record.path, value);
  }

  const get = ((path: ConfigPath) => values.get(path)) as ValueReader;
  for (const rule of CROSS_CHECKS) rule.check(get, ctx.error);
  if (errors.length > 0) fail();

  const config: Record<string, unknown> = {};
  for (const record of KEYS) setPath(config, record.path, values.get(record.path));
  // Sound because every HearthConfig leaf has a record (checked at compile time in schema.ts)
  // and every record's kind produced a value of that leaf's type.
  return { config: config as unknown as HearthConfig, warnings };
}

function yamlIssue(message: string, at: { line: number; col: number } | undefined): ConfigIssue {
  const path = at === undefined ? '(yaml)' : `(yaml, line ${at.line} column ${at.col})`;
  return { path, message: message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '') };
}

/** Warns about keys the table does not know; reports sections that are not mappings. */
function checkKeys(node: Record<string, unknown>, prefix: string, ctx: KindContext): void {
  for (const [name, value] of Object.entries(node)) {
    const path = prefix === '' ? name : `${prefix}.${name}`;
    const ignored = ignoredKey(path);
    if (name.includes('.')) ctx.warn(path, 'unknown key, ignored');
    else if (ignored?.warning !== undefined) ctx.warn(path, ignored.warning);
    else if (findKey(path) !== undefined || ignored !== undefined) continue;
    else if (SECTION_PATHS.has(path)) {
      if (isMapping(value)) checkKeys(value, path, ctx);
      else if (value !== null) ctx.error(path, `must be a mapping, got ${describe(value)}`);
    } else ctx.warn(path, 'unknown key, ignored');
  }
}

/**
 * Collects `HEARTH_<PATH>` variables (levels joined by `__`, any case). Values are read as YAML
 * scalars, or flow lists for list keys; text that is not valid YAML is taken as a string.
 */
function environmentOverrides(env: Environment, ctx: KindContext): Map<string, Override> {
  const overrides = new Map<string, Override>();
  const topLevel = new Set([...SECTION_PATHS, ...KEYS.map((k) => k.path)].map((p) => p.split('.')[0]));
  for (const [variable, text] of Object.entries(env)) {
    if (!variable.startsWith(ENV_PREFIX) || text === undefined) continue;
    const path = variable.slice(ENV_PREFIX.length).toLowerCase().split('__').join('.');
    const record = findKey(path);
    if (record === undefined) {
      const retired = ignoredKey(path)?.warning;
      if (retired !== undefined) ctx.warn(variable, retired);
      // Other HEARTH_ variables may exist for other purposes; only warn about near misses.
      else if (!isIgnoredKey(path) && topLevel.has(path.split('.')[0])) {
        ctx.warn(variable, `names no configuration key (${path}), ignored`);
      }
      continue;
    }
    if (record.path !== path && overrides.has(record.path)) continue; // the canonical name wins
    overrides.set(record.path, { value: envValue(text, Array.isArray(record.default)), variable });
  }
  return overrides;
}

function envValue(text: string, listKey: boolean): unknown {
  if (text === '') return '';
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return text;
  const value: unknown = doc.toJS();
  if (typeof value === 'object' && value !== null && !(listKey && Array.isArray(value))) return text;
  return value;
}

function readKey(
  record: KeyRecord,
  file: Record<string, unknown>,
  override: Override | undefined,
  dataDir: string,
  ctx: KindContext,
): unknown {
  let raw: unknown;
  let at: string = record.path;
  if (override !== undefined) {
    raw = override.value;
    at = `${record.path} (from ${override.variable})`;
  } else {
    raw = getPath(file, record.path);
    for (const alias of record.aliases ?? []) {
      const aliased = getPath(file, alias);
      if (aliased === undefined || aliased === null) continue;
      if (raw !== undefined && raw !== null) {
        ctx.error(alias, `set either ${record.path} or ${alias}, not both`);
        return INVALID;
      }
      raw = aliased;
      at = alias;
    }
  }
  if (raw === undefined || raw === null) {
    raw = rawDefault(record, dataDir);
    if (raw === undefined) {
      ctx.error(at, 'is required');
      return INVALID;
    }
  }
  return record.kind.parse(raw, at, ctx);
}

function getPath(node: Record<string, unknown>, path: string): unknown {
  let current: unknown = node;
  for (const part of path.split('.')) {
    if (!isMapping(current) || !Object.hasOwn(current, part)) return undefined;
    current = current[part];
  }
  return current;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (isMapping(next)) node = next;
    else node = node[part] = {};
  }
  node[parts[parts.length - 1]!] = value;
}
