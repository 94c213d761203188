// Server ACLs (m.room.server_acl): the glob matcher and the spec's five rules, ports ignored,
// malformed content read as the reference server reads it.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { globToRegExp, hostOfServerName, isIpLiteral, parseServerAcl, serverAllowedByAcl } from '../../src/protocol/server-acl.js';

const allowed = (content: unknown, server: string) => serverAllowedByAcl(parseServerAcl(content), server);

describe('server ACL globs', () => {
  test('* matches any run (empty included), ? exactly one character; the whole name, case-insensitively', () => {
    assert.ok(globToRegExp('*.evil.com').test('a.evil.com'));
    assert.ok(globToRegExp('*.evil.com').test('a.b.evil.com'));
    assert.ok(!globToRegExp('*.evil.com').test('evil.com'));
    assert.ok(globToRegExp('evil*').test('evil'));
    assert.ok(globToRegExp('ev?l.com').test('evil.com'));
    assert.ok(!globToRegExp('ev?l.com').test('evl.com'));
    assert.ok(!globToRegExp('ev?l.com').test('eviil.com'));
    assert.ok(globToRegExp('EVIL.com').test('evil.COM'));
    assert.ok(!globToRegExp('evil.com').test('notevil.com'));
    assert.ok(!globToRegExp('evil.com').test('evil.com.au'));
  });

  test('other characters are literal: a dot is not a wildcard, regex syntax is inert', () => {
    assert.ok(!globToRegExp('evil.com').test('evilxcom'));
    assert.ok(globToRegExp('a+b(c)[d]{1}|^$\\').test('a+b(c)[d]{1}|^$\\'));
    assert.ok(!globToRegExp('a+b').test('aab'));
    assert.ok(globToRegExp('my-server.*').test('my-server.example'));
  });
});

describe('server names', () => {
  test('the port is dropped, IPv6 literals keep their brackets', () => {
    assert.equal(hostOfServerName('example.org:8448'), 'example.org');
    assert.equal(hostOfServerName('example.org'), 'example.org');
    assert.equal(hostOfServerName('[::1]:8448'), '[::1]');
    assert.equal(hostOfServerName('[2001:db8::1]'), '[2001:db8::1]');
    assert.equal(hostOfServerName('1.2.3.4:80'), '1.2.3.4');
  });

  test('IP literals: IPv4 and bracketed IPv6; names that only look numeric are not', () => {
    assert.ok(isIpLiteral('1.2.3.4'));
    assert.ok(isIpLiteral('[::1]'));
    assert.ok(isIpLiteral('[2001:db8::1]'));
    assert.ok(!isIpLiteral('1.2.3.4.example'));
    assert.ok(!isIpLiteral('example.org'));
    assert.ok(!isIpLiteral('300.1.1.1'));
  });
});

describe('server ACL rules', () => {
  test('1. no ACL event: everyone is allowed', () => {
    assert.ok(serverAllowedByAcl(undefined, 'anyone.example'));
  });

  test('2. IP literals are denied when allow_ip_literals is false, allowed by default', () => {
    const noIps = { allow: ['*'], allow_ip_literals: false };
    assert.ok(!allowed(noIps, '1.2.3.4'));
    assert.ok(!allowed(noIps, '1.2.3.4:8448'));
    assert.ok(!allowed(noIps, '[::1]:8448'));
    assert.ok(allowed(noIps, 'good.example'));
    assert.ok(allowed({ allow: ['*'] }, '1.2.3.4'));
    assert.ok(allowed({ allow: ['*'], allow_ip_literals: true }, '[::1]'));
    // A non-boolean flag counts as true.
    assert.ok(allowed({ allow: ['*'], allow_ip_literals: 'false' }, '1.2.3.4'));
  });

  test('3–4. deny wins over allow; an allowed name not denied passes', () => {
    const acl = { allow: ['*'], deny: ['evil.com', '*.evil.com'] };
    assert.ok(!allowed(acl, 'evil.com'));
    assert.ok(!allowed(acl, 'sub.evil.com'));
    assert.ok(!allowed(acl, 'EVIL.com:8448'));
    assert.ok(allowed(acl, 'good.com'));
    assert.ok(allowed(acl, 'notevil.com'));
    assert.ok(!allowed({ allow: ['evil.com'], deny: ['evil.com'] }, 'evil.com'));
  });

  test('5. not allowed: denied; an empty or missing allow list denies everyone', () => {
    assert.ok(!allowed({ allow: ['good.com'] }, 'other.com'));
    assert.ok(allowed({ allow: ['good.com'] }, 'good.com:1234'));
    assert.ok(!allowed({ allow: [] }, 'good.com'));
    assert.ok(!allowed({}, 'good.com'));
    assert.ok(!allowed({ deny: ['evil.com'] }, 'good.com'));
  });

  test('malformed lists and entries are ignored', () => {
    assert.ok(!allowed({ allow: '*' }, 'good.com'));
    assert.ok(allowed({ allow: [1, null, '*'], deny: 'good.com' }, 'good.com'));
    assert.ok(allowed({ allow: ['*'], deny: [{ x: 1 }, 7] }, 'good.com'));
    assert.ok(!allowed(null, 'good.com'));
  });
});
