import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { canonicalJson, canonicalJsonBytes } from '../../src/protocol/canonical-json.js';
import { HearthError } from '../../src/protocol/errors.js';

// The corpus in test/data/canonical-json/ is written by scripts/gen-canonical-json-corpus.py from
// Debian's python3-canonicaljson 1.6.2, an independent implementation.
const DATA = new URL('../data/canonical-json/', import.meta.url);

/** The lines of a data file as raw bytes, so expected output is compared untouched by any decoder. */
function lines(name: string): Buffer[] {
  const data = readFileSync(new URL(name, DATA));
  const out: Buffer[] = [];
  let start = 0;
  for (let end = data.indexOf(0x0a); end !== -1; end = data.indexOf(0x0a, start)) {
    out.push(data.subarray(start, end));
    start = end + 1;
  }
  assert.equal(start, data.length, `${name} must end with a newline`);
  return out;
}

function isBadJson(e: unknown): boolean {
  return e instanceof HearthError && e.errcode === 'M_BAD_JSON' && e.status === 400;
}

function clip(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** The bytes around offset `at`, decoded, as a JSON string literal so that controls are visible. */
function around(bytes: Buffer, at: number): string {
  const from = Math.max(0, at - 50);
  return `${from > 0 ? '…' : ''}${JSON.stringify(bytes.subarray(from, at + 50).toString('utf8'))}`;
}

describe('cross-check against python3-canonicaljson', () => {
  const inputs = lines('inputs.jsonl');
  const expected = lines('expected.jsonl');

  test('the corpus is large, non-canonical on input, and covers what it should', () => {
    assert.equal(inputs.length, expected.length);
    assert.ok(inputs.length >= 10_000, `only ${inputs.length} entries`);
    const changed = inputs.filter((input, i) => !input.equals(expected[i]!)).length;
    assert.equal(changed, inputs.length, 'every input must differ from its canonical form');
    const all = Buffer.concat(expected).toString('utf8');
    const escapes = ['\\b', '\\t', '\\n', '\\f', '\\r', '\\"', '\\\\'];
    for (let c = 0; c < 0x20; c++) {
      if (![0x08, 0x09, 0x0a, 0x0c, 0x0d].includes(c)) escapes.push(`\\u00${c.toString(16).padStart(2, '0')}`);
    }
    for (const needle of [...escapes, '\x7f', '\u2028', '\u2029', '\u{10000}', '\u{1F600}', '\u{10FFFF}', '\uE000', '\uFFFF',
      ':9007199254740991', ':-9007199254740991', '"__proto__":', '"":""', '{}', '[]', '[['.repeat(100)]) {
      assert.ok(all.includes(needle), `no expected output contains ${JSON.stringify(needle)}`);
    }
    assert.match(all, /(?:\{"(?:k|\u{1F600})":){100}/u, 'no object nested 100 deep');
  });

  test('canonicalJson(JSON.parse(input)) is byte-identical for every entry', () => {
    const failures: string[] = [];
    for (let i = 0; i < inputs.length; i++) {
      const input = inputs[i]!.toString('utf8');
      let actual: Buffer;
      try {
        actual = canonicalJsonBytes(JSON.parse(input));
      } catch (e) {
        failures.push(`line ${i + 1}: threw ${String(e)}\n  input:    ${clip(input)}`);
        continue;
      }
      const want = expected[i]!;
      if (!actual.equals(want)) {
        let at = 0;
        while (at < want.length && actual[at] === want[at]) at++;
        failures.push(
          `line ${i + 1}: first difference at byte ${at}\n  input:    ${clip(input)}\n` +
            `  expected: ${around(want, at)}\n  actual:   ${around(actual, at)}`,
        );
      }
    }
    assert.equal(failures.length, 0, `${failures.length} of ${inputs.length} differ:\n${failures.slice(0, 5).join('\n')}`);
  });

  test('canonicalJson is the UTF-8 decoding of canonicalJsonBytes', () => {
    for (let i = 0; i < inputs.length; i += 7) {
      const value: unknown = JSON.parse(inputs[i]!.toString('utf8'));
      assert.equal(canonicalJson(value), expected[i]!.toString('utf8'), `line ${i + 1}`);
    }
  });
});

interface NonStrictCase {
  input: string;
  strict_valid: boolean;
  python: { bytes?: string; error?: string };
  python_js_value: { bytes?: string; error?: string };
}

// Numbers strict canonical JSON rejects, and what non-strict mode (room versions 1–5) writes.
// The reference is what Python writes for the value JSON.parse makes of the text (`python_js_value`).
// Where that differs from what Python writes for the text itself (`python`), the difference is
// information JSON.parse discards, which no encoder can restore:
// - integral floats: Python keeps `1.0`, `-0.0`, `1e2` as floats and writes `1.0`, `-0.0`, `100.0`;
//   JSON.parse makes integers of them, written `1`, `0`, `100` (and strict mode accepts them);
// - integers beyond 2^53: Python keeps every digit (`9007199254740993`); JSON.parse rounds to the
//   nearest double, written in full (`9007199254740992`);
// - floats of 1e16 and beyond: Python writes `1e+16`, `1e+300`; JSON.parse makes integers of them,
//   written in full digits (strict mode rejects them as out of range).
// Non-integral floats are written as Python's repr writes them (`1e-05`, `1.5e-07`, `0.0001`).
// Lone surrogates have no UTF-8 form: Python fails (UnicodeEncodeError) and both modes reject.
describe('values strict mode rejects', () => {
  const cases = lines('non-strict.jsonl').map((l) => JSON.parse(l.toString('utf8')) as NonStrictCase);

  test('the set holds floats, large integers, infinities and lone surrogates', () => {
    assert.ok(cases.length >= 400);
    assert.ok(cases.filter((c) => !c.strict_valid).length >= 390);
    assert.ok(cases.some((c) => c.python.error === 'UnicodeEncodeError'));
    assert.ok(cases.some((c) => c.python.error === 'ValueError'));
    assert.ok(cases.some((c) => c.python.bytes !== c.python_js_value.bytes));
  });

  test('strict mode rejects exactly the values outside canonical JSON', () => {
    for (const c of cases) {
      const value: unknown = JSON.parse(c.input);
      if (c.strict_valid) {
        assert.equal(canonicalJson(value), c.python_js_value.bytes, c.input);
      } else {
        assert.throws(() => canonicalJson(value), isBadJson, c.input);
        assert.throws(() => canonicalJson(value, { strict: true }), isBadJson, c.input);
      }
    }
  });

  test('non-strict mode writes what Python writes for the same value', () => {
    const failures: string[] = [];
    for (const c of cases) {
      const value: unknown = JSON.parse(c.input);
      const want = c.python_js_value;
      try {
        const got = canonicalJson(value, { strict: false });
        if (got !== want.bytes) failures.push(`${c.input}: expected ${want.bytes ?? want.error}, got ${got}`);
      } catch (e) {
        if (want.error === undefined || !isBadJson(e)) failures.push(`${c.input}: expected ${want.bytes}, threw ${String(e)}`);
      }
    }
    assert.equal(failures.length, 0, `${failures.length} of ${cases.length} differ:\n${failures.slice(0, 5).join('\n')}`);
  });
});

test('spec appendix examples', () => {
  assert.equal(canonicalJson({}), '{}');
  assert.equal(canonicalJson({ one: 1, two: 'Two' }), '{"one":1,"two":"Two"}');
  assert.equal(canonicalJson({ b: '2', a: '1' }), '{"a":"1","b":"2"}');
  assert.equal(
    canonicalJson({ auth: { success: true, mxid: '@john.doe:example.com', profile: { display_name: 'John Doe', three_pids: [{ medium: 'email', address: 'john.doe@example.org' }, { medium: 'msisdn', address: '123456789' }] } } }),
    '{"auth":{"mxid":"@john.doe:example.com","profile":{"display_name":"John Doe","three_pids":[{"address":"john.doe@example.org","medium":"email"},{"address":"123456789","medium":"msisdn"}]},"success":true}}',
  );
  assert.equal(canonicalJson({ a: '日本語' }), '{"a":"日本語"}');
  assert.equal(canonicalJson({ 本: 2, 日: 1 }), '{"日":1,"本":2}');
  assert.equal(canonicalJson({ a: '\u65E5' }), '{"a":"日"}');
  assert.equal(canonicalJson({ a: null }), '{"a":null}');
  assert.equal(canonicalJson({ a: -0 }), '{"a":0}');
  assert.equal(canonicalJson({ a: '\u0000\u001f\b\n"\\' }), '{"a":"\\u0000\\u001f\\b\\n\\"\\\\"}');
});

test('keys sort by code point, not UTF-16 unit', () => {
  // U+FF61 sorts before U+1F600 by code point, after its surrogates by UTF-16 units.
  assert.equal(canonicalJson({ '\u{1F600}': 1, '\uFF61': 2 }), '{"\uFF61":2,"\u{1F600}":1}');
  assert.equal(canonicalJson({ 'a\u{10000}': 1, 'a\uFFFF': 2, a: 3 }), '{"a":3,"a\uFFFF":2,"a\u{10000}":1}');
  // Below U+E000 both orders agree: surrogates sort after U+D7FF either way.
  assert.equal(canonicalJson({ '\u{10000}': 1, '\uD7FF': 2 }), '{"\uD7FF":2,"\u{10000}":1}');
});

test('integer-like and inherited-name keys are ordinary keys', () => {
  // JavaScript enumerates integer-like keys first and in numeric order; canonical order is by string.
  assert.equal(canonicalJson({ b: 0, 10: 1, 9: 2, 1: 3, '-1': 4 }), '{"-1":4,"1":3,"10":1,"9":2,"b":0}');
  const parsed: unknown = JSON.parse('{"__proto__":{"x":1},"constructor":2,"toString":"s"}');
  assert.equal(canonicalJson(parsed), '{"__proto__":{"x":1},"constructor":2,"toString":"s"}');
  assert.equal(canonicalJson(Object.assign(Object.create(null) as object, { b: 1, a: 2 })), '{"a":2,"b":1}');
});

test('strict mode rejects floats and out-of-range integers', () => {
  assert.throws(() => canonicalJson({ a: 1.5 }), /Floats/);
  assert.throws(() => canonicalJson({ a: 2 ** 53 }), /range/);
  assert.throws(() => canonicalJson({ a: -(2 ** 53) }), /range/);
  assert.equal(canonicalJson({ a: 2 ** 53 - 1 }), '{"a":9007199254740991}');
  assert.equal(canonicalJson({ a: -(2 ** 53 - 1) }), '{"a":-9007199254740991}');
  assert.equal(canonicalJson({ a: 1.5 }, { strict: false }), '{"a":1.5}');
  assert.equal(canonicalJson({ a: 2 ** 53 }, { strict: false }), '{"a":9007199254740992}');
  assert.equal(canonicalJson({ a: 1e21 }, { strict: false }), '{"a":1000000000000000000000}');
  assert.equal(canonicalJson({ a: 1e-5 }, { strict: false }), '{"a":1e-05}');
  assert.throws(() => canonicalJson({ a: '\ud800' }), /surrogate/);
  assert.throws(() => canonicalJson({ '\udc00': 1 }, { strict: false }), /surrogate/);
});

test('values outside JSON are rejected in both modes', () => {
  for (const strict of [true, false]) {
    for (const bad of [NaN, Infinity, -Infinity, 1n, Symbol('s'), () => 1]) {
      assert.throws(() => canonicalJson({ a: bad }, { strict }), isBadJson, String(bad));
      assert.throws(() => canonicalJson([bad], { strict }), isBadJson, String(bad));
    }
    assert.throws(() => canonicalJson(undefined, { strict }), isBadJson);
  }
});

test('undefined members are left out and undefined array items become null, as JSON.stringify does', () => {
  assert.equal(canonicalJson({ b: undefined, a: 1, c: undefined }), '{"a":1}');
  assert.equal(canonicalJson({ a: undefined }), '{}');
  assert.equal(canonicalJson([undefined, 1, , 2]), '[null,1,null,2]'); // the third item is a hole
});

test('nesting too deep for the stack is a bad-JSON error, not a crash', () => {
  let deep: unknown = 'leaf';
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.throws(() => canonicalJson(deep), isBadJson);
  let ok: unknown = {};
  for (let i = 0; i < 1000; i++) ok = { k: ok };
  assert.equal(canonicalJson(ok), '{"k":'.repeat(1000) + '{}' + '}'.repeat(1000));
});

test('bytes are the UTF-8 encoding of the text', () => {
  const value = { '\u{1F600}': 'é\u2028\x7f', a: ['日', 1] };
  assert.deepEqual(canonicalJsonBytes(value), Buffer.from(canonicalJson(value), 'utf8'));
  assert.deepEqual(canonicalJsonBytes({ a: 'x' }), Buffer.from('{"a":"x"}'));
});

/** A direct reading of the spec, slow and obviously right: the property tests compare against it. */
function reference(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  const codePoints = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0)!);
  const byCodePoint = (a: string, b: string): number => {
    const x = codePoints(a);
    const y = codePoints(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  };
  const entries = Object.entries(value).sort(([a], [b]) => byCodePoint(a, b));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
}

describe('properties', () => {
  // Characters from every region that matters: ASCII controls, quotes, the BMP on both sides of
  // the surrogates, and astral code points.
  const char = fc.oneof(
    fc.integer({ min: 0, max: 0x7f }),
    fc.constantFrom(0x2028, 0x2029, 0xd7ff, 0xe000, 0xfeff, 0xff61, 0xffff, 0x10000, 0x1f600, 0x10ffff),
    fc.integer({ min: 0x80, max: 0xd7ff }),
    fc.integer({ min: 0xe000, max: 0x10ffff }),
  ).map((c) => String.fromCodePoint(c));
  const text = fc.array(char, { maxLength: 12 }).map((cs) => cs.join(''));
  const { json } = fc.letrec<{ json: unknown }>((tie) => ({
    json: fc.oneof(
      { depthSize: 'small' },
      text,
      fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
      fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, true, false, null),
      fc.array(tie('json'), { maxLength: 5 }),
      fc.dictionary(text, tie('json'), { maxKeys: 8 }),
    ),
  }));

  test('agrees with a direct reading of the spec', () => {
    fc.assert(fc.property(json, (v) => canonicalJson(v) === reference(v)), { numRuns: 3000 });
  });

  test('parses back to the same value and is a fixed point', () => {
    fc.assert(
      fc.property(json, (v) => {
        const text = canonicalJson(v);
        assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(v)));
        assert.equal(canonicalJson(JSON.parse(text)), text);
      }),
      { numRuns: 1000 },
    );
  });
});
