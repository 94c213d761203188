// Request logging: at info nothing is logged per request but failures; at debug every request is
// logged when it arrives and when it is answered, without access tokens.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import { loggableUrl } from '../../src/http/request-log.js';
import type { RouteDef } from '../../src/http/route.js';
import { HearthError } from '../../src/protocol/errors.js';

const routes: RouteDef[] = [
  { method: 'GET', api: 'client', auth: 'none', versions: ['v3'], path: '/fine', handler: () => ({ body: { ok: true } }) },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/crash',
    handler: () => {
      throw new Error('the disk is on fire');
    },
  },
  {
    method: 'GET',
    api: 'client',
    auth: 'none',
    versions: ['v3'],
    path: '/denied',
    handler: () => {
      throw HearthError.forbidden('not you');
    },
  },
];

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** An app logging at `level` into an array; returns the lines and the base URL once listening. */
function loggingApp(level: 'info' | 'debug') {
  const lines: LogLine[] = [];
  const app = buildHttpApp(routes, { logger: { level, stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } } });
  let base = '';
  return {
    lines,
    base: () => base,
    start: async () => {
      await app.listen({ host: '127.0.0.1', port: 0 });
      base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    },
    stop: () => app.close(),
  };
}

/** Lines are written as the response finishes; give the last one a moment. */
const settle = () => new Promise((r) => setTimeout(r, 20));

describe('at info', () => {
  const app = loggingApp('info');
  before(app.start);
  after(app.stop);

  test('a successful request and a 4xx write no line', async () => {
    app.lines.length = 0;
    assert.equal((await fetch(`${app.base()}/_matrix/client/v3/fine`)).status, 200);
    assert.equal((await fetch(`${app.base()}/_matrix/client/v3/denied`)).status, 403);
    assert.equal((await fetch(`${app.base()}/_matrix/client/v3/nowhere`)).status, 404);
    await settle();
    assert.deepEqual(app.lines, []);
  });

  test('a failing request is logged at error with its error', async () => {
    app.lines.length = 0;
    const res = await fetch(`${app.base()}/_matrix/client/v3/crash`);
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), { errcode: 'M_UNKNOWN', error: 'Internal server error' });
    await settle();
    const errors = app.lines.filter((l) => l.level === 50);
    assert.equal(errors.length, 1, JSON.stringify(app.lines));
    assert.equal(errors[0]!.msg, 'request failed');
    assert.match(JSON.stringify(errors[0]!['err']), /the disk is on fire/);
    assert.equal(app.lines.length, 1, 'nothing else at info');
  });
});

describe('at debug', () => {
  const app = loggingApp('debug');
  before(app.start);
  after(app.stop);

  test('each request is logged when it arrives and when it is answered, tokens masked', async () => {
    app.lines.length = 0;
    const res = await fetch(`${app.base()}/_matrix/client/v3/fine?access_token=sekrit&x=1`);
    assert.equal(res.status, 200);
    await settle();
    const incoming = app.lines.find((l) => l.msg === 'incoming request');
    const completed = app.lines.find((l) => l.msg === 'request completed');
    assert.ok(incoming && completed, JSON.stringify(app.lines));
    assert.equal(incoming.level, 20);
    assert.equal(completed.level, 20);
    assert.equal(incoming['method'], 'GET');
    assert.equal(completed['statusCode'], 200);
    assert.equal(typeof completed['responseTime'], 'number');
    assert.equal(completed['url'], '/_matrix/client/v3/fine?access_token=<redacted>&x=1');
    assert.equal(incoming['reqId'], completed['reqId'], 'both lines carry the request id');
    assert.doesNotMatch(JSON.stringify(app.lines), /sekrit/);
  });

  test('a failing request is still logged at error', async () => {
    app.lines.length = 0;
    assert.equal((await fetch(`${app.base()}/_matrix/client/v3/crash`)).status, 500);
    await settle();
    assert.ok(app.lines.some((l) => l.level === 50 && l.msg === 'request failed'), JSON.stringify(app.lines));
    assert.ok(app.lines.some((l) => l.msg === 'request completed' && l['statusCode'] === 500));
  });
});

test('loggableUrl masks every access_token and nothing else', () => {
  assert.equal(loggableUrl('/a?access_token=x'), '/a?access_token=<redacted>');
  assert.equal(loggableUrl('/a?b=1&access_token=x&c=2#f'), '/a?b=1&access_token=<redacted>&c=2#f');
  assert.equal(loggableUrl('/a?b=1'), '/a?b=1');
  assert.equal(loggableUrl('/rooms/access_token=x'), '/rooms/access_token=x');
});
