// A complete configuration file: every key at its default, each with its explanation as a comment.

import { stringify } from 'yaml';
import { type ConfigIssue, ConfigError } from './load.js';
import { isDataDirDefault, rawDefault } from './keys.js';
import { isServerName } from './net.js';
import { KEYS, SECTIONS } from './schema.js';

export interface GenerateOptions {
  /** written as global.server_name; default "localhost" */
  serverName?: string;
  /** written as global.data_dir, the folder of the keys that default into it; default "./data" */
  dataDir?: string;
}

const WIDTH = 100;

const HEADER = `Hearth configuration.

The layout follows Dendrite's configuration (version 2); keys this server does not know are
ignored with a warning. Every key is shown at its default value. Relative paths are relative to
the folder of this file. Keys whose defaults lie in global.data_dir are commented out, so that
they follow it: set one only to put that file or folder somewhere else.
Environment variables override keys: HEARTH_ followed by the key path in capitals with "__"
between levels, e.g. HEARTH_GLOBAL__SERVER_NAME=example.org. docs/CONFIG.md describes every key.`;

/** Returns YAML text that parseConfig accepts and that yields the same values as the defaults. */
export function generateConfig(options: GenerateOptions = {}): string {
  const serverName = options.serverName ?? 'localhost';
  const dataDir = options.dataDir ?? './data';
  const problems: ConfigIssue[] = [];
  if (!isServerName(serverName)) {
    problems.push({ path: 'global.server_name', message: `must be a server name: host or host:port, got ${JSON.stringify(serverName)}` });
  }
  if (dataDir === '') problems.push({ path: 'global.data_dir', message: 'must be a non-empty path' });
  if (problems.length > 0) throw new ConfigError(problems);

  const out: string[] = [...comment(HEADER, ''), ''];
  let openSections: string[] = [];
  for (const record of KEYS) {
    const parts = record.path.split('.');
    const sections = parts.slice(0, -1);
    let shared = 0;
    while (shared < openSections.length && shared < sections.length && openSections[shared] === sections[shared]) {
      shared++;
    }
    const blank = () => {
      if (out[out.length - 1] !== '') out.push('');
    };
    for (let depth = shared; depth < sections.length; depth++) {
      const sectionPath = sections.slice(0, depth + 1).join('.');
      const indent = '  '.repeat(depth);
      if (depth === shared) blank();
      out.push(...comment(SECTIONS[sectionPath] ?? '', indent), `${indent}${sections[depth]}:`);
    }
    const opened = shared < sections.length;
    openSections = sections;

    const indent = '  '.repeat(sections.length);
    const name = parts[parts.length - 1]!;
    let doc = record.doc;
    // Written out, such a default would stay behind when data_dir moves: shown commented out.
    const followsDataDir = isDataDirDefault(record.default);
    if (followsDataDir) doc += ` Default: ${rawDefault(record, '<data_dir>')}, following global.data_dir.`;
    const value =
      record.path === 'global.server_name' ? serverName
      : record.path === 'global.data_dir' ? dataDir
      : rawDefault(record, dataDir);
    if (!opened) blank();
    const lines = entry(name, value, indent);
    out.push(...comment(doc, indent), ...(followsDataDir ? lines.map((l) => commentedOut(l, indent)) : lines));
    if (record.example !== undefined) {
      out.push(...entry(name, record.example, indent).map((line) => commentedOut(line, indent)));
    }
  }
  return `${out.join('\n')}\n`;
}

/** A YAML line as a comment at the same indentation. */
function commentedOut(line: string, indent: string): string {
  return `${indent}# ${line.slice(indent.length)}`;
}

/** `name: value` lines, lists and mappings as indented blocks (empty ones inline). */
function entry(name: string, value: unknown, indent: string): string[] {
  const isBlock = typeof value === 'object' && value !== null && Object.keys(value).length > 0;
  if (!isBlock) return [`${indent}${name}: ${stringify(value, { lineWidth: 0 }).trimEnd()}`];
  const body = stringify(value, { indent: 2, lineWidth: 0 }).trimEnd().split('\n');
  return [`${indent}${name}:`, ...body.map((line) => `${indent}  ${line}`)];
}

/** Text as `# ` comment lines wrapped to the page width; blank lines are kept. */
function comment(text: string, indent: string): string[] {
  const lines: string[] = [];
  const room = WIDTH - indent.length - 2;
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(/\s+/).filter((w) => w !== '')) {
      if (line !== '' && line.length + 1 + word.length > room) {
        lines.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    lines.push(line);
  }
  return lines.map((l) => (l === '' ? `${indent}#` : `${indent}# ${l}`));
}
