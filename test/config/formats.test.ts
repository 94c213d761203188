import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import { formatSize, parseSize } from '../../src/config/size.js';
import { formatBindAddress, isServerName, parseBindAddress, parseClientBaseUrl } from '../../src/config/net.js';
import { parseConnectionString } from '../../src/config/database.js';

describe('durations', () => {
  test('Go-style durations parse to milliseconds', () => {
    const cases: [string, number][] = [
      ['168h', 604_800_000],
      ['168h0m0s', 604_800_000],
      ['30m', 1_800_000],
      ['1h30m', 5_400_000],
      ['500ms', 500],
      ['1.5h', 5_400_000],
      ['.5s', 500],
      ['1.s', 1000],
      ['2h45m30.25s', 9_930_250],
      ['1500us', 2],
      ['1500µs', 2],
      ['1500μs', 2],
      ['2000000ns', 2],
      ['-1h', -3_600_000],
      ['+10s', 10_000],
      ['0', 0],
      ['-0', 0],
      ['0s', 0],
      ['1m1m', 120_000],
    ];
    for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  });

  test('garbage is rejected', () => {
    for (const text of ['', '10', 'h', '1d', '1H', ' 1h', '1h ', '1h-30m', '1..5h', '.h', 'abc', '1hm', '-', '1 h', '1h,30m', 'NaN', '1e3s']) {
      assert.equal(parseDuration(text), undefined, JSON.stringify(text));
    }
  });

  test('formatting follows Go and round-trips', () => {
    assert.equal(formatDuration(604_800_000), '168h0m0s');
    assert.equal(formatDuration(3_600_000), '1h0m0s');
    assert.equal(formatDuration(90_000), '1m30s');
    assert.equal(formatDuration(1_500), '1.5s');
    assert.equal(formatDuration(500), '500ms');
    assert.equal(formatDuration(0), '0s');
    assert.equal(formatDuration(-2_000), '-2s');
    fc.assert(
      fc.property(fc.integer({ min: -1e13, max: 1e13 }), (ms) => parseDuration(formatDuration(ms)) === ms),
    );
  });
});

describe('sizes', () => {
  test('sizes parse to bytes with binary multiples', () => {
    const cases: [string | number, number][] = [
      ['512mb', 536_870_912],
      ['1gb', 1_073_741_824],
      ['1GB', 1_073_741_824],
      ['1 GiB', 1_073_741_824],
      ['1073741824', 1_073_741_824],
      [1_073_741_824, 1_073_741_824],
      ['1.5kb', 1536],
      ['2k', 2048],
      ['1tb', 1024 ** 4],
      ['10b', 10],
      ['0', 0],
      [0, 0],
    ];
    for (const [text, bytes] of cases) assert.equal(parseSize(text), bytes, String(text));
  });

  test('garbage is rejected', () => {
    for (const value of ['', 'gb', '-1', '-1mb', '1pb', '1e3', '1,000', '1.mb', 'mb1', '1 2mb', -5, 1.5, Number.NaN, Infinity, 2 ** 60, '99999999tb']) {
      assert.equal(parseSize(value), undefined, String(value));
    }
  });

  test('formatting picks the largest exact suffix and round-trips', () => {
    assert.equal(formatSize(1_073_741_824), '1gb');
    assert.equal(formatSize(52_428_800), '50mb');
    assert.equal(formatSize(1536), '1536');
    assert.equal(formatSize(2048), '2kb');
    assert.equal(formatSize(0), '0');
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 50 }), (n) => parseSize(formatSize(n)) === n));
  });
});

describe('network values', () => {
  test('server names follow host[:port]', () => {
    for (const ok of ['example.org', 'example.org:8448', 'localhost', '1.2.3.4', '1.2.3.4:1', '[::1]', '[::1]:8448', 'a-b.c', 'x:65535']) {
      assert.equal(isServerName(ok), true, ok);
    }
    for (const bad of ['', 'exa mple.org', 'ex_ample.org', 'example.org:', 'example.org:0', 'example.org:65536', 'example.org:80a', '[::1', '[::1]x', '::1', 'https://example.org', 'a'.repeat(256)]) {
      assert.equal(isServerName(bad), false, bad);
    }
  });

  test('listening addresses need a port; an empty host means every IPv4 interface', () => {
    assert.deepEqual(parseBindAddress(':8008'), { host: '0.0.0.0', port: 8008 });
    assert.deepEqual(parseBindAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseBindAddress('[::]:8448'), { host: '::', port: 8448 });
    assert.deepEqual(parseBindAddress('localhost:8008'), { host: 'localhost', port: 8008 });
    for (const bad of ['localhost', '8008', ':', 'host:99999', 'a b:1', '[::]']) assert.equal(parseBindAddress(bad), undefined, bad);
    assert.equal(formatBindAddress({ host: '::', port: 8448 }), '[::]:8448');
    assert.equal(formatBindAddress({ host: '0.0.0.0', port: 8008 }), '0.0.0.0:8008');
  });

  test('client base URLs: http(s) URLs, or host[:port] meaning https', () => {
    assert.equal(parseClientBaseUrl('https://chat.example.org'), 'https://chat.example.org');
    assert.equal(parseClientBaseUrl('http://localhost:8008/'), 'http://localhost:8008/');
    assert.equal(parseClientBaseUrl('chat.example.org:443'), 'https://chat.example.org:443');
    for (const bad of ['ftp://example.org', 'https://', 'not a url', 'https//x']) assert.equal(parseClientBaseUrl(bad), undefined, bad);
  });
});

describe('connection strings', () => {
  test('file: selects SQLite, relative paths resolve against the base folder', () => {
    assert.deepEqual(parseConnectionString('file:hearth.db', '/etc/hearth'), { kind: 'sqlite', path: '/etc/hearth/hearth.db', query: '' });
    assert.deepEqual(parseConnectionString('file:../db/h.db?_busy=1', '/etc/hearth'), { kind: 'sqlite', path: '/etc/db/h.db', query: '_busy=1' });
    assert.deepEqual(parseConnectionString('file:/var/lib/h.db', '/etc'), { kind: 'sqlite', path: '/var/lib/h.db', query: '' });
    assert.deepEqual(parseConnectionString('file:///var/lib/h.db', '/etc'), { kind: 'sqlite', path: '/var/lib/h.db', query: '' });
    assert.deepEqual(parseConnectionString('file::memory:', '/etc'), { kind: 'sqlite', path: ':memory:', query: '' });
  });

  test('postgres:// and postgresql:// select PostgreSQL', () => {
    const a = 'postgres://u:p@db.internal:5432/hearth?sslmode=disable';
    const b = 'postgresql://u@localhost/hearth';
    assert.deepEqual(parseConnectionString(a, '/x'), { kind: 'postgres', url: a });
    assert.deepEqual(parseConnectionString(b, '/x'), { kind: 'postgres', url: b });
  });

  test('anything else is an error message', () => {
    for (const bad of ['hearth.db', 'mysql://u@h/db', 'sqlite:x.db', 'file:', 'file://host/x.db', 'postgres://[oops', '']) {
      assert.equal(typeof parseConnectionString(bad, '/x'), 'string', bad);
    }
  });
});
