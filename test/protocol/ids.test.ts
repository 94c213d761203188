import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import fc from 'fast-check';
import { HearthError } from '../../src/protocol/errors.js';
import type { EventIdFormat } from '../../src/protocol/room-versions.js';
import {
  type RoomId,
  type ServerName,
  type UserId,
  eventIdFromReferenceHash,
  isCompliantUserId,
  isEventId,
  isEventIdForFormat,
  isIpv4Literal,
  isIpv6Literal,
  isKeyId,
  isLocalUserId,
  isMxcUri,
  isRoomAlias,
  isRoomId,
  isServerName,
  isUserId,
  keyIdFrom,
  localpartOf,
  mxcPartsOf,
  mxcUriFrom,
  parseEventId,
  parseEventIdForFormat,
  parseKeyId,
  parseLocalUserId,
  parseMxcUri,
  parseRoomAlias,
  parseRoomId,
  parseServerName,
  parseServerNameParts,
  parseUserId,
  roomAliasFrom,
  roomIdFrom,
  serverNameOf,
  tryParseEventId,
  tryParseEventIdForFormat,
  tryParseKeyId,
  tryParseLocalUserId,
  tryParseMxcUri,
  tryParseRoomAlias,
  tryParseRoomId,
  tryParseServerName,
  tryParseUserId,
  userIdFrom,
  validateLocalpart,
} from '../../src/protocol/ids.js';

/** One identifier kind as the tables exercise it: its parse, guard and try-parse. */
interface Kind {
  name: string;
  parse: (s: unknown) => string;
  is: (s: unknown) => boolean;
  tryParse: (s: unknown) => unknown;
}

const nonCompliant = { allowNonCompliant: true } as const;
const kinds: Record<string, Kind> = {
  serverName: { name: 'server name', parse: parseServerName, is: isServerName, tryParse: tryParseServerName },
  userId: { name: 'user ID', parse: parseUserId, is: isUserId, tryParse: tryParseUserId },
  nonCompliantUserId: {
    name: 'user ID',
    parse: (s) => parseUserId(s, nonCompliant),
    is: (s) => isUserId(s, nonCompliant),
    tryParse: (s) => tryParseUserId(s, nonCompliant),
  },
  localUserId: { name: 'user ID', parse: parseLocalUserId, is: isLocalUserId, tryParse: tryParseLocalUserId },
  roomId: { name: 'room ID', parse: parseRoomId, is: isRoomId, tryParse: tryParseRoomId },
  roomAlias: { name: 'room alias', parse: parseRoomAlias, is: isRoomAlias, tryParse: tryParseRoomAlias },
  eventId: { name: 'event ID', parse: parseEventId, is: isEventId, tryParse: tryParseEventId },
  mxc: { name: 'mxc URI', parse: parseMxcUri, is: isMxcUri, tryParse: tryParseMxcUri },
  keyId: { name: 'key ID', parse: (s) => parseKeyId(s).keyId, is: isKeyId, tryParse: (s) => tryParseKeyId(s)?.keyId },
};

function assertRejects(fn: () => unknown, errcode = 'M_INVALID_PARAM', message?: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof HearthError, `expected HearthError, got ${String(e)}`);
    assert.equal(e.status, 400);
    assert.equal(e.errcode, errcode);
    if (message) assert.match(e.message, message);
    return true;
  });
}

function accepts(kind: Kind, s: string): void {
  assert.equal(kind.parse(s), s, `${kind.name} ${JSON.stringify(s)} should parse`);
  assert.equal(kind.is(s), true);
  assert.equal(kind.tryParse(s), s);
}

function rejects(kind: Kind, s: string, message?: RegExp): void {
  assertRejects(() => kind.parse(s), 'M_INVALID_PARAM', message);
  assert.equal(kind.is(s), false, `${kind.name} ${JSON.stringify(s)} should be rejected`);
  assert.equal(kind.tryParse(s), undefined);
}

function table(kind: Kind, valid: readonly string[], invalid: readonly string[]): void {
  test('accepts valid examples', () => valid.forEach((s) => accepts(kind, s)));
  test('rejects invalid examples', () => invalid.forEach((s) => rejects(kind, s)));
}

const ex = 'example.org';
const sn = (s: string) => parseServerName(s);

describe('server names', () => {
  table(
    kinds.serverName!,
    [
      'matrix.org', 'matrix.org:8888', '1.2.3.4', '1.2.3.4:1234', '[1234:5678::abcd]',
      '[1234:5678::abcd]:5678', 'localhost', 'localhost:1', 'localhost:65535', 'MATRIX.ORG',
      '0.0.0.0', '255.255.255.255', '[::1]', '[::]', '[2001:db8::1]', '[::ffff:1.2.3.4]',
      '[1:2:3:4:5:6:7:8]', '[1:2:3:4:5:6:1.2.3.4]', '[1::]', '[1:2:3:4:5:6:7::]', '[FE80::a:B]',
      '[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]', 'xn--bcher-kva.example', 'a-b.c-d',
      '1.2.3.4.5', '1.2.3', 'example.org.', 'a'.repeat(255), `${'a'.repeat(249)}:65535`,
    ],
    [
      '', ':8448', 'matrix.org:', 'matrix.org:0', 'matrix.org:65536', 'matrix.org:123456',
      'matrix.org:-1', 'matrix.org:80a', 'matrix.org: 80', 'matrix.org:+80', 'matrix.org:1:2',
      '1.2.3.256', '256.1.1.1', '1.2.3.999', '01.2.3.4', '1.2.3.04', '::1', '2001:db8::1',
      '[::1', '::1]', '[::1]:', '[::1]:0', '[::1]:65536', '[::1]x', '[::1]x80', '[::1]:80:80', '[]', '[1.2.3.4]',
      '[1:2:3:4:5:6:7:8:9]', '[1:2:3:4:5:6:7]', '[1::2::3]', '[:::]', '[1:::2]', '[:1::]', '[::1:]',
      '[1:2:3:4:5:6:7:8::]', '[12345::]', '[::g]', '[::1%eth0]', '[1.2.3.4::]', '[::1.2.3.256]',
      '[::1.2.3.04]', '[1:2:3:4:5:6:7:1.2.3.4]', '[::1.2.3.4:5]', '[ ::1]', 'a'.repeat(256),
      `${'a'.repeat(250)}:65535`, 'matrix org', 'matrix.org ', ' matrix.org', 'matrix\0.org',
      'mätrix.org', 'matrix_org', 'user@host', 'matrix.org/path', 'matrix.org\n',
    ],
  );

  test('ports at the edges', () => {
    assert.equal(parseServerNameParts('h:1').port, 1);
    assert.equal(parseServerNameParts('h:65535').port, 65535);
    assertRejects(() => parseServerName('h:0'), 'M_INVALID_PARAM', /port/);
    assertRejects(() => parseServerName('h:65536'), 'M_INVALID_PARAM', /port/);
  });

  test('parts: host without brackets, port when present, kind', () => {
    const cases: [string, string, number | undefined, string][] = [
      ['matrix.org', 'matrix.org', undefined, 'dns'],
      ['matrix.org:8448', 'matrix.org', 8448, 'dns'],
      ['1.2.3.4', '1.2.3.4', undefined, 'ipv4'],
      ['1.2.3.4:1234', '1.2.3.4', 1234, 'ipv4'],
      ['[::1]', '::1', undefined, 'ipv6'],
      ['[2001:db8::1]:8448', '2001:db8::1', 8448, 'ipv6'],
      ['[::ffff:1.2.3.4]:1', '::ffff:1.2.3.4', 1, 'ipv6'],
      ['1.2.3.4.5', '1.2.3.4.5', undefined, 'dns'],
    ];
    for (const [input, host, port, kind] of cases) {
      const p = parseServerNameParts(input);
      assert.equal(p.serverName, input);
      assert.equal(p.host, host);
      assert.equal(p.port, port);
      assert.equal('port' in p, port !== undefined);
      assert.equal(p.kind, kind);
    }
  });

  test('messages say what is wrong', () => {
    assertRejects(() => parseServerName('2001:db8::1'), 'M_INVALID_PARAM', /brackets/);
    assertRejects(() => parseServerName('1.2.3.256'), 'M_INVALID_PARAM', /IPv4/);
    assertRejects(() => parseServerName('[::g]'), 'M_INVALID_PARAM', /IPv6/);
    assertRejects(() => parseServerName('a'.repeat(256)), 'M_INVALID_PARAM', /256 characters/);
  });

  test('IP literal checks agree with node:net on generated and mutated addresses', () => {
    const mutate = (s: string, at: number, ch: string, mode: number): string => {
      const i = at % (s.length + 1);
      return mode === 0 ? s.slice(0, i) + s.slice(i + 1) : mode === 1 ? s.slice(0, i) + ch + s.slice(i) : s;
    };
    const v6chars = fc.constantFrom(...'0123456789abcdefABCDEF:.g');
    fc.assert(
      fc.property(
        fc.oneof(fc.ipV6(), fc.string({ unit: v6chars, maxLength: 46 })),
        fc.nat(), v6chars, fc.nat(2),
        (addr, at, ch, mode) => {
          const s = mutate(addr, at, ch, mode);
          assert.equal(isIpv6Literal(s), isIPv6(s), s);
          assert.equal(isServerName(`[${s}]`), isIPv6(s), s);
        },
      ),
      { numRuns: 3000 },
    );
    const v4chars = fc.constantFrom(...'0123456789.x');
    fc.assert(
      fc.property(
        fc.oneof(fc.ipV4(), fc.ipV4Extended(), fc.string({ unit: v4chars, maxLength: 16 })),
        fc.nat(), v4chars, fc.nat(2),
        (addr, at, ch, mode) => {
          const s = mutate(addr, at, ch, mode);
          assert.equal(isIpv4Literal(s), isIPv4(s), s);
        },
      ),
      { numRuns: 3000 },
    );
  });
});

// Room for a localpart that makes `@<local>:example.org` exactly 255 bytes.
const fill = 255 - 2 - ex.length;

describe('user IDs', () => {
  const strictValid = ['@alice:example.org', '@a.b_c=d-e/f+g:example.org', '@0:1.2.3.4:8448', '@x:[::1]:8448', `@${'a'.repeat(fill)}:${ex}`];
  // Uppercase and other printable ASCII: refused by the strict grammar, allowed historically.
  const historicalOnly = ['@Alice:example.org', '@al!ce:example.org', '@~:example.org', '@@:example.org', '@a#b$[]{}"\'*:example.org'];
  // Outside printable ASCII or empty: only in the non-compliant grammar.
  const nonCompliantOnly = ['@ålice:example.org', '@:example.org', '@a b:example.org', '@\u0001:example.org', '@\x7f:example.org', '@😀:example.org', `@${'é'.repeat(fill / 2)}:${ex}`];
  const neverValid = [
    '', 'alice:example.org', '#alice:example.org', ' @alice:example.org', '@alice', '@alice:', '@alice: example.org',
    '@alice:example.org ', '@alice:example.org\n', '@alice:exa mple.org', '@alice:example.org:0', '@alice:example.org:65536',
    '@alice:1.2.3.256', '@alice:::1', '@al\0ice:example.org', '@\ud800:example.org', `@${'a'.repeat(fill + 1)}:${ex}`,
    `@${'é'.repeat(fill / 2)}a:${ex}`,
  ];

  describe('strict grammar (parseLocalUserId)', () =>
    table(kinds.localUserId!, strictValid, [...historicalOnly, ...nonCompliantOnly, ...neverValid]));
  describe('historical grammar (parseUserId)', () =>
    table(kinds.userId!, [...strictValid, ...historicalOnly], [...nonCompliantOnly, ...neverValid]));
  describe('non-compliant grammar (allowNonCompliant)', () =>
    table(kinds.nonCompliantUserId!, [...strictValid, ...historicalOnly, ...nonCompliantOnly], neverValid));

  test('the byte limit counts UTF-8 bytes', () => {
    const exact = `@${'€'.repeat(80)}aa:${ex}`; // 80 × 3 + 2 = 242 bytes of localpart
    assert.equal(Buffer.byteLength(exact), 255);
    assert.equal(parseUserId(exact, nonCompliant), exact);
    assertRejects(() => parseUserId(`@${'€'.repeat(80)}aaa:${ex}`, nonCompliant), 'M_INVALID_PARAM', /256 bytes/);
    assertRejects(() => parseUserId(`@${'😀'.repeat(61)}:${ex}`, nonCompliant), 'M_INVALID_PARAM', /257 bytes/);
  });

  test('isCompliantUserId', () => {
    assert.equal(isCompliantUserId(parseUserId('@Alice:example.org')), true);
    assert.equal(isCompliantUserId(parseUserId('@:example.org', nonCompliant)), false);
    assert.equal(isCompliantUserId(parseUserId('@é:example.org', nonCompliant)), false);
  });

  test('validateLocalpart: strict grammar, M_INVALID_USERNAME, optional length check', () => {
    for (const ok of ['alice', 'a.b_c=d-e/f+g', '0', 'a'.repeat(fill)]) assert.equal(validateLocalpart(ok), ok);
    for (const bad of ['', 'Alice', 'al:ice', 'al ice', 'ålice', 'a\0', '@alice', '*'])
      assertRejects(() => validateLocalpart(bad), 'M_INVALID_USERNAME');
    assertRejects(() => validateLocalpart(7), 'M_INVALID_USERNAME', /expected a string, got number/);
    const server = sn(ex);
    assert.equal(validateLocalpart('a'.repeat(fill), { serverName: server }), 'a'.repeat(fill));
    assertRejects(() => validateLocalpart('a'.repeat(fill + 1), { serverName: server }), 'M_INVALID_USERNAME', /256 bytes/);
    assertRejects(() => validateLocalpart('Alice', { errcode: 'M_EXCLUSIVE' }), 'M_EXCLUSIVE');
  });

  test('userIdFrom builds and checks', () => {
    assert.equal(userIdFrom('alice', sn('example.org:8448')), '@alice:example.org:8448');
    assertRejects(() => userIdFrom('Alice', sn(ex)));
    assertRejects(() => userIdFrom('a'.repeat(fill + 1), sn(ex)));
  });
});

describe('room IDs', () => {
  const exact = `!${'€'.repeat(80)}aa:${ex}`;
  table(
    kinds.roomId!,
    [
      '!abc:example.org', '!ABCdef123:example.org:8448', '!a b:example.org', '!é:example.org', '!\u0001x:[::1]', '!abc:1.2.3.4', '!@#$:x', exact,
      // Room version 12: the create event's id with `!`, no server name.
      '!CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6o', '!Nhcu5BS-UMnFX7hBVfVSoXiD7OgH6iRT-xyIuqDnpYQ',
    ],
    [
      '', 'abc:example.org', '#abc:example.org', '!abc', '!:example.org', '!abc:', '!abc: example.org', '!a\0b:example.org',
      '!\ud800x:example.org', '!abc:exa mple.org', '!abc:1.2.3.256', '!abc:example.org:0', `!${'€'.repeat(80)}aaa:${ex}`,
      // The domain-less form is exactly 43 characters of URL-safe base64.
      '!CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6', '!CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6oo', '!CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgr+6o',
    ],
  );
  test('roomIdFrom', () => {
    assert.equal(roomIdFrom('abc', sn(ex)), '!abc:example.org');
    assertRejects(() => roomIdFrom('a:b', sn('x')), 'M_INVALID_PARAM');
  });
});

describe('room aliases', () => {
  table(
    kinds.roomAlias!,
    ['#room:example.org', '#Room With Spaces:example.org:8448', '#日本語:example.org', '#a:[::1]', `#${'a'.repeat(fill)}:${ex}`],
    ['', 'room:example.org', '!room:example.org', '#room', '#:example.org', '#room:', '#ro\0om:example.org', '#\udc00:example.org',
      '#room:exa mple.org', `#${'a'.repeat(fill + 1)}:${ex}`],
  );
  test('roomAliasFrom', () => {
    assert.equal(roomAliasFrom('room', sn(ex)), '#room:example.org');
    assertRejects(() => roomAliasFrom('', sn(ex)));
  });
});

// 30 bytes fb ff bf encode as "+/+/" in standard and "-_-_" in URL-safe base64; two zero bytes as "AAA".
const hashBytes = Uint8Array.from([...Array.from({ length: 10 }, () => [0xfb, 0xff, 0xbf]).flat(), 0, 0]);
const stdOnly = `$${'+/+/'.repeat(10)}AAA`;
const urlOnly = `$${'-_-_'.repeat(10)}AAA`;
const v3Example = '$CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6o'; // rooms/v3.md, alphanumeric only
const v4Example = '$Rqnc-F-dvnEYJTyHq_iKxU2bZ1CI92-kuZq3a5lr5Zg'; // rooms/v4.md
const v1Example = '$abc123:example.org';

describe('event IDs', () => {
  table(
    kinds.eventId!,
    [v1Example, '$a:1.2.3.4:8448', '$a b/c+d:[::1]', '$é:x', `$${'a'.repeat(fill)}:${ex}`, stdOnly, urlOnly, v3Example, v4Example],
    [
      '', '$', 'abc:example.org', '!abc:example.org', '$abc', '$:example.org', '$abc:', '$a\0:example.org', '$abc:exa mple.org',
      `$${'a'.repeat(fill + 1)}:${ex}`, v3Example.slice(1), v3Example.slice(0, -1), `${v3Example}A`, `${v3Example.slice(0, -1)}=`,
      `${v3Example}=`, `$${'+/-_'.repeat(10)}AAA`, `${v3Example.slice(0, -1)}B`, `${v4Example.slice(0, -1)}h`,
      `$${'A'.repeat(42)}.`, `$${'A'.repeat(42)} `,
    ],
  );

  test('each format accepts only its own form', () => {
    const cases: [string, EventIdFormat[]][] = [
      [v1Example, ['v1']],
      ['$a:[::1]:8448', ['v1']],
      [stdOnly, ['v3']],
      [urlOnly, ['v4']],
      [v4Example, ['v4']],
      [v3Example, ['v3', 'v4']],
      [`$${'+/-_'.repeat(10)}AAA`, []],
      [`${v3Example.slice(0, -1)}B`, []],
      [`$${'A'.repeat(43)}:x`, ['v1']],
      ['$abc', []],
    ];
    for (const [id, formats] of cases) {
      for (const format of ['v1', 'v3', 'v4'] as const) {
        const ok = formats.includes(format);
        assert.equal(isEventIdForFormat(id, format), ok, `${id} in ${format}`);
        assert.equal(tryParseEventIdForFormat(id, format), ok ? id : undefined);
        if (ok) assert.equal(parseEventIdForFormat(id, format), id);
        else assertRejects(() => parseEventIdForFormat(id, format));
      }
    }
  });

  test('eventIdFromReferenceHash encodes in the format’s alphabet, unpadded', () => {
    assert.equal(eventIdFromReferenceHash(hashBytes, 'v3'), stdOnly);
    assert.equal(eventIdFromReferenceHash(hashBytes, 'v4'), urlOnly);
    assert.equal(eventIdFromReferenceHash(new Uint8Array(32), 'v4'), `$${'A'.repeat(43)}`);
    assert.throws(() => eventIdFromReferenceHash(new Uint8Array(31), 'v3'), HearthError);
  });

  test('every SHA-256 hash makes an ID its format accepts', () => {
    fc.assert(
      fc.property(fc.uint8Array(), (data) => {
        const hash = createHash('sha256').update(data).digest();
        for (const format of ['v3', 'v4'] as const) {
          const id = eventIdFromReferenceHash(hash, format);
          assert.equal(parseEventIdForFormat(id, format), id);
          assert.deepEqual(Buffer.from(id.slice(1), format === 'v3' ? 'base64' : 'base64url'), hash);
        }
      }),
    );
  });
});

describe('mxc URIs', () => {
  table(
    kinds.mxc!,
    ['mxc://example.org/abc123', 'mxc://example.org:8448/A-b_C', 'mxc://[::1]:8448/x', 'mxc://1.2.3.4/x', 'mxc://a/-'],
    [
      '', 'mxc://example.org/', 'mxc://example.org', 'mxc:///abc', 'mxc://example.org/../etc/passwd', 'mxc://example.org/a/b',
      'mxc://example.org/a%2Fb', 'mxc://example.org/a.b', 'MXC://example.org/abc', 'http://example.org/abc', 'mxc:/example.org/abc',
      'mxc://exa mple.org/abc', 'mxc://example.org/abc ', 'mxc://example.org/ab\0c', 'mxc://example.org:0/abc',
      'mxc://user@example.org/abc', 'mxc://example.org/abc?x=1', 'mxc://::1/abc', 'mxc://example.org/é',
    ],
  );
  test('parts and builder', () => {
    assert.deepEqual(mxcPartsOf(parseMxcUri('mxc://[::1]:8448/A-b_C')), { serverName: '[::1]:8448', mediaId: 'A-b_C' });
    assert.equal(mxcUriFrom(sn(ex), 'abc'), 'mxc://example.org/abc');
    assertRejects(() => mxcUriFrom(sn(ex), '../x'));
  });
});

describe('key IDs', () => {
  table(
    kinds.keyId!,
    ['ed25519:1', 'ed25519:a_AbC1', 'ed25519:key1', 'ed25519:policy_server', 'signed_curve25519:AAAAAQ'],
    ['', 'ed25519', 'ed25519:', ':abc', 'ed25519:a-b', 'ed25519:a:b', 'ed25519:a b', 'ed25519:a.b', 'ed-25519:a', 'ed25519:é', ' ed25519:1'],
  );
  test('parts and builder', () => {
    assert.deepEqual(parseKeyId('ed25519:a_AbC1'), { algorithm: 'ed25519', version: 'a_AbC1', keyId: 'ed25519:a_AbC1' });
    assert.deepEqual(tryParseKeyId('ed25519:k'), { algorithm: 'ed25519', version: 'k', keyId: 'ed25519:k' });
    assert.equal(keyIdFrom('ed25519', 'auto'), 'ed25519:auto');
    assertRejects(() => keyIdFrom('ed25519', 'a-b'));
  });
});

describe('accessors', () => {
  test('localpartOf and serverNameOf', () => {
    const u = parseUserId('@Alice:[::1]:8448');
    assert.equal(localpartOf(u), 'Alice');
    assert.equal(serverNameOf(u), '[::1]:8448');
    assert.equal(localpartOf(parseUserId('@:x:1', nonCompliant)), '');
    assert.equal(serverNameOf(parseRoomId('!abc:example.org')), 'example.org');
    assert.equal(serverNameOf(parseRoomId('!CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6o')), undefined);
    assert.equal(localpartOf(parseRoomId('!CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6o')), 'CD66HAED5npg6074c6pDtLKalHjVfYb2q4Q3LZgrW6o');
    assert.equal(localpartOf(parseRoomAlias('#a b:example.org:8')), 'a b');
    assert.equal(serverNameOf(parseRoomAlias('#a b:example.org:8')), 'example.org:8');
    assert.equal(serverNameOf(parseEventId('$x:1.2.3.4')), '1.2.3.4');
    assert.equal(serverNameOf(parseEventId(v4Example)), undefined);
  });
});

describe('every parser', () => {
  const nonStrings: unknown[] = [42, null, undefined, {}, [], true, Symbol('s'), 10n, ['@a:b']];
  for (const [key, kind] of Object.entries(kinds)) {
    test(`${key}: non-string input is a clean 400`, () => {
      for (const v of nonStrings) {
        assertRejects(() => kind.parse(v), 'M_INVALID_PARAM', /expected a string/);
        assert.equal(kind.is(v), false);
        assert.equal(kind.tryParse(v), undefined);
      }
    });
  }

  test('an errcode option replaces M_INVALID_PARAM', () => {
    const opts = { errcode: 'M_BAD_JSON' };
    assertRejects(() => parseUserId('x', opts), 'M_BAD_JSON');
    assertRejects(() => parseUserId(1, opts), 'M_BAD_JSON');
    assertRejects(() => parseLocalUserId('@A:b', opts), 'M_BAD_JSON');
    assertRejects(() => parseRoomId('x', opts), 'M_BAD_JSON');
    assertRejects(() => parseRoomAlias('x', opts), 'M_BAD_JSON');
    assertRejects(() => parseEventId('x', opts), 'M_BAD_JSON');
    assertRejects(() => parseEventIdForFormat('x', 'v4', opts), 'M_BAD_JSON');
    assertRejects(() => parseServerName('', opts), 'M_BAD_JSON');
    assertRejects(() => parseServerNameParts('', opts), 'M_BAD_JSON');
    assertRejects(() => parseMxcUri('x', opts), 'M_BAD_JSON');
    assertRejects(() => parseKeyId('x', opts), 'M_BAD_JSON');
  });

  test('messages name the kind, quote the input and give the reason', () => {
    assertRejects(() => parseUserId('alice'), 'M_INVALID_PARAM', /^Invalid user ID "alice": must start with '@'$/);
    assertRejects(() => parseRoomId('!abc'), 'M_INVALID_PARAM', /^Invalid room ID "!abc": has no ':'/);
    assertRejects(() => parseUserId('@a\0:b'), 'M_INVALID_PARAM', /"@a\\u0000:b"/);
    assertRejects(() => parseUserId(`@${'a'.repeat(500)}:b`), 'M_INVALID_PARAM', /a…": is 503 bytes long/);
    const reasons: [() => unknown, RegExp][] = [
      [() => parseUserId('@:b'), /localpart is empty/],
      [() => parseLocalUserId('@:b'), /localpart is empty/],
      [() => parseUserId('@a b:c'), /printable ASCII/],
      [() => parseServerName(':1'), /empty hostname/],
      [() => parseServerName('[::1]x80'), /after '\]'/],
      [() => parseMxcUri('mxc://a/'), /media ID is empty/],
      [() => parseKeyId(':a'), /algorithm is empty/],
      [() => parseKeyId('a:'), /version is empty/],
      [() => parseEventIdForFormat('$abc', 'v4'), /43 characters of URL-safe/],
      [() => parseRoomAlias('#:a'), /alias is empty/],
    ];
    for (const [fn, message] of reasons) assertRejects(fn, 'M_INVALID_PARAM', message);
  });

  test('brands keep plain strings and other kinds out', () => {
    const takesUserId = (u: UserId): string => u;
    const room: RoomId = parseRoomId('!a:b');
    // @ts-expect-error a plain string is not a UserId
    takesUserId('@a:b');
    // @ts-expect-error a RoomId is not a UserId
    takesUserId(room);
    const server: ServerName = serverNameOf(parseUserId('@a:b'));
    assert.equal(takesUserId(parseUserId(`@a:${server}`)), '@a:b');
  });
});

describe('properties', () => {
  const serverNameArb = fc.tuple(
    fc.oneof(fc.domain(), fc.ipV4(), fc.ipV6().map((a) => `[${a}]`)),
    fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
  ).map(([h, p]) => (p === undefined ? h : `${h}:${p}`));
  const strictLocal = fc.string({ unit: fc.constantFrom(...'abcxyz0189._=-/+'), minLength: 1, maxLength: 40 });
  const historicalLocal = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).filter((c) => c !== 0x3a).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 40 });
  const opaqueLocal = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replace(/[:\0]/g, '_'));
  const fits = (s: string) => Buffer.byteLength(s) <= 255;

  test('generated server names parse, and their parts rebuild them', () => {
    fc.assert(
      fc.property(serverNameArb, (s) => {
        fc.pre(s.length <= 255);
        const p = parseServerNameParts(s);
        const host = p.kind === 'ipv6' ? `[${p.host}]` : p.host;
        assert.equal(p.port === undefined ? host : `${host}:${p.port}`, s);
      }),
    );
  });

  test('generated IDs parse unchanged and their parts are the pieces they were built from', () => {
    fc.assert(
      fc.property(strictLocal, historicalLocal, opaqueLocal, serverNameArb, (strict, historical, opaque, server) => {
        const s = `@${strict}:${server}`;
        fc.pre(fits(s) && fits(`@${historical}:${server}`) && fits(`!${opaque}x:${server}`) && server.length <= 255);
        assert.equal(parseLocalUserId(s), s);
        const h = parseUserId(`@${historical}:${server}`);
        assert.equal(localpartOf(h), historical);
        assert.equal(serverNameOf(h), server);
        const r = parseRoomId(`!${opaque}x:${server}`);
        assert.equal(localpartOf(r), `${opaque}x`);
        assert.equal(serverNameOf(r), server);
        assert.equal(parseUserId(`@${opaque}:${server}`, nonCompliant), `@${opaque}:${server}`);
        assert.equal(serverNameOf(parseEventId(`$${opaque}x:${server}`)), server);
        assert.deepEqual(mxcPartsOf(parseMxcUri(`mxc://${server}/${strict.replace(/[^A-Za-z0-9_-]/g, '_')}`)), {
          serverName: server,
          mediaId: strict.replace(/[^A-Za-z0-9_-]/g, '_'),
        });
      }),
    );
  });

  test('whatever a parser accepts round-trips unchanged; whatever it refuses is a HearthError', () => {
    const pieces = fc.oneof(
      fc.constantFrom('@', '!', '#', '$', ':', 'mxc://', '/', '[', ']', '::1', '.', '\0', ' ', 'é', '😀', '\ud800', 'ed25519', '8448'),
      fc.string({ maxLength: 6 }),
      fc.string({ unit: 'binary', maxLength: 4 }),
      serverNameArb,
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 8 }).map((a) => a.join('')), (s) => {
        for (const kind of Object.values(kinds)) {
          let out: string | undefined;
          try {
            out = kind.parse(s);
          } catch (e) {
            assert.ok(e instanceof HearthError && e.status === 400, String(e));
          }
          assert.equal(out === undefined ? undefined : out, kind.tryParse(s));
          assert.equal(kind.is(s), out !== undefined);
          if (out !== undefined) assert.equal(out, s);
        }
      }),
      { numRuns: 2000 },
    );
  });

  test('arbitrary values never throw anything but HearthError', () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        for (const kind of Object.values(kinds)) {
          try {
            kind.parse(v);
          } catch (e) {
            assert.ok(e instanceof HearthError, String(e));
          }
        }
      }),
    );
  });
});
