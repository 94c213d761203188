// The pieces of URL previews that need no network: reading a page's Open Graph data and its
// fallbacks, decoding it by its charset, and which addresses the fetcher may connect to.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { decodeHtml, openGraph } from '../../src/media/open-graph.js';
import { AddressFilter } from '../../src/media/url-fetcher.js';

const PAGE = new URL('https://example.org/articles/one.html');

describe('Open Graph data of a page', () => {
  test('og tags as given (the first of each), name= as well as property=, attributes in any quoting', () => {
    const og = openGraph(
      `<meta property='og:title' content='One'><meta property="og:title" content="Two">
       <META NAME=og:description CONTENT="Described &quot;here&quot;"><meta content="Site" property="og:site_name">
       <meta property="og:image" content="../img/a.png"><meta property="og:image:alt" content="">`,
      PAGE,
    );
    assert.deepEqual(og, {
      'og:title': 'One',
      'og:description': 'Described "here"',
      'og:site_name': 'Site',
      'og:image': 'https://example.org/img/a.png',
      'og:image:alt': '',
    });
  });

  test('at most 50 og tags', () => {
    const tags = Array.from({ length: 80 }, (_, i) => `<meta property="og:x${i}" content="${i}">`).join('');
    assert.equal(Object.keys(openGraph(tags, PAGE)).length, 50);
  });

  test("Twitter's tags stand in for missing og tags", () => {
    const og = openGraph('<meta name="twitter:title" content="T"><meta name="twitter:image" content="https://cdn.example/t.jpg"><meta property="og:description" content="D">', PAGE);
    assert.deepEqual(og, { 'og:title': 'T', 'og:image': 'https://cdn.example/t.jpg', 'og:description': 'D' });
  });

  test('fallbacks: <title>, else the first <h1>; meta description, else the first paragraphs', () => {
    assert.deepEqual(openGraph('<h1>Heading <i>one</i></h1><p>Text</p>', PAGE), { 'og:title': 'Heading one', 'og:description': 'Text' });
    assert.deepEqual(openGraph('<title></title><h1>H</h1><meta name="Description" content=" Meta "><p>Text</p>', PAGE), { 'og:title': 'H', 'og:description': 'Meta' });
    const long = openGraph(`<p>${'word '.repeat(200)}</p>`, PAGE)['og:description']!;
    assert.ok(long.length <= 501 && long.endsWith('…'), long);
  });

  test('image fallbacks: itemprop, the largest sized <img> over 10x10, the first <img>, the icon; only http(s)', () => {
    assert.equal(openGraph('<meta itemprop="image" content="/i.png"><img src="/big.png" width="500" height="500">', PAGE)['og:image'], 'https://example.org/i.png');
    assert.equal(
      openGraph('<img src="/first.png"><img src="/small.png" width="200" height="20"><img src="/large.png" width="100" height="100">', PAGE)['og:image'],
      'https://example.org/large.png',
    );
    assert.equal(openGraph('<img src="first.png" width="5" height="5"><img src="second.png">', PAGE)['og:image'], 'https://example.org/articles/first.png');
    assert.equal(openGraph('<link rel="shortcut icon" href="/favicon.ico">', PAGE)['og:image'], 'https://example.org/favicon.ico');
    assert.equal(openGraph('<meta property="og:image" content="data:image/png;base64,AAAA">', PAGE)['og:image'], undefined);
    assert.equal(openGraph('<meta property="og:image" content="javascript:alert(1)">', PAGE)['og:image'], undefined);
  });

  test('comments, scripts and styles are not read; broken markup does not stop the reader', () => {
    const og = openGraph(
      '<!-- <title>commented</title> --><script>document.write("<title>scripted</title>")</script><style>p{}</style>' +
        '<p>a < b and <3</p><title>Real &amp; true</title><meta property="og:type" content="unclosed',
      PAGE,
    );
    assert.equal(og['og:title'], 'Real & true');
    assert.equal(og['og:description'], 'a < b and <3');
  });

  test('self-closed script tags and inline SVG hide nothing after them', () => {
    const og = openGraph('<script src="a.js"/><svg viewBox="0 0 1 1"><path d="M0"/></svg><title>After</title><p>Text</p>', PAGE);
    assert.deepEqual(og, { 'og:title': 'After', 'og:description': 'Text' });
  });

  test('any input: no throw, string values only', () => {
    const markup = fc.array(fc.constantFrom('<', '>', '</', '<!--', '-->', '"', "'", '=', ' ', 'p', 'title', 'meta', 'script', 'property="og:title"', 'content=', '&amp;', '&#', 'x'), { maxLength: 60 });
    fc.assert(
      fc.property(fc.oneof(fc.string(), markup.map((parts) => parts.join(''))), (html) => {
        for (const value of Object.values(openGraph(html, PAGE))) assert.equal(typeof value, 'string');
      }),
      { numRuns: 2000 },
    );
  });

  test('numeric and named references', () => {
    assert.equal(openGraph('<title>&#233;&#xE9;&eacute;&Eacute;&hellip;&nosuch;&#0;</title>', PAGE)['og:title'], 'éééÉ…&nosuch;\ufffd');
  });
});

describe('decoding a page', () => {
  const latin1 = (text: string) => Buffer.from(text, 'latin1');

  test('<meta charset> first, then <meta http-equiv>, then the Content-Type, then UTF-8 if valid, else windows-1252', () => {
    assert.equal(decodeHtml(latin1('<meta charset="iso-8859-1"><p>\u00e9</p>'), 'text/html; charset=utf-8'), '<meta charset="iso-8859-1"><p>é</p>');
    assert.equal(decodeHtml(latin1('<meta http-equiv="Content-Type" content="text/html; charset=latin1">\u00e9'), undefined).endsWith('é'), true);
    assert.equal(decodeHtml(latin1('<p>\u00e9</p>'), 'text/html; charset="ISO-8859-1"'), '<p>é</p>');
    assert.equal(decodeHtml(Buffer.from('<p>é ☕</p>', 'utf8'), 'text/html'), '<p>é ☕</p>');
    assert.equal(decodeHtml(latin1('<p>\u00e9\u0080</p>'), 'text/html'), '<p>é€</p>');
    assert.equal(decodeHtml(Buffer.from('<p>é</p>', 'utf8'), 'text/html; charset=no-such-charset'), '<p>é</p>');
  });
});

describe('addresses the fetcher may connect to', () => {
  const filter = new AddressFilter(['127.0.0.0/8', '10.0.0.0/8', '::1/128', 'fc00::/7', '0.0.0.0/8'], ['127.0.0.1/32', '0.0.0.0/32', '::/128']);

  test('blacklisted ranges are refused unless whitelisted; 0.0.0.0 and :: always', () => {
    assert.equal(filter.allows('127.0.0.1'), true);
    assert.equal(filter.allows('127.0.0.2'), false);
    assert.equal(filter.allows('10.9.8.7'), false);
    assert.equal(filter.allows('::1'), false);
    assert.equal(filter.allows('fd12::1'), false);
    assert.equal(filter.allows('0.0.0.0'), false);
    assert.equal(filter.allows('::'), false);
    assert.equal(filter.allows('93.184.215.14'), true);
    assert.equal(filter.allows('2606:2800:21f:cb07:6820:80da:af6b:8b2c'), true);
  });

  test('IPv4 written as IPv6 is judged as IPv4', () => {
    assert.equal(filter.allows('::ffff:10.0.0.1'), false);
    assert.equal(filter.allows('::ffff:a00:1'), false);
    assert.equal(filter.allows('::FFFF:127.0.0.1'), true);
    assert.equal(filter.allows('::ffff:5db8:d70e'), true);
  });

  test('anything but an address is refused', () => {
    assert.equal(filter.allows('example.org'), false);
    assert.equal(filter.allows(''), false);
  });
});
