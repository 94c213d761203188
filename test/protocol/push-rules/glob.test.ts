import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  compileGlob,
  compileLiteral,
  foldCase,
  GLOB_CACHE_MAX_ENTRIES,
  GLOB_CACHE_MAX_POSITIONS,
  globCacheStats,
} from '../../../src/protocol/push-rules/glob.js';

const whole = (pattern: string, value: string) => compileGlob(pattern).matchesWhole(value);
const words = (pattern: string, value: string) => compileGlob(pattern).matchesWords(value);

describe('whole-value matching', () => {
  test("the spec's lunc?* example", () => {
    assert.equal(whole('lunc?*', 'Lunch plans'), true);
    assert.equal(whole('lunc?*', 'LUNCH'), true);
    assert.equal(whole('lunc?*', ' lunch'), false);
    assert.equal(whole('lunc?*', 'lunc'), false);
  });

  test('* matches zero or more characters, anywhere', () => {
    assert.equal(whole('*', ''), true);
    assert.equal(whole('*', 'anything at all'), true);
    assert.equal(whole('a*', 'a'), true);
    assert.equal(whole('a*c', 'abbbc'), true);
    assert.equal(whole('a*c', 'abbbcd'), false);
    assert.equal(whole('*c', 'xyzc'), true);
    assert.equal(whole('*c', 'xyzcx'), false);
    assert.equal(whole('a**b', 'ab'), true);
    assert.equal(whole('a*b*c', 'a-c-b'), false);
    assert.equal(whole('a*b*c', 'a-b-c'), true);
  });

  test('? matches exactly one character, a whole code point', () => {
    assert.equal(whole('a?c', 'abc'), true);
    assert.equal(whole('a?c', 'ac'), false);
    assert.equal(whole('a?c', 'abbc'), false);
    assert.equal(whole('a?c', 'a😀c'), true); // two UTF-16 units, one character
    assert.equal(whole('??', '😀'), false);
    assert.equal(whole('?*', ''), false);
  });

  test('no wildcard means equality, case-insensitive', () => {
    assert.equal(whole('m.room.message', 'm.room.message'), true);
    assert.equal(whole('m.room.message', 'M.Room.Message'), true);
    assert.equal(whole('m.room.message', 'm.room.messages'), false);
    assert.equal(whole('m.room.message', 'm.room.messag'), false);
    assert.equal(whole('', ''), true);
    assert.equal(whole('', 'x'), false);
  });

  test('case-insensitivity covers letters beyond ASCII', () => {
    assert.equal(whole('ÉCOLE', 'école'), true);
    assert.equal(whole('straße', 'STRA\u1E9EE'), true);
    assert.equal(whole('ΟΔΟΣ', 'οδοσ'), true);
    assert.equal(whole('ÉCOLE', 'ecole'), false);
    // A character whose lower case is two characters still counts as one for `?`.
    assert.equal(foldCase(0x130), 0x130);
    assert.equal(whole('?', '\u0130'), true);
  });

  test('regex metacharacters in the pattern are literal', () => {
    assert.equal(whole('a.b', 'a.b'), true);
    assert.equal(whole('a.b', 'axb'), false);
    assert.equal(whole('(a|b)+', '(a|b)+'), true);
    assert.equal(whole('(a|b)+', 'ab'), false);
    assert.equal(whole('[ab]', 'a'), false);
  });
});

describe('word matching (content.body)', () => {
  test("the spec's ex*ple example", () => {
    assert.equal(words('ex*ple', 'An example event.'), true);
    assert.equal(words('ex*ple', 'exple'), true);
    assert.equal(words('ex*ple', 'An exciting triple-whammy'), true);
    assert.equal(words('ex*ple', 'examples'), false);
    assert.equal(words('ex*ple', 'reexample'), false);
  });

  test('boundaries are the ends and any character outside [A-Za-z0-9_]', () => {
    assert.equal(words('alice', 'alice'), true);
    assert.equal(words('alice', 'hi alice!'), true);
    assert.equal(words('alice', 'hi ALICE'), true);
    assert.equal(words('alice', 'alice-bob'), true);
    assert.equal(words('alice', 'alice\nbob'), true);
    assert.equal(words('alice', 'malice'), false);
    assert.equal(words('alice', 'alice_bob'), false);
    assert.equal(words('alice', 'alice2'), false);
    assert.equal(words('alice', '2alice'), false);
    // Non-ASCII letters are not in the spec's word sets, so they bound words.
    assert.equal(words('alice', 'aliceé'), true);
  });

  test('a pattern starting with a non-word character still needs a boundary before it', () => {
    assert.equal(words('@room', '@room'), true);
    assert.equal(words('@room', 'hello @room!'), true);
    assert.equal(words('@room', 'hello:@room'), true);
    assert.equal(words('@room', 'x@room'), false);
    assert.equal(words('@room', 'hello @rooms'), false);
  });

  test('the match may start after a failed start', () => {
    assert.equal(words('ab', 'aab ab'), true);
    assert.equal(words('ab', 'aab abc'), false);
    assert.equal(words('a?c', 'abd abc'), true);
  });

  test('whole-value matching does not look for words', () => {
    assert.equal(whole('alice', 'hi alice'), false);
    assert.equal(words('alice', 'hi alice'), true);
  });
});

describe('literal globs', () => {
  test('wildcard characters stand for themselves', () => {
    assert.equal(compileLiteral('a*b?').matchesWhole('a*b?'), true);
    assert.equal(compileLiteral('a*b?').matchesWhole('axxbc'), false);
    assert.equal(compileLiteral('R2*D2').matchesWords('hey r2*d2!'), true);
    assert.equal(compileLiteral('R2*D2').matchesWords('hey r2xd2!'), false);
  });

  test('a literal and a pattern of the same text are cached apart', () => {
    assert.equal(compileGlob('a*').matchesWhole('abc'), true);
    assert.equal(compileLiteral('a*').matchesWhole('abc'), false);
  });
});

describe('pathological patterns', () => {
  const run = 'a'.repeat(50_000);

  test('many stars against a long run that almost matches', { timeout: 10_000 }, () => {
    assert.equal(whole('*a*a*a*a*a*a*b', run), false);
    assert.equal(whole('*a*a*a*a*a*a*b', run + 'b'), true);
    assert.equal(words('*a*a*a*a*a*a*b', run), false);
    assert.equal(words('*a*a*a*a*a*a*b', `${run} ${run}b`), true);
  });

  test('a long pattern of stars and ? against a long value', { timeout: 10_000 }, () => {
    const pattern = 'a*?'.repeat(100) + 'b';
    assert.equal(whole(pattern, run), false);
    assert.equal(whole(pattern, run + 'b'), true);
    assert.equal(words(pattern, run), false);
  });
});

describe('against a backtracking reference on small inputs', () => {
  // Alphabet without case-folding surprises, so a regex with the `i` flag is an exact oracle.
  const chars = fc.constantFrom('a', 'b', 'A', 'B', '_', '-', ' ', '1', '\n');
  const patternChars = fc.constantFrom('a', 'b', 'A', '-', ' ', '_', '*', '?');
  const value = fc.array(chars, { maxLength: 12 }).map((a) => a.join(''));
  const pattern = fc.array(patternChars, { maxLength: 7 }).map((a) => a.join(''));

  function toRegexSource(p: string): string {
    return [...p]
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')))
      .join('');
  }

  test('whole-value matching agrees with ^pattern$', () => {
    fc.assert(
      fc.property(pattern, value, (p, v) => {
        const expected = new RegExp(`^(?:${toRegexSource(p)})$`, 'isu').test(v);
        assert.equal(whole(p, v), expected);
      }),
      { numRuns: 3000 },
    );
  });

  test('word matching agrees with (^|\\W)pattern(\\W|$) over the spec word set', () => {
    fc.assert(
      fc.property(pattern, value, (p, v) => {
        const w = '[^A-Za-z0-9_]';
        const expected = new RegExp(`(?:^|${w})(?:${toRegexSource(p)})(?:${w}|$)`, 'isu').test(v);
        assert.equal(words(p, v), expected);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('compile cache', () => {
  test('a pattern compiled twice is the same object', () => {
    assert.equal(compileGlob('cached-pattern-*'), compileGlob('cached-pattern-*'));
  });

  test('the cache stays within its bounds', () => {
    for (let i = 0; i < GLOB_CACHE_MAX_ENTRIES + 500; i++) compileGlob(`bound-${i}-*`);
    let stats = globCacheStats();
    assert.ok(stats.entries <= GLOB_CACHE_MAX_ENTRIES);
    assert.ok(stats.entries > 0);
    // Long patterns are bounded by total size, not count.
    for (let i = 0; i < 20; i++) compileGlob(`${i}`.padEnd(GLOB_CACHE_MAX_POSITIONS / 8, '*x'));
    stats = globCacheStats();
    assert.ok(stats.positions <= GLOB_CACHE_MAX_POSITIONS);
    // One pattern larger than the whole cache still compiles and matches.
    const huge = 'x'.repeat(GLOB_CACHE_MAX_POSITIONS + 1);
    assert.equal(compileGlob(huge).matchesWhole(huge.toUpperCase()), true);
    assert.ok(globCacheStats().positions <= GLOB_CACHE_MAX_POSITIONS);
  });
});
