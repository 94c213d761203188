#!/usr/bin/python3
"""Generates the canonical JSON cross-check corpus in test/data/canonical-json/.

The expected bytes come from Debian's python3-canonicaljson 1.6.2 (encode_canonical_json), an
implementation independent of ours. Run with the system Python that has it:

    /usr/bin/python3 scripts/gen-canonical-json-corpus.py

The output is fully determined by SEED: running the script again rewrites identical files.

Files written:
  inputs.jsonl     one JSON object per line, written non-canonically (shuffled keys, whitespace,
                   \\u escapes, surrogate-pair escapes, "-0"), so a reader must parse and re-encode it.
  expected.jsonl   line for line, the canonical bytes python3-canonicaljson produces for that object.
  non-strict.jsonl numbers and strings at the edge of strict canonical JSON (floats, integers beyond
                   ±(2^53−1), infinities, lone surrogates), with whether the spec allows the value
                   JSON.parse makes of each and what Python writes for it; see non_strict_cases.
"""

import json
import os
import random
import sys

import canonicaljson

SEED = 20_260_601
MAIN_ENTRIES = 11_000
MAX_SAFE = 2**53 - 1
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'test', 'data', 'canonical-json')

if canonicaljson.__version__ != '1.6.2':
    sys.exit(f'expected python3-canonicaljson 1.6.2, found {canonicaljson.__version__}')

# --- Characters and keys -------------------------------------------------------------------------

CONTROLS = [chr(c) for c in range(0x20)] + ['\x7f']
ASTRAL = ['\U00010000', '\U0001F600', '\U0001F389', '\U0001F44D\U0001F3FD', '\U0002A6D6', '\U000E0001',
          '\U0010FFFF', '\U0001D11E']
# BMP characters at UTF-8 length boundaries, around the surrogate block, and U+2028/U+2029, which
# some encoders escape for JavaScript's sake (canonical JSON must not).
BMP = ['\u0080', '\u00e9', '\u00ff', '\u0100', '\u07ff', '\u0800', '\u2028', '\u2029', '\u65e5', '\u672c',
       '\ud7ff', '\ue000', '\uf8ff', '\ufb01', '\ufeff', '\uff61', '\ufffd', '\uffff', '\u00a0']
SPECIAL_ASCII = ['"', '\\', '/', "'", ' ', '<', '>', '&', '`']
ASCII_LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:@!$#'

# Keys whose order differs between UTF-16 code units (JavaScript's default sort) and code points:
# U+E000–U+FFFF sort after the surrogates D800–DFFF by code unit but before U+10000 by code point.
ORDER_KEYS = ['\ue000', '\uff61', '\ufffd', '\uffff', '\U00010000', '\U0001F600', '\U0010FFFF', '\ud7ff',
              'a\ue000', 'a\uffff', 'a\U00010000', 'a\U0010FFFF', 'a', 'a\x00', 'a\x7f', 'ab', 'a\u2028',
              '\U0001F600\ue000', '\U0001F600\U00010000', '\U0001F600\U0001F600', 'Z', 'z',
              '\u00e9', 'e\u0301', '\uffff\uffff', '\U00010000\x00']
# Keys that are special to JavaScript objects: integer-like keys enumerate first, in numeric order;
# the rest are inherited property names.
JS_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', 'length',
           '0', '1', '2', '9', '10', '100', '01', '-1', '-0', '1.5', '1e3', '4294967294', '4294967295',
           '9007199254740991', '9007199254740993', ' 1', '']
MATRIX_KEYS = ['type', 'content', 'sender', 'room_id', 'event_id', 'state_key', 'origin_server_ts', 'depth',
               'prev_events', 'auth_events', 'hashes', 'signatures', 'unsigned', 'body', 'msgtype',
               'm.relates_to', 'rel_type', 'sha256', 'ed25519:auto', 'membership', 'displayname',
               'avatar_url', 'users', 'users_default', 'events', 'ban', 'kick', 'redact']


def rand_char(rng):
    r = rng.random()
    if r < 0.55:
        return rng.choice(ASCII_LETTERS)
    if r < 0.65:
        return rng.choice(SPECIAL_ASCII)
    if r < 0.75:
        return rng.choice(CONTROLS)
    if r < 0.87:
        return rng.choice(BMP)
    if r < 0.95:
        return rng.choice(ASTRAL)
    # Anywhere else in the code space, skipping the surrogates.
    while True:
        c = rng.randrange(0x80, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def rand_string(rng, max_len=12):
    if rng.random() < 0.25:
        # Plain ASCII, the common case in real events.
        return ''.join(rng.choice(ASCII_LETTERS) for _ in range(rng.randrange(0, max_len + 1)))
    return ''.join(rand_char(rng) for _ in range(rng.randrange(0, max_len + 1)))


def rand_key(rng):
    r = rng.random()
    if r < 0.25:
        return rng.choice(ORDER_KEYS)
    if r < 0.35:
        return rng.choice(JS_KEYS)
    if r < 0.55:
        return rng.choice(MATRIX_KEYS)
    return rand_string(rng, 8)


EDGE_INTS = [0, 1, -1, 2, 10, -10, 127, 128, 255, 256, 2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**32,
             10**15, -10**15, 10**15 + 1, 2**53 - 2, -(2**53 - 2), MAX_SAFE, -MAX_SAFE, 1_732_000_000_123]


def rand_int(rng):
    r = rng.random()
    if r < 0.3:
        return rng.choice(EDGE_INTS)
    if r < 0.6:
        return rng.randrange(-1000, 1001)
    if r < 0.8:
        return rng.randrange(-MAX_SAFE, MAX_SAFE + 1)
    return rng.choice([-1, 1]) * rng.randrange(0, 2**rng.randrange(1, 54))


def rand_value(rng, depth):
    r = rng.random()
    if depth <= 0 or r < 0.35:
        return rand_string(rng)
    if r < 0.55:
        return rand_int(rng)
    if r < 0.6:
        return rng.choice([True, False])
    if r < 0.63:
        return None
    if r < 0.82:
        return rand_object(rng, depth - 1, 4)
    return [rand_value(rng, depth - 1) for _ in range(rng.randrange(0, 4))]


def rand_object(rng, depth, max_keys=8):
    obj = {}
    for _ in range(rng.randrange(0, max_keys + 1)):
        obj[rand_key(rng)] = rand_value(rng, depth)
    return obj


# --- Non-canonical serialization -----------------------------------------------------------------

SHORT_ESCAPES = {'"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t'}


def u_escape(rng, code_unit):
    return f'\\u{code_unit:04X}' if rng.random() < 0.5 else f'\\u{code_unit:04x}'


def dump_string(rng, s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        must = ch in '"\\' or c < 0x20
        if must and ch in SHORT_ESCAPES and rng.random() < 0.6:
            out.append(SHORT_ESCAPES[ch])
        elif must or rng.random() < 0.1:
            if c >= 0x10000:
                c -= 0x10000
                out.append(u_escape(rng, 0xD800 + (c >> 10)) + u_escape(rng, 0xDC00 + (c & 0x3FF)))
            else:
                out.append(u_escape(rng, c))
        elif ch == '/' and rng.random() < 0.5:
            out.append('\\/')
        else:
            out.append(ch)
    out.append('"')
    return ''.join(out)


def ws(rng):
    r = rng.random()
    return '' if r < 0.7 else rng.choice([' ', '  ', '\t', ' \t ', '    '])


def dump(rng, v):
    """JSON text for v with shuffled keys, random whitespace and escapes; never a raw newline."""
    if v is None:
        return 'null'
    if v is True:
        return 'true'
    if v is False:
        return 'false'
    if isinstance(v, int):
        return '-0' if v == 0 and rng.random() < 0.2 else str(v)
    if isinstance(v, str):
        return dump_string(rng, v)
    if isinstance(v, list):
        return '[' + ws(rng) + (',' + ws(rng)).join(dump(rng, x) + ws(rng) for x in v) + ']'
    if isinstance(v, dict):
        items = list(v.items())
        rng.shuffle(items)
        members = [dump_string(rng, k) + ws(rng) + ':' + ws(rng) + dump(rng, x) + ws(rng) for k, x in items]
        return '{' + ws(rng) + (',' + ws(rng)).join(members) + '}'
    raise TypeError(type(v))


# --- The main corpus -----------------------------------------------------------------------------

def b64(rng, n):
    alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
    return ''.join(rng.choice(alphabet) for _ in range(n))


def matrix_event(rng):
    server = rng.choice(['example.org', 'matrix.example.com', 'localhost:8448', '[::1]:8448', 'xn--bcher-kva.example'])
    kind = rng.randrange(4)
    if kind == 0:
        event_type = 'm.room.message'
        body = rand_string(rng, 120)
        content = {'msgtype': 'm.text', 'body': body}
        if rng.random() < 0.5:
            content['format'] = 'org.matrix.custom.html'
            content['formatted_body'] = '<p>' + body + '</p>'
        if rng.random() < 0.3:
            content['m.relates_to'] = {'rel_type': 'm.thread', 'event_id': '$' + b64(rng, 43)}
    elif kind == 1:
        event_type = 'm.room.member'
        content = {'membership': rng.choice(['join', 'invite', 'leave', 'ban', 'knock']),
                   'displayname': rand_string(rng, 20), 'avatar_url': 'mxc://' + server + '/' + b64(rng, 24)}
    elif kind == 2:
        event_type = 'm.room.power_levels'
        content = {'users': {'@' + rand_string(rng, 10) + ':' + server: rand_int(rng) for _ in range(rng.randrange(1, 30))},
                   'users_default': 0, 'events_default': 0, 'state_default': 50, 'ban': 50, 'kick': 50,
                   'redact': 50, 'events': {'m.room.name': 50, 'm.room.power_levels': 100}}
    else:
        event_type = rand_string(rng, 16)
        content = rand_object(rng, 3)
    event = {
        'type': event_type,
        'sender': '@' + rand_string(rng, 12) + ':' + server,
        'room_id': '!' + b64(rng, 18) + ':' + server,
        'content': content,
        'origin_server_ts': rng.randrange(1_400_000_000_000, 1_900_000_000_000),
        'depth': rng.randrange(1, 2**31),
        'prev_events': ['$' + b64(rng, 43) for _ in range(rng.randrange(1, 4))],
        'auth_events': ['$' + b64(rng, 43) for _ in range(rng.randrange(0, 5))],
        'hashes': {'sha256': b64(rng, 43)},
        'signatures': {server: {'ed25519:' + b64(rng, 6): b64(rng, 86)}},
        'unsigned': {'age_ts': rng.randrange(0, MAX_SAFE), 'transaction_id': rand_string(rng, 16)},
    }
    if event_type != 'm.room.message':
        event['state_key'] = rand_string(rng, 10) if rng.random() < 0.5 else ''
    return event


def nested(depth, leaf, kind):
    """An object nested `depth` levels deep; kind picks objects, arrays or both alternating."""
    v = leaf
    for i in range(depth):
        if kind == 'object' or (kind == 'mixed' and i % 2 == 0):
            v = {'k' if i % 3 else '\U0001F600': v}
        else:
            v = [v]
    return v if isinstance(v, dict) else {'deep': v}


def fixed_entries(rng):
    """Hand-picked objects that every corpus must contain, whatever the random draw."""
    out = [{}, {'': ''}, {'': {}}, {'a': []}, {'a': {}}, {'a': [[]], 'b': [{}], 'c': {'': []}}, {'a': None},
           {'t': True, 'f': False, 'n': None}, {'a': [None, True, False, 0, '', [], {}]}]
    # Every control character alone, as a value and as a key, then all of them together.
    for c in CONTROLS:
        out.append({'v': c, 'mid': 'x' + c + 'y'})
        out.append({c: c})
    out.append({'all': ''.join(CONTROLS), ''.join(CONTROLS): 'all'})
    out.append({'\u2028': '\u2028', '\u2029': 'a\u2029b', 'both': '\u2028\u2029'})
    out.append({'"': '"', '\\': '\\', 'mix': '\\"\\\\"\'/\\/', '\\u0041': '\\n is not a newline'})
    # Astral characters in keys and values; and the code-unit/code-point ordering groups.
    for ch in ASTRAL + ['\ue000', '\uffff', '\ud7ff']:
        out.append({ch: ch, 'x' + ch: ch * 3, ch + 'x': 'x'})
    out.append({k: i for i, k in enumerate(ORDER_KEYS)})
    out.append({k: i for i, k in enumerate(reversed(ORDER_KEYS))})
    out.append({k: k for k in JS_KEYS})
    out.append({'__proto__': {'polluted': True}, 'constructor': {'prototype': {}}})
    # Integer limits.
    out.append({'max': MAX_SAFE, 'min': -MAX_SAFE, 'zero': 0, 'neg': -1, 'list': EDGE_INTS})
    for n in EDGE_INTS:
        out.append({'n': n})
    # Deep nesting.
    for depth in (100, 101, 128, 200, 256, 500):
        for kind in ('object', 'array', 'mixed'):
            out.append(nested(depth, rand_string(rng, 5), kind))
    # Many keys in one object.
    for count in (100, 1000, 2000):
        out.append({rand_string(rng, 6) + str(i): i for i in range(count)})
    out.append({chr(c): c for c in range(0x20, 0x800)})
    out.append({chr(c): c for c in [*range(0xE000, 0xE100), *range(0xFF00, 0x10000), *range(0x10000, 0x10100),
                                    *range(0x10FF00, 0x110000)]})
    # Long strings.
    for length in (1000, 10_000, 30_000):
        out.append({'long': ''.join(rand_char(rng) for _ in range(length))})
    out.append({'ascii': 'a' * 50_000})
    out.append({'emoji': '\U0001F600' * 10_000})
    return out


def main_entries(rng):
    entries = fixed_entries(rng)
    while len(entries) < MAIN_ENTRIES:
        r = rng.random()
        if r < 0.03:
            entries.append(matrix_event(rng))
        elif r < 0.13:
            # Key-order stress: many tricky keys in one object.
            keys = rng.sample(ORDER_KEYS + JS_KEYS, rng.randrange(2, 20)) + [rand_key(rng) for _ in range(rng.randrange(0, 6))]
            entries.append({k: rand_value(rng, 1) for k in keys})
        else:
            entries.append(rand_object(rng, rng.randrange(1, 4), 6))
    return entries


# --- Values strict mode rejects ------------------------------------------------------------------

def js_number(text):
    """What JSON.parse makes of a number literal: a double; integral doubles are integers."""
    d = float(text)
    return int(d) if d.is_integer() else d


def python_result(text, **parse_options):
    try:
        return {'bytes': canonicaljson.encode_canonical_json(json.loads(text, **parse_options)).decode('utf-8')}
    except (ValueError, UnicodeError) as e:
        return {'error': type(e).__name__}


def strictly_valid(value):
    """The spec's rule (appendices, Canonical JSON): integers within ±(2^53 − 1), no floats; and a
    string must be encodable as UTF-8 at all."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -MAX_SAFE <= value <= MAX_SAFE
    if isinstance(value, float):
        return False
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return all(strictly_valid(x) for x in value)
    return all(strictly_valid(k) and strictly_valid(x) for k, x in value.items())


def non_strict_cases(rng):
    texts = [
        # Floats.
        '{"a":1.5}', '{"a":-0.5}', '{"a":0.1}', '{"a":0.30000000000000004}', '{"a":3.141592653589793}',
        '{"a":50.57}', '{"a":1e-4}', '{"a":1.5e-4}', '{"a":9.99e-5}', '{"a":1e-5}', '{"a":1e-6}', '{"a":1e-7}',
        '{"a":1.2345e-7}', '{"a":-2.5e-10}', '{"a":1e-100}', '{"a":5e-324}', '{"a":2.2250738585072014e-308}',
        '{"a":4503599627370495.5}', '{"a":123456.789}', '{"a":{"b":[1,2.25,3]}}', '{"a":[0.5,{"b":1e-9}]}',
        # Integral floats: JSON.parse cannot tell them from integers, so strict mode accepts them.
        '{"a":1.0}', '{"a":-0.0}', '{"a":1e2}', '{"a":5.114698E4}', '{"a":1e16}',
        # Integers beyond ±(2^53 − 1).
        '{"a":9007199254740992}', '{"a":-9007199254740992}', '{"a":9007199254740993}', '{"a":18446744073709551616}',
        '{"a":1e21}', '{"a":1000000000000000000000}', '{"a":1e300}', '{"a":-1.7976931348623157e308}',
        # Beyond doubles.
        '{"a":1e400}', '{"a":-1e400}',
        # Lone surrogates.
        '{"a":"\\ud800"}', '{"a":"\\udfff"}', '{"a":"x\\ud83dy"}', '{"a":"\\ude00\\ud83d"}', '{"\\ud800":1}',
    ]
    # Random non-integral floats across magnitudes: JavaScript and Python switch to exponent
    # notation at different magnitudes.
    while len(texts) < 400:
        x = rng.uniform(1, 10) * 10.0 ** rng.randrange(-320, 15) * rng.choice([-1, 1])
        if not x.is_integer():
            texts.append('{"a":' + repr(x) + '}')
    for _ in range(50):
        texts.append('{"a":' + str(rng.randrange(MAX_SAFE + 1, 10 ** rng.randrange(16, 23)) * rng.choice([-1, 1])) + '}')
    cases = []
    for text in texts:
        js_value = json.loads(text, parse_int=js_number, parse_float=js_number)
        cases.append({
            'input': text,
            'strict_valid': strictly_valid(js_value),
            # What Python writes for the value Python's parser makes of the text.
            'python': python_result(text),
            # What Python writes for the value JSON.parse makes of the text: the reference for us,
            # since JSON.parse cannot tell 1.0 from 1 and rounds every number to a double.
            'python_js_value': python_result(text, parse_int=js_number, parse_float=js_number),
        })
    return cases


# --- Output --------------------------------------------------------------------------------------

def main():
    # The serializer above recurses about twice per nesting level.
    sys.setrecursionlimit(5000)
    rng = random.Random(SEED)
    os.makedirs(OUT_DIR, exist_ok=True)
    inputs, expected = [], []
    for value in main_entries(rng):
        text = dump(rng, value)
        canonical = canonicaljson.encode_canonical_json(value)
        if text.encode('utf-8') == canonical:
            text = '{ ' + text[1:]  # every input must differ from its canonical form
        assert '\n' not in text and b'\n' not in canonical
        assert json.loads(text) == value and canonicaljson.encode_canonical_json(json.loads(text)) == canonical
        inputs.append(text.encode('utf-8'))
        expected.append(canonical)
    with open(os.path.join(OUT_DIR, 'inputs.jsonl'), 'wb') as f:
        f.write(b'\n'.join(inputs) + b'\n')
    with open(os.path.join(OUT_DIR, 'expected.jsonl'), 'wb') as f:
        f.write(b'\n'.join(expected) + b'\n')
    with open(os.path.join(OUT_DIR, 'non-strict.jsonl'), 'w', encoding='ascii') as f:
        for case in non_strict_cases(rng):
            f.write(json.dumps(case, sort_keys=True) + '\n')
    sizes = {name: os.path.getsize(os.path.join(OUT_DIR, name)) for name in sorted(os.listdir(OUT_DIR))}
    print(f'{len(inputs)} entries;', ', '.join(f'{name} {size:,} bytes' for name, size in sizes.items()))


if __name__ == '__main__':
    main()
