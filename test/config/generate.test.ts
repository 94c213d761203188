import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KEYS, generateConfig, loadConfig, parseConfig } from '../../src/config/index.js';
import { isDataDirDefault } from '../../src/config/keys.js';
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

  test('every key is written out with a comment above it; those inside data_dir commented out', () => {
    const text = generateConfig();
    const tree: unknown = parse(text);
    const lines = text.split('\n');
    for (const record of KEYS) {
      const insideDataDir = isDataDirDefault(record.default);
      assert.equal(lookup(tree, record.path) === undefined, insideDataDir, `${record.path} is ${insideDataDir ? 'pinned' : 'missing'}`);
      const name = record.path.split('.').pop()!;
      const indent = '  '.repeat(record.path.split('.').length - 1);
      const at = lines.findIndex((l) => l.startsWith(`${indent}${insideDataDir ? '# ' : ''}${name}:`));
      assert.ok(at > 0, `${record.path} has no line of its own`);
      assert.match(lines[at - 1]!, /^\s*# /, `${record.path} has no comment`);
      if (insideDataDir) assert.match(lines[at - 1]!, /global\.data_dir\.$/, record.path);
    }
  });

  test('editing data_dir in a generated file moves every file and folder that lies in it', () => {
    for (const dataDir of [undefined, '/var/lib/hearth']) {
      const text = generateConfig(dataDir === undefined ? {} : { dataDir });
      const edited = text.replace(/^ {2}data_dir: .*$/m, '  data_dir: /srv/elsewhere');
      assert.notEqual(edited, text);
      const { config } = parseConfig(edited, { baseDir: tmp.path, env: { HEARTH_LOGGING: '[{type: file, level: info}]' } });
      assert.equal(config.global.data_dir, '/srv/elsewhere');
      assert.equal(config.global.private_key, '/srv/elsewhere/signing.key');
      assert.equal(config.global.database.connection_string, 'file:/srv/elsewhere/hearth.db');
      assert.equal(config.global.jetstream.storage_path, '/srv/elsewhere/jetstream');
      assert.equal(config.media_api.base_path, '/srv/elsewhere/media');
      assert.deepEqual(config.logging, [{ type: 'file', level: 'info', path: '/srv/elsewhere/logs' }]);
      assert.doesNotMatch(edited, /^\s*[a-z_]+: (file:)?(\.\/data|\/var\/lib\/hearth)\//m, 'a path under the old data_dir is pinned');
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
