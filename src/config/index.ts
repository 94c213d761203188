// Hearth's configuration: the typed object, loading with validation, the generated file and docs.

export type {
  HearthConfig,
  KeyPerspective,
  LogLevel,
  LogTarget,
  PerspectiveKey,
  ProtocolName,
  ThumbnailMethod,
  ThumbnailSize,
} from './types.js';
export {
  ConfigError,
  ENV_PREFIX,
  type ConfigIssue,
  type Environment,
  type LoadedConfig,
  type ParseOptions,
  envName,
  formatIssue,
  loadConfig,
  parseConfig,
} from './load.js';
export { generateConfig, type GenerateOptions } from './generate.js';
export { renderConfigMarkdown } from './markdown.js';
export { KEYS, IGNORED_KEYS, SECTIONS, findKey } from './schema.js';
export type { ConfigPath, KeyRecord } from './keys.js';
export { parseDuration, formatDuration } from './duration.js';
export { parseSize, formatSize } from './size.js';
export { type DatabaseTarget, parseConnectionString } from './database.js';
export { type HostPort, formatBindAddress, isServerName, parseBindAddress } from './net.js';
