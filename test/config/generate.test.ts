import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KEYS, generateConfig, loadConfig, parseConfig } from '../../src/config/index.js';
import { TempDir, configError, problemLines } from './helpers.js';

const tmp = new TempDir();
after(() => tmp.remove());

function lookup(tree: unknown, path: string): unknown {
  let node = tree;
  for (const part of path.split('.')) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

describe('generated configuration', () => {
  test('round-trips to the defaults, without warnings', () => {
    const file = tmp.write('gen/hearth.yaml', generateConfig());
    const generated = loadConfig(file, {});
    assert.deepEqual(generated.warnings, []);
    const minimal = parseConfig('global:\n  server_name: localhost\n', { baseDir: join(tmp.path, 'gen') });
    assert.deepEqual(generated.config, minimal.config);
    assert.equal(generated.config.global.server_name, 'localhost');
    assert.equal(generated.config.global.data_dir, join(tmp.path, 'gen', 'data'));
  });

  test('server name and data folder are written, and the data folder moves the keys under it', () => {
    const text = generateConfig({ serverName: 'example.org:8448', dataDir: '/var/lib/hearth' });
    const { config, warnings } = parseConfig(text, { baseDir: tmp.path });
    assert.deepEqual(warnings, []);
    const minimal = parseConfig('global:\n  server_name: "example.org:8448"\n  data_dir: /var/lib/hearth\n', { baseDir: tmp.path });
    assert.deepEqual(config, minimal.config);
    assert.equal(config.global.private_key, '/var/lib/hearth/signing.key');
    assert.equal(config.global.database.connection_string, 'file:/var/lib/hearth/hearth.db');
  });

  test('every key is written out, with a comment above it', () => {
    const text = generateConfig();
    const tree: unknown = parse(text);
    const lines = text.split('\n');
    for (const record of KEYS) {
      assert.notEqual(lookup(tree, record.path), undefined, `${record.path} is missing`);
      const name = record.path.split('.').pop()!;
      const depth = record.path.split('.').length - 1;
      const at = lines.findIndex((l) => l.startsWith(`${'  '.repeat(depth)}${name}:`));
      assert.ok(at > 0, `${record.path} has no line of its own`);
      assert.match(lines[at - 1]!, /^\s*# /, `${record.path} has no comment`);
    }
  });

  test('comments fit in 100 columns and examples are commented out', () => {
    const text = generateConfig();
    for (const line of text.split('\n')) assert.ok(line.length <= 100, line);
    assert.match(text, /^ {4}# addresses:\n {4}# {3}- nats:\/\/localhost:4222$/m);
    assert.match(text, /^ {4}# connection_string: postgres:\/\//m);
  });

  test('the examples in the table are valid values', () => {
    for (const record of KEYS) {
      if (record.example === undefined) continue;
      const tree = parse(generateConfig()) as Record<string, unknown>;
      const parts = record.path.split('.');
      let node = tree;
      for (const part of parts.slice(0, -1)) node = node[part] as Record<string, unknown>;
      node[parts[parts.length - 1]!] = record.example;
      if (record.path === 'listen.https') Object.assign(node, { tls_cert: 'c.pem', tls_key: 'k.pem' });
      const { config, warnings } = parseConfig(JSON.stringify(tree), { baseDir: tmp.path });
      assert.deepEqual(warnings, [], record.path);
      assert.notDeepEqual(lookup(config, record.path), lookup(parseConfig(generateConfig(), { baseDir: tmp.path }).config, record.path));
    }
  });

  test('bad generator input is refused with the key path', () => {
    const err = configError(() => generateConfig({ serverName: 'no such name', dataDir: '' }));
    assert.deepEqual(problemLines(err), [
      'global.server_name: must be a server name: host or host:port, got "no such name"',
      'global.data_dir: must be a non-empty path',
    ]);
  });
});
