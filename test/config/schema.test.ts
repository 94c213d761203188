import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { IGNORED_KEYS, KEYS, SECTIONS } from '../../src/config/index.js';

describe('key table', () => {
  test('paths and aliases are unique and none is inside another key', () => {
    const names = KEYS.flatMap((k) => [k.path, ...(k.aliases ?? [])]).concat(IGNORED_KEYS.map((k) => k.path));
    assert.equal(new Set(names).size, names.length);
    for (const a of names) {
      for (const b of names) assert.ok(!b.startsWith(`${a}.`), `${b} lies inside the key ${a}`);
    }
  });

  test('keys are snake_case and every section is described', () => {
    for (const record of KEYS) {
      assert.match(record.path, /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/);
      const parts = record.path.split('.');
      for (let i = 1; i < parts.length; i++) {
        const section = parts.slice(0, i).join('.');
        assert.ok(SECTIONS[section], `section ${section} has no description`);
      }
    }
  });

  test('sections are contiguous in table order (the generated file opens each once)', () => {
    const closed = new Set<string>();
    let open: string[] = [];
    for (const record of KEYS) {
      const sections = record.path.split('.').slice(0, -1).map((_, i, all) => all.slice(0, i + 1).join('.'));
      for (const s of open) if (!sections.includes(s)) closed.add(s);
      for (const s of sections) assert.ok(!closed.has(s), `${record.path} reopens ${s}`);
      open = sections;
    }
  });

  test('every key is documented in a sentence', () => {
    for (const record of [...KEYS, ...IGNORED_KEYS]) {
      assert.match(record.doc, /^[A-Z`/a-z].*\.$/s, record.path);
      assert.ok(record.doc.length >= 20, record.path);
    }
  });

  test('only the server name is required', () => {
    assert.deepEqual(KEYS.filter((k) => k.default === undefined).map((k) => k.path), ['global.server_name']);
  });
});
