// Request logging: at info every refused or failed request is logged once (method, URL without
// credentials, status, errcode, message, who asked) and successes not at all; at debug every
// request is also logged when it arrives and when it is answered.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { buildHttpApp } from '../../src/http/app.js';
import { loggableUrl } from '../../src/http/request-log.js';
import type { RouteDef } from '../../src/http/route.js';
import { HearthError } from '../../src/protocol/errors.js';
import { eventually } from '../support/eventually.js';
import { HttpClient } from '../support/http-client.js';

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
  {
    method: 'GET',
    api: 'client',
    versions: ['v3'],
    path: '/mine',
    handler: () => {
      throw HearthError.notFound('no such thing');
    },
  },
  // A refusal a handler returns rather than throws (as user-interactive auth does).
  { method: 'POST', api: 'client', auth: 'none', versions: ['v3'], path: '/uia', handler: () => ({ status: 401, body: { flows: [] } }) },
];

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** An app logging at `level` into an array; returns the lines and the base URL once listening. */
function loggingApp(level: 'info' | 'debug') {
  const lines: LogLine[] = [];
  const app = buildHttpApp(routes, {
    logger: { level, stream: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } },
    authenticate: async (token) => {
      if (token !== 'alice-token') throw new HearthError(401, 'M_UNKNOWN_TOKEN', 'Unrecognised access token');
      return { userId: '@alice:hs', deviceId: 'A', isGuest: false, isAdmin: false };
    },
  });
  let base = '';
  return {
    lines,
    base: () => base,
    http: () => new HttpClient(base),
    start: async () => {
      await app.listen({ host: '127.0.0.1', port: 0 });
      base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    },
    stop: () => app.close(),
  };
}

/** Lines are written as each response finishes, which may be just after the client has it. */
const logged = (app: { lines: LogLine[] }, count: number) => eventually(() => app.lines.length >= count, `${count} log lines: ${JSON.stringify(app.lines)}`);

describe('at info', () => {
  const app = loggingApp('info');
  before(app.start);
  after(app.stop);

  test('a successful request writes no line', async () => {
    app.lines.length = 0;
    assert.equal((await app.http().get('/_matrix/client/v3/fine')).status, 200);
    // A refused request after it is logged; had the success written a line, it would come first.
    assert.equal((await app.http().get('/_matrix/client/v3/denied')).status, 403);
    await logged(app, 1);
    assert.deepEqual(app.lines.map((l) => l['statusCode']), [403]);
  });

  test('each 4xx is one line at info: method, URL, status, errcode, message and the client address', async () => {
    app.lines.length = 0;
    assert.equal((await app.http().get('/_matrix/client/v3/denied?x=1')).status, 403);
    assert.equal((await app.http().put('/_matrix/client/v3/nowhere')).status, 404);
    assert.equal((await app.http().del('/_matrix/client/v3/fine')).status, 405);
    assert.equal((await app.http().post('/_matrix/client/v3/uia')).status, 401);
    await logged(app, 4);
    const pick = (l: LogLine) => ({ level: l.level, msg: l.msg, method: l['method'], url: l['url'], statusCode: l['statusCode'], errcode: l['errcode'], error: l['error'], client: l['client'] });
    assert.deepEqual(app.lines.map(pick), [
      { level: 30, msg: 'request refused', method: 'GET', url: '/_matrix/client/v3/denied?x=1', statusCode: 403, errcode: 'M_FORBIDDEN', error: 'not you', client: '127.0.0.1' },
      { level: 30, msg: 'request refused', method: 'PUT', url: '/_matrix/client/v3/nowhere', statusCode: 404, errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request', client: '127.0.0.1' },
      { level: 30, msg: 'request refused', method: 'DELETE', url: '/_matrix/client/v3/fine', statusCode: 405, errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request', client: '127.0.0.1' },
      { level: 30, msg: 'request refused', method: 'POST', url: '/_matrix/client/v3/uia', statusCode: 401, errcode: undefined, error: undefined, client: '127.0.0.1' },
    ]);
    for (const line of app.lines) assert.equal(typeof line['responseTime'], 'number');
  });

  test('a refusal after the token is read names the user; credentials in the URL never reach the log', async () => {
    app.lines.length = 0;
    assert.equal((await app.http().get('/_matrix/client/v3/mine?access_token=alice-token&a=b')).status, 404);
    assert.equal((await app.http().get('/_matrix/client/v3/mine?access_token=sekrit')).status, 401);
    assert.equal((await app.http().get('/_matrix/client/v3/nowhere?token=sekrit&client_secret=sekrit&refresh_token=sekrit')).status, 404);
    await logged(app, 3);
    assert.equal(app.lines.length, 3, JSON.stringify(app.lines));
    const [mine, unknown, nowhere] = app.lines as [LogLine, LogLine, LogLine];
    assert.deepEqual([mine['user'], mine['client'], mine['errcode'], mine['url']], ['@alice:hs', undefined, 'M_NOT_FOUND', '/_matrix/client/v3/mine?access_token=<redacted>&a=b']);
    assert.deepEqual([unknown['user'], unknown['client'], unknown['errcode']], [undefined, '127.0.0.1', 'M_UNKNOWN_TOKEN']);
    assert.equal(nowhere['url'], '/_matrix/client/v3/nowhere?token=<redacted>&client_secret=<redacted>&refresh_token=<redacted>');
    assert.doesNotMatch(JSON.stringify(app.lines), /sekrit|alice-token/);
  });

  test('a failing request is one line at error with its error', async () => {
    app.lines.length = 0;
    const res = await app.http().get('/_matrix/client/v3/crash');
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, { errcode: 'M_UNKNOWN', error: 'Internal server error' });
    await logged(app, 1);
    assert.equal(app.lines.length, 1, JSON.stringify(app.lines));
    const [line] = app.lines as [LogLine];
    assert.equal(line.level, 50);
    assert.equal(line.msg, 'request failed');
    assert.equal(line['statusCode'], 500);
    assert.equal(line['errcode'], 'M_UNKNOWN');
    assert.match(JSON.stringify(line['err']), /the disk is on fire/);
  });

  test('a request the HTTP parser refuses is logged too', async () => {
    app.lines.length = 0;
    const { port } = new URL(app.base());
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT A REQUEST\r\n\r\n'));
      socket.on('error', reject);
      socket.on('close', () => resolve());
      socket.resume();
    });
    await logged(app, 1);
    assert.equal(app.lines.length, 1, JSON.stringify(app.lines));
    const [line] = app.lines as [LogLine];
    assert.deepEqual([line.level, line.msg, line['statusCode'], line['errcode'], line['client']], [30, 'request refused', 400, 'M_UNKNOWN', '127.0.0.1']);
  });
});

describe('at debug', () => {
  const app = loggingApp('debug');
  before(app.start);
  after(app.stop);

  test('each request is logged when it arrives and when it is answered, tokens masked', async () => {
    app.lines.length = 0;
    const res = await app.http().get('/_matrix/client/v3/fine?access_token=sekrit&x=1');
    assert.equal(res.status, 200);
    await logged(app, 2);
    const incoming = app.lines.find((l) => l.msg === 'incoming request');
    const completed = app.lines.find((l) => l.msg === 'request completed');
    assert.ok(incoming && completed, JSON.stringify(app.lines));
    assert.equal(incoming.level, 20);
    assert.equal(completed.level, 20);
    assert.equal(incoming['method'], 'GET');
    assert.equal(incoming['remoteAddress'], '127.0.0.1');
    assert.equal(completed['statusCode'], 200);
    assert.equal(typeof completed['responseTime'], 'number');
    assert.equal(completed['url'], '/_matrix/client/v3/fine?access_token=<redacted>&x=1');
    assert.equal(incoming['reqId'], completed['reqId'], 'both lines carry the request id');
    assert.doesNotMatch(JSON.stringify(app.lines), /sekrit/);
  });

  test('a failing request is answered by its error line alone', async () => {
    app.lines.length = 0;
    assert.equal((await app.http().get('/_matrix/client/v3/crash')).status, 500);
    assert.equal((await app.http().get('/_matrix/client/v3/denied')).status, 403);
    await logged(app, 4);
    assert.deepEqual(
      app.lines.map((l) => [l.level, l.msg, l['statusCode']]),
      [
        [20, 'incoming request', undefined],
        [50, 'request failed', 500],
        [20, 'incoming request', undefined],
        [30, 'request refused', 403],
      ],
    );
  });
});

test('loggableUrl masks credentials in the query and nothing else', () => {
  assert.equal(loggableUrl('/a?access_token=x'), '/a?access_token=<redacted>');
  assert.equal(loggableUrl('/a?b=1&access_token=x&c=2#f'), '/a?b=1&access_token=<redacted>&c=2#f');
  assert.equal(loggableUrl('/v1/register/m.login.registration_token/validity?token=abc'), '/v1/register/m.login.registration_token/validity?token=<redacted>');
  assert.equal(loggableUrl('/login/sso/redirect?redirectUrl=x&loginToken=y'), '/login/sso/redirect?redirectUrl=x&loginToken=<redacted>');
  assert.equal(loggableUrl('/a?b=1'), '/a?b=1');
  assert.equal(loggableUrl('/a?since=s1_2&my_token=3'), '/a?since=s1_2&my_token=3');
  assert.equal(loggableUrl('/rooms/access_token=x'), '/rooms/access_token=x');
});
