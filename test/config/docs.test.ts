import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { IGNORED_KEYS, KEYS, formatIssue, parseConfig, renderConfigMarkdown } from '../../src/config/index.js';
import { configError } from './helpers.js';

const DOC = new URL('../../docs/CONFIG.md', import.meta.url);
const REGENERATE =
  'docs/CONFIG.md is out of date; regenerate it with\n' +
  '  node --import tsx -e "import(\'./src/config/index.ts\').then(m => process.stdout.write(m.renderConfigMarkdown()))" > docs/CONFIG.md';

describe('docs/CONFIG.md', () => {
  const text = readFileSync(DOC, 'utf8');

  test('is the rendering of the key table', () => {
    assert.ok(text === renderConfigMarkdown(), REGENERATE);
  });

  test('lists every key path, alias and ignored key, with its environment variable rule', () => {
    for (const record of KEYS) {
      assert.ok(text.includes(`| \`${record.path}\``), `${record.path} has no row`);
      for (const alias of record.aliases ?? []) assert.ok(text.includes(`\`${alias}\``), alias);
    }
    for (const ignored of IGNORED_KEYS) assert.ok(text.includes(`\`${ignored.path}\``), ignored.path);
    assert.ok(text.includes('HEARTH_GLOBAL__DATABASE__CONNECTION_STRING'));
  });

  test('its YAML examples load cleanly', () => {
    // The application services section's examples are registrations (test/appservice checks them).
    const configPart = text.split('\n## Application services\n')[0]!;
    const blocks = [...configPart.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
    assert.ok(blocks.length >= 2);
    for (const block of blocks) {
      const { warnings } = parseConfig(block, { baseDir: '/etc/hearth' });
      assert.deepEqual(warnings, []);
    }
  });

  test('its quoted error lines are what the loader says', () => {
    const env = configError(() =>
      parseConfig('global:\n  server_name: example.org\n', { baseDir: '/', env: { HEARTH_USER_API__BCRYPT_COST: '99' } }),
    );
    assert.ok(text.includes(`\`${formatIssue(env.issues[0]!)}\``), formatIssue(env.issues[0]!));
    const file = configError(() =>
      parseConfig('global:\n  server_name: example.org\n  database:\n    max_open_conns: x\n', { baseDir: '/' }),
    );
    assert.ok(text.includes(`\`${formatIssue(file.issues[0]!)}\``), formatIssue(file.issues[0]!));
  });
});
