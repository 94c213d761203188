import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppServices } from '../../src/appservice/namespaces.js';
import { parseRegistration } from '../../src/appservice/registration.js';
import { configError } from '../config/helpers.js';

const SERVER = 'example.org';

const irc = parseRegistration(`
id: irc
url: http://127.0.0.1:9001
as_token: irc-as
hs_token: irc-hs
sender_localpart: ircbot
namespaces:
  users:
    - { exclusive: true, regex: '@irc_.*:example\\.org' }
    - { exclusive: false, regex: '@.*:irc\\.example' }
  aliases:
    - { exclusive: true, regex: '#irc_.*:example\\.org' }
  rooms:
    - { exclusive: false, regex: '!bridged:example\\.org' }
`);

const bot = parseRegistration(`
id: bot
as_token: bot-as
hs_token: bot-hs
sender_localpart: helperbot
namespaces:
  users:
    - { exclusive: false, regex: '@irc_.*:example\\.org' }
  aliases:
    - { exclusive: false, regex: '#.*' }
`);

const services = new AppServices([irc, bot], SERVER);

test('services by token, id and sender', () => {
  assert.equal(services.size, 2);
  assert.deepEqual(services.all, [irc, bot]);
  assert.equal(services.byAsToken('irc-as'), irc);
  assert.equal(services.byAsToken('bot-as'), bot);
  assert.equal(services.byAsToken('irc-hs'), undefined, 'the hs_token is not an access token');
  assert.equal(services.byId('bot'), bot);
  assert.equal(services.byId('nope'), undefined);
  assert.equal(services.senderOf(irc), '@ircbot:example.org');
  assert.equal(services.bySender('@helperbot:example.org'), bot);
  assert.equal(services.bySender('@helperbot:other.org'), undefined);
});

test('interest in users: the namespaces, exclusive or not; the sender only where asked for', () => {
  assert.ok(services.isInterestedInUser(irc, '@irc_alice:example.org'));
  assert.ok(services.isInterestedInUser(irc, '@anyone:irc.example'));
  assert.ok(services.isInterestedInUser(bot, '@irc_alice:example.org'));
  assert.ok(!services.isInterestedInUser(irc, '@alice:example.org'));
  assert.ok(!services.isInterestedInUser(irc, '@irc_alice:example.org.evil'));
  assert.ok(!services.isInterestedInUser(irc, '@ircbot:example.org'));
  assert.ok(services.isSenderOrInUserNamespace(irc, '@ircbot:example.org'));
  assert.ok(services.isSenderOrInUserNamespace(irc, '@irc_alice:example.org'));
  assert.ok(!services.isSenderOrInUserNamespace(irc, '@helperbot:example.org'));
  assert.ok(!services.isSenderOrInUserNamespace(irc, '@ircbot:other.org'));
});

test('interest in aliases and rooms', () => {
  assert.ok(services.isInterestedInAlias(irc, '#irc_#chan:example.org'));
  assert.ok(!services.isInterestedInAlias(irc, '#chan:example.org'));
  assert.ok(services.isInterestedInAlias(bot, '#chan:example.org'));
  assert.ok(services.isInterestedInRoom(irc, '!bridged:example.org'));
  assert.ok(!services.isInterestedInRoom(irc, '!bridged:example.org2'));
  assert.ok(!services.isInterestedInRoom(bot, '!bridged:example.org'), 'no room namespace claims nothing');
});

test('exclusive owners: exclusive namespaces and each service its own sender', () => {
  assert.equal(services.exclusiveOwnerOfUser('@irc_alice:example.org'), irc);
  assert.equal(services.exclusiveOwnerOfUser('@anyone:irc.example'), undefined, 'claimed, not exclusively');
  assert.equal(services.exclusiveOwnerOfUser('@helperbot:example.org'), bot);
  assert.equal(services.exclusiveOwnerOfUser('@ircbot:example.org'), irc);
  assert.equal(services.exclusiveOwnerOfUser('@alice:example.org'), undefined);
  assert.equal(services.exclusiveOwnerOfAlias('#irc_#chan:example.org'), irc);
  assert.equal(services.exclusiveOwnerOfAlias('#chan:example.org'), undefined);
  assert.equal(new AppServices([], SERVER).exclusiveOwnerOfUser('@irc_alice:example.org'), undefined);
});

test('conflicting registrations make no registry', () => {
  const twin = parseRegistration('id: irc\nas_token: t\nhs_token: u\nsender_localpart: twin');
  const err = configError(() => new AppServices([irc, twin], SERVER));
  assert.deepEqual(err.issues.map((i) => i.path), ['application service "irc": id']);
  const stealsSender = parseRegistration(
    "id: thief\nas_token: t\nhs_token: u\nsender_localpart: thief\nnamespaces:\n  users: [{ exclusive: true, regex: '@ircbot:.*' }]",
  );
  assert.match(configError(() => new AppServices([irc, stealsSender], SERVER)).message, /claims exclusively @ircbot:example\.org/);
});
