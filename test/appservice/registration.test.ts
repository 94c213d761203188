import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRegistrations } from '../../src/appservice/load.js';
import { parseRegistration } from '../../src/appservice/registration.js';
import { TempDir, configError, problemLines } from '../config/helpers.js';

const SERVER = 'example.org';
const tmp = new TempDir();
after(() => tmp.remove());

let counter = 0;

/** A registration file with its own id, tokens and sender, and `extra` lines after them. */
function registrationText(name: string, extra = ''): string {
  return [
    `id: ${name}`,
    `url: http://127.0.0.1:9999`,
    `as_token: as_${name}`,
    `hs_token: hs_${name}`,
    `sender_localpart: ${name}bot`,
    extra,
  ].join('\n');
}

function writeFile(text: string, name = `reg-${++counter}.yaml`): string {
  return tmp.write(name, text);
}

/** A user namespace section of exclusive or shared regexes. */
function users(...regexes: [boolean, string][]): string {
  const entries = regexes.map(([exclusive, regex]) => `    - { exclusive: ${exclusive}, regex: '${regex}' }`);
  return `namespaces:\n  users:\n${entries.join('\n')}`;
}

/** The one problem line of loading `text` as a file, which must start with `<file>: <field>: `. */
function onlyProblem(text: string, field: string): string {
  const file = writeFile(text);
  const lines = problemLines(configError(() => loadRegistrations([file], SERVER)));
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.ok(lines[0]!.startsWith(`${file}: ${field}: `), `${lines[0]} should name ${file} and ${field}`);
  return lines[0]!.slice(`${file}: ${field}: `.length);
}

describe('one registration', () => {
  test('every field is read, and the result is frozen', () => {
    const r = parseRegistration(
      [
        'id: irc',
        'url: https://bridge.internal:9999/hooks',
        'as_token: the-as-token',
        'hs_token: the-hs-token',
        'sender_localpart: ircbot',
        'rate_limited: false',
        'protocols: [irc, slack]',
        'org.matrix.msc3202: true',
        'namespaces:',
        '  users:',
        "    - { exclusive: true, regex: '@irc_.*:example\\.org' }",
        "    - { exclusive: false, regex: '@.*:other\\.example' }",
        '  aliases:',
        "    - { exclusive: true, regex: '#irc_.*' }",
        '  rooms: []',
        'some_other_server_field: 1',
      ].join('\n'),
      { serverName: SERVER },
    );
    assert.equal(r.id, 'irc');
    assert.equal(r.url, 'https://bridge.internal:9999/hooks');
    assert.equal(r.as_token, 'the-as-token');
    assert.equal(r.hs_token, 'the-hs-token');
    assert.equal(r.sender_localpart, 'ircbot');
    assert.equal(r.rate_limited, false);
    assert.deepEqual(r.protocols, ['irc', 'slack']);
    assert.equal(r.receive_ephemeral, false);
    assert.equal(r.msc3202, true);
    assert.deepEqual(
      r.namespaces.users.map((ns) => [ns.exclusive, ns.regex]),
      [
        [true, '@irc_.*:example\\.org'],
        [false, '@.*:other\\.example'],
      ],
    );
    assert.deepEqual(r.namespaces.aliases.map((ns) => ns.regex), ['#irc_.*']);
    assert.deepEqual(r.namespaces.rooms, []);
    for (const part of [r, r.namespaces, r.namespaces.users, r.namespaces.users[0], r.protocols]) {
      assert.ok(Object.isFrozen(part));
    }
  });

  test('defaults: no url receives nothing, rate limited, nothing claimed', () => {
    for (const url of ['', 'url: null', 'url:']) {
      const r = parseRegistration(`id: a\nas_token: x\nhs_token: y\nsender_localpart: abot\n${url}\n`);
      assert.equal(r.url, null, url);
      assert.equal(r.rate_limited, true);
      assert.deepEqual(r.protocols, []);
      assert.equal(r.receive_ephemeral, false);
      assert.equal(r.msc3202, false);
      assert.deepEqual(r.namespaces, { users: [], aliases: [], rooms: [] });
    }
    const empty = parseRegistration(registrationText('b', 'namespaces:\n  users: []\n  aliases:\n'));
    assert.deepEqual(empty.namespaces, { users: [], aliases: [], rooms: [] });
  });

  test('ephemeral events under each of their names; any true turns them on', () => {
    for (const key of ['receive_ephemeral', 'de.sorunome.msc2409.push_ephemeral', 'push_ephemeral']) {
      assert.equal(parseRegistration(registrationText('e', `${key}: true`)).receive_ephemeral, true, key);
      assert.equal(parseRegistration(registrationText('e', `${key}: false`)).receive_ephemeral, false, key);
    }
    const mixed = 'receive_ephemeral: false\nde.sorunome.msc2409.push_ephemeral: true\npush_ephemeral: false';
    assert.equal(parseRegistration(registrationText('e', mixed)).receive_ephemeral, true);
    assert.match(onlyProblem(registrationText('e', 'push_ephemeral: yes'), 'push_ephemeral'), /true or false, got "yes"/);
  });

  test('regexes match whole IDs only', () => {
    const ns = (regex: string) =>
      parseRegistration(registrationText('r', `namespaces:\n  users:\n    - exclusive: true\n      regex: '${regex}'`)).namespaces
        .users[0]!.pattern;
    assert.ok(ns('@irc_.*').test('@irc_alice:example.org'));
    assert.ok(!ns('irc_.*').test('@irc_alice:example.org'), 'anchored at the start');
    assert.ok(!ns('@irc_[a-z]+').test('@irc_alice:example.org'), 'anchored at the end');
    assert.ok(ns('@irc_[a-z]+:example\\.org').test('@irc_alice:example.org'));
    assert.ok(!ns('@irc_[a-z]+:example\\.org').test('@irc_alice:example.org.evil'));
    // An alternation is anchored as a whole, not just its first and last branches.
    const alt = ns('@a:x|@b:x');
    assert.ok(alt.test('@a:x') && alt.test('@b:x'));
    assert.ok(!alt.test('@a:xyz') && !alt.test('@zz@b:x'));
    // Anchors written in the file change nothing.
    assert.ok(ns('^@irc_.*$').test('@irc_alice:example.org'));
  });

  test('a fragment that would compile only once wrapped is still invalid', () => {
    const message = onlyProblem(
      registrationText('f', "namespaces:\n  users:\n    - { exclusive: true, regex: 'a)|(b' }"),
      'namespaces.users[0].regex',
    );
    assert.match(message, /^invalid regular expression "a\)\|\(b": /);
  });
});

describe('every problem names the file and the field', () => {
  const ns = (kind: string, body: string) => registrationText('n', `namespaces:\n  ${kind}:\n${body}`);
  const cases: [string, string, string, RegExp][] = [
    ['missing id', 'as_token: a\nhs_token: h\nsender_localpart: s', 'id', /is required/],
    ['numeric id', 'id: 12\nas_token: a\nhs_token: h\nsender_localpart: s', 'id', /non-empty string, got 12/],
    ['missing as_token', 'id: x\nhs_token: h\nsender_localpart: s', 'as_token', /is required/],
    ['empty as_token', "id: x\nas_token: ''\nhs_token: h\nsender_localpart: s", 'as_token', /non-empty string, got ""/],
    ['missing hs_token', 'id: x\nas_token: a\nsender_localpart: s', 'hs_token', /is required/],
    ['list hs_token', 'id: x\nas_token: a\nhs_token: [h]\nsender_localpart: s', 'hs_token', /got a list/],
    ['missing sender', 'id: x\nas_token: a\nhs_token: h', 'sender_localpart', /is required/],
    ['sender with a colon', 'id: x\nas_token: a\nhs_token: h\nsender_localpart: "a:b"', 'sender_localpart', /must not contain ":"/],
    ['sender with a space', 'id: x\nas_token: a\nhs_token: h\nsender_localpart: "a b"', 'sender_localpart', /valid user ID on example\.org/],
    ['sender too long', `id: x\nas_token: a\nhs_token: h\nsender_localpart: ${'a'.repeat(250)}`, 'sender_localpart', /255/],
    ['url not a URL', registrationText('u').replace('http://127.0.0.1:9999', 'not a url'), 'url', /http or https URL/],
    ['url of another scheme', registrationText('u').replace('http://127.0.0.1:9999', 'ftp://host/'), 'url', /http or https URL/],
    ['url a number', registrationText('u').replace('http://127.0.0.1:9999', '8080'), 'url', /got 8080/],
    ['namespaces a list', registrationText('n', 'namespaces: []'), 'namespaces', /must be a mapping/],
    ['users a mapping', ns('users', '    regex: x'), 'namespaces.users', /must be a list/],
    ['entry a string', ns('aliases', '    - "#a.*"'), 'namespaces.aliases[0]', /must be a mapping/],
    ['exclusive missing', ns('users', "    - { regex: '@a.*' }"), 'namespaces.users[0].exclusive', /true or false, got nothing/],
    ['exclusive a string', ns('rooms', "    - { exclusive: 'true', regex: '!a.*' }"), 'namespaces.rooms[0].exclusive', /got "true"/],
    ['regex missing', ns('users', '    - { exclusive: true }'), 'namespaces.users[0].regex', /must be a string/],
    [
      'regex invalid',
      ns('users', "    - { exclusive: true, regex: '@a.*' }\n    - { exclusive: true, regex: '@b_(.*' }"),
      'namespaces.users[1].regex',
      /^invalid regular expression "@b_\(\.\*": Unterminated group$/,
    ],
    ['rate_limited a string', registrationText('l', 'rate_limited: "no"'), 'rate_limited', /true or false/],
    ['protocols a string', registrationText('p', 'protocols: irc'), 'protocols', /list of strings/],
    ['protocol a number', registrationText('p', 'protocols: [irc, 5]'), 'protocols[1]', /got 5/],
    ['msc3202 a string', registrationText('m', "org.matrix.msc3202: 'yes'"), 'org.matrix.msc3202', /true or false/],
    ['a list at the top', '- id: x', '(top level)', /must be a mapping, got a list/],
    ['an empty file', '', '(top level)', /got nothing/],
    ['a YAML error', 'id: [unclosed', '(yaml, line 1 column 14)', /end with a \]/],
    ['a key twice', 'id: a\nid: b\nas_token: a\nhs_token: h\nsender_localpart: s', '(yaml, line 2 column 1)', /unique/],
  ];
  for (const [name, text, field, message] of cases) {
    test(name, () => assert.match(onlyProblem(text, field), message));
  }

  test('an unreadable file', () => {
    const missing = join(tmp.path, 'missing.yaml');
    const lines = problemLines(configError(() => loadRegistrations([missing], SERVER)));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, new RegExp(`^${missing}: cannot read the file: ENOENT`));
  });

  test('all at once, from every file, under one heading', () => {
    const a = writeFile('id: a\nas_token: 1\nhs_token: h\nurl: nope');
    const b = writeFile(registrationText('b', 'rate_limited: 0'));
    const err = configError(() => loadRegistrations([a, b], SERVER));
    assert.match(err.message, /^invalid configuration in app_service_config_files \(4 problems\):\n/);
    assert.deepEqual(
      err.issues.map((i) => i.path),
      [`${a}: url`, `${a}: as_token`, `${a}: sender_localpart`, `${b}: rate_limited`],
    );
  });

  test('parseRegistration names its source the same way', () => {
    const err = configError(() => parseRegistration('id: x', { source: 'bridge.yaml' }));
    assert.deepEqual(
      err.issues.map((i) => i.path),
      ['bridge.yaml: as_token', 'bridge.yaml: hs_token', 'bridge.yaml: sender_localpart'],
    );
    assert.match(err.message, /bridge\.yaml: as_token: is required/);
  });
});

describe('rules between registrations', () => {
  /** The problem lines of loading the texts as files; each line must name both files. */
  function conflicts(...texts: string[]): { files: string[]; lines: string[] } {
    const files = texts.map((t) => writeFile(t));
    const lines = problemLines(configError(() => loadRegistrations(files, SERVER)));
    return { files, lines };
  }

  test('registrations that do not collide load, in order', () => {
    const files = [
      writeFile(registrationText('a', users([true, '@a_.*:example\\.org'], [false, '@shared_.*']))),
      writeFile(registrationText('b', users([true, '@b_.*:example\\.org'], [false, '@shared_.*']))),
      // The same regex, once exclusive and once not, is no conflict; neither is claiming one's own sender.
      writeFile(registrationText('c', users([false, '@a_.*:example\\.org'], [true, '@cbot:example\\.org']))),
    ];
    assert.deepEqual(
      loadRegistrations(files, SERVER).map((r) => r.id),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(loadRegistrations([], SERVER), []);
  });

  test('the same id', () => {
    const { files, lines } = conflicts(registrationText('a'), registrationText('a').replace(/_a$/gm, '_a2').replace('abot', 'a2bot'));
    assert.deepEqual(lines, [`${files[1]}: id: "a" is also the id of ${files[0]}`]);
  });

  test('the same sender', () => {
    const { files, lines } = conflicts(registrationText('a'), registrationText('b').replace('bbot', 'abot'));
    assert.deepEqual(lines, [`${files[1]}: sender_localpart: "abot" is also the sender of ${files[0]}`]);
  });

  test('a token used twice, in either role, and never shown', () => {
    const sameAs = conflicts(registrationText('a'), registrationText('b').replace('as_b', 'as_a'));
    assert.deepEqual(sameAs.lines, [`${sameAs.files[1]}: as_token: is the same as the as_token of ${sameAs.files[0]}`]);
    const sameHs = conflicts(registrationText('a'), registrationText('b').replace('hs_b', 'hs_a'));
    assert.deepEqual(sameHs.lines, [`${sameHs.files[1]}: hs_token: is the same as the hs_token of ${sameHs.files[0]}`]);
    const crossed = conflicts(registrationText('a'), registrationText('b').replace('as_b', 'hs_a'));
    assert.deepEqual(crossed.lines, [`${crossed.files[1]}: as_token: is the same as the hs_token of ${crossed.files[0]}`]);
    for (const line of [...sameAs.lines, ...sameHs.lines, ...crossed.lines]) {
      assert.ok(!/as_a|hs_a/.test(line.replace(/(as|hs)_token/g, '')), line);
    }
  });

  test('two exclusive namespaces with the same regex', () => {
    const { files, lines } = conflicts(
      registrationText('a', users([true, '@bridge_.*'])),
      registrationText('b', users([false, '@b_.*'], [true, '@bridge_.*'])),
    );
    assert.deepEqual(lines, [
      `${files[1]}: namespaces.users[1].regex: claims exclusively what ${files[0]} claims exclusively ` +
        '(namespaces.users[0].regex, the same regex)',
    ]);
    // The same for aliases; rooms too.
    const aliases = conflicts(
      registrationText('a', "namespaces:\n  aliases: [{ exclusive: true, regex: '#x.*' }]"),
      registrationText('b', "namespaces:\n  aliases: [{ exclusive: true, regex: '#x.*' }]"),
    );
    assert.equal(aliases.lines.length, 1);
    assert.ok(aliases.lines[0]!.startsWith(`${aliases.files[1]}: namespaces.aliases[0].regex: `));
    assert.ok(aliases.lines[0]!.includes(aliases.files[0]!));
  });

  test("an exclusive namespace that claims another service's sender", () => {
    const { files, lines } = conflicts(registrationText('a'), registrationText('b', users([true, '@.*bot:example\\.org'])));
    assert.deepEqual(lines, [
      `${files[1]}: namespaces.users[0].regex: claims exclusively @abot:example.org, the sender of ${files[0]}`,
    ]);
    // A non-exclusive one may.
    assert.equal(
      loadRegistrations([files[0]!, writeFile(registrationText('c', users([false, '@.*bot:example\\.org'])))], SERVER).length,
      2,
    );
  });
});

describe('docs/CONFIG.md', () => {
  const doc = readFileSync(new URL('../../docs/CONFIG.md', import.meta.url), 'utf8');
  const section = doc.split('\n## Application services\n')[1]!;

  test('its registration example loads', () => {
    const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
    assert.equal(blocks.length, 1);
    const r = loadRegistrations([writeFile(blocks[0]!)], SERVER)[0]!;
    assert.equal(r.id, 'irc');
    assert.equal(r.receive_ephemeral, true);
    assert.ok(r.namespaces.users[0]!.pattern.test('@irc_alice:example.org'));
    assert.ok(r.namespaces.aliases[0]!.pattern.test('#irc_#chan:example.org'));
  });

  test('its quoted error line is what the loader says', () => {
    const file = writeFile(registrationText('q', users([true, '@irc_(.*'])));
    const err = configError(() => loadRegistrations([file], SERVER));
    const [heading, line] = err.message.split('\n');
    assert.ok(section.includes(`hearth serve: ${heading}`), heading);
    assert.ok(section.includes(line!.trim().replace(file, '/etc/hearth/appservices/irc.yaml')), line);
  });
});
