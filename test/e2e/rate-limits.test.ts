// Rate limiting at its shipped defaults, against a real server on SQLite and PostgreSQL.
//
// First a real end-to-end encrypted client: matrix-nio with python3-olm (test/e2e/support/nio-e2ee.py)
// logs in eleven users, uploads their device and one-time keys, shares a room key with ten other
// devices and sends 50 messages at full speed. No request may be answered 429, by what nio received
// and by the server's own log, and every recipient must decrypt every message.
//
// Then the server still protects itself: hammering /login or sending beyond the message burst gets
// 429 with retry_after_ms, while to-device messages, key uploads, receipts, typing and the like at
// the same speed never do.
//
// The nio suite needs /usr/bin/python3 with nio and olm importable. Without them it is skipped,
// except when CI is set: there it fails, so that CI cannot pass without having run it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOG_FILE_NAME } from '../../src/server/logging.js';
import { serverBackends, startTestServer, useTestServer, type TestServer, type TestUser } from '../support/server.js';
import { enc, request, type Reply } from './support/client.js';
import { eventually } from '../support/eventually.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./support/nio-e2ee.py', import.meta.url));
const SCRIPT_TIMEOUT_MS = 250_000;
const PASSWORD = 'a long secret';
const MESSAGES = 50;
const RECIPIENTS = 10;

/** Undefined when nio and olm import under PYTHON; otherwise why not. */
function olmUnavailable(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import nio, olm'], { encoding: 'utf8', timeout: 20_000 });
  if (probe.error) return `${PYTHON}: ${probe.error.message}`;
  if (probe.status !== 0) return probe.stderr.trim().split('\n').at(-1) ?? `exit ${probe.status}`;
  return undefined;
}

const missing = olmUnavailable();
const inCi = (process.env['CI'] ?? '') !== '' && process.env['CI'] !== 'false';
const HINT = 'apt-get install python3-olm python3-matrix-nio';
const skipOlm = missing !== undefined && !inCi ? `python3-olm or python3-matrix-nio is not installed: ${HINT} (${missing})` : false;

/** What nio-e2ee.py prints. */
interface E2eeReport {
  room_id: string;
  sender: { user_id: string; device_id: string };
  sent: string[];
  bodies: string[];
  recipients: { user_id: string; device_id: string; decrypted: string[]; undecryptable: number }[];
  /** [user, method, path, status] of every HTTP response nio received. */
  responses: [string, string, string, number][];
}

function runE2ee(args: string[]): Promise<E2eeReport> {
  return new Promise((resolve, reject) => {
    execFile(PYTHON, [SCRIPT, ...args], { timeout: SCRIPT_TIMEOUT_MS, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`nio-e2ee.py failed (${err.killed ? `killed after ${SCRIPT_TIMEOUT_MS} ms` : `exit ${String(err.code)}`}):\n${stderr}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as E2eeReport);
      } catch {
        reject(new Error(`nio-e2ee.py printed no JSON:\n${stdout}\n${stderr}`));
      }
    });
  });
}

interface LogLine {
  msg: string;
  statusCode?: number;
  url?: string;
  limit?: string;
}

function readLog(dir: string): LogLine[] {
  return readFileSync(join(dir, LOG_FILE_NAME), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LogLine);
}

/** Rate limiting on, every other rate-limit key at its default. */
const DEFAULT_LIMITS = { client_api: { rate_limiting: { enabled: true } } };

for (const { backend, skip } of await serverBackends()) {
  describe(`an encrypted nio client at the default rate limits on ${backend}`, { skip: skip || skipOlm }, () => {
    let hs: TestServer;
    let logDir: string;
    let sender: TestUser;
    let report: E2eeReport;

    before(async () => {
      if (missing !== undefined) {
        throw new Error(`python3-olm or python3-matrix-nio is not installed: ${HINT} (${missing}); CI is set, so this fails instead of skipping`);
      }
      logDir = mkdtempSync(join(tmpdir(), 'hearth-e2ee-log-'));
      // The server logs at info into a file: every refused request is a line there.
      hs = await startTestServer({ backend, logLevel: 'info', config: { ...DEFAULT_LIMITS, logging: [{ type: 'file', level: 'info', params: { path: logDir } }] } });
      sender = await hs.registerUser('sender', PASSWORD);
      const recipients: TestUser[] = [];
      for (let i = 0; i < RECIPIENTS; i++) recipients.push(await hs.registerUser(`recipient${i}`, PASSWORD));
      report = await runE2ee([hs.baseUrl, PASSWORD, String(MESSAGES), sender.userId, ...recipients.map((r) => r.userId)]);
    });
    after(async () => {
      await hs?.close();
      if (logDir) rmSync(logDir, { recursive: true, force: true });
    });

    test('nio received no 429, through login, key upload, key sharing and 50 sends', () => {
      const limited = report.responses.filter((r) => r[3] === 429);
      assert.deepEqual(limited, []);
      const count = (method: string, pattern: RegExp, status = 200) =>
        report.responses.filter(([, m, path, s]) => m === method && pattern.test(path) && s === status).length;
      assert.equal(count('POST', /\/login$/), RECIPIENTS + 1, 'every user logged in over HTTP');
      assert.ok(count('POST', /\/keys\/upload$/) >= RECIPIENTS + 1, 'every device uploaded its keys');
      assert.ok(count('POST', /\/keys\/query$/) >= 1, 'the sender queried the devices');
      assert.ok(count('POST', /\/keys\/claim$/) >= 1, 'the sender claimed one-time keys');
      assert.ok(count('PUT', /\/sendToDevice\/m\.room\.encrypted\//) >= 1, 'the room key went out as to-device messages');
      assert.equal(count('PUT', /\/rooms\/[^/]+\/send\/m\.room\.encrypted\//), MESSAGES, 'each message sent once, encrypted');
      assert.equal(count('POST', /\/join\/|\/rooms\/[^/]+\/join$/), RECIPIENTS);
      // Nothing else failed either.
      assert.deepEqual(report.responses.filter((r) => r[3] >= 400), []);
    });

    test('the server refused nothing: its log has no 429 (and does log what it refuses)', async () => {
      // A refusal of our own, to show that refusals reach the log at all.
      assert.equal((await request(hs.baseUrl, 'GET', '/_matrix/client/v3/no-such-endpoint')).status, 404);
      let lines: LogLine[] = [];
      await eventually(() => (lines = readLog(logDir)).some((l) => l.statusCode === 404), 'the probe in the log');
      assert.ok(lines.some((l) => l.statusCode === 404 && l.url === '/_matrix/client/v3/no-such-endpoint'), 'the probe was logged');
      assert.deepEqual(lines.filter((l) => l.statusCode === 429), []);
    });

    test('every recipient decrypted every message', () => {
      assert.equal(report.sent.length, MESSAGES);
      assert.equal(new Set(report.sent).size, MESSAGES);
      assert.equal(report.recipients.length, RECIPIENTS);
      for (const r of report.recipients) {
        assert.deepEqual([...r.decrypted].sort(), [...report.bodies].sort(), `${r.user_id} decrypted every message once`);
        assert.equal(r.undecryptable, 0, r.user_id);
      }
    });

    test('the server holds the 50 messages encrypted, as sent', async () => {
      const res = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/rooms/${enc(report.room_id)}/messages?dir=b&limit=100`, undefined, { token: sender.accessToken });
      assert.equal(res.status, 200);
      const encrypted = (res.body.chunk as { event_id: string; type: string; content: Record<string, unknown> }[]).filter((e) => e.type === 'm.room.encrypted');
      assert.deepEqual(encrypted.map((e) => e.event_id).reverse(), report.sent);
      for (const e of encrypted) {
        assert.equal(e.content['algorithm'], 'm.megolm.v1.aes-sha2');
        assert.equal(e.content['body'], undefined, 'no plaintext on the server');
      }
    });
  });

  describe(`the default rate limits still protect the server on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend, config: DEFAULT_LIMITS });
    let alice: TestUser;
    let bob: TestUser;
    let roomId: string;
    let eventId: string;
    const call = (method: string, path: string, body?: unknown, user: TestUser = alice) =>
      request(hs.baseUrl, 'GET' === method ? method : method, `/_matrix/client/v3${path}`, body, { token: user.accessToken });

    before(async () => {
      alice = await hs.registerUser('alice', PASSWORD);
      bob = await hs.registerUser('bob', PASSWORD);
      const created = await call('POST', '/createRoom', { invite: [bob.userId] });
      assert.equal(created.status, 200);
      roomId = created.body.room_id;
      assert.equal((await call('POST', `/rooms/${enc(roomId)}/join`, {}, bob)).status, 200);
      const sent = await call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/first`, { msgtype: 'm.text', body: 'first' });
      assert.equal(sent.status, 200);
      eventId = sent.body.event_id;
    });

    /** Calls `next(i)` until it answers 429 or `max` calls; returns the replies. */
    async function hammer(max: number, next: (i: number) => Promise<Reply>): Promise<Reply[]> {
      const replies: Reply[] = [];
      for (let i = 0; i < max; i++) {
        const reply = await next(i);
        replies.push(reply);
        if (reply.status === 429) break;
      }
      return replies;
    }

    function assertLimited(replies: Reply[], burst: number, ok: number, what: string): void {
      const last = replies.at(-1)!;
      assert.equal(last.status, 429, `${what}: no 429 after ${replies.length} requests`);
      assert.ok(replies.length > burst, `${what}: refused after ${replies.length - 1}, within the burst of ${burst}`);
      assert.deepEqual(replies.slice(0, -1).filter((r) => r.status !== ok).map((r) => r.status), [], what);
      assert.equal(last.body.errcode, 'M_LIMIT_EXCEEDED');
      const wait = last.body.retry_after_ms as number;
      assert.ok(Number.isInteger(wait) && wait > 0, `${what}: retry_after_ms ${wait}`);
      assert.equal(last.headers.get('retry-after'), String(Math.ceil(wait / 1000)));
    }

    test('sends beyond the message burst get 429 with retry_after_ms', async () => {
      const burst = hs.config.client_api.rate_limiting.message.burst_count;
      const replies = await hammer(burst * 2, (i) =>
        call('PUT', `/rooms/${enc(roomId)}/send/m.room.message/hammer-${i}`, { msgtype: 'm.text', body: `hammer ${i}` }),
      );
      assertLimited(replies, burst - 1, 200, 'sends');
    });

    test('hammering /login from one address gets 429 with retry_after_ms', async () => {
      const burst = hs.config.client_api.rate_limiting.login.address.burst_count;
      const replies = await hammer(burst * 2, (i) =>
        request(hs.baseUrl, 'POST', '/_matrix/client/v3/login', {
          type: 'm.login.password',
          identifier: { type: 'm.id.user', user: `guess-${i}` },
          password: 'wrong',
        }),
      );
      assertLimited(replies, burst, 403, 'logins');
    });

    test('to-device, keys, receipts, read markers, typing, account data and presence at the same speed are never limited', async () => {
      // Alice's message bucket is full from the sends above; none of these share it.
      const count = hs.config.client_api.rate_limiting.message.burst_count + 20;
      const calls: [string, (i: number) => Promise<Reply>][] = [
        ['to-device', (i) => call('PUT', `/sendToDevice/org.example.ping/td-${i}`, { messages: { [bob.userId]: { [bob.deviceId]: { i } } } })],
        ['keys/upload', () => call('POST', '/keys/upload', {})],
        ['keys/query', () => call('POST', '/keys/query', { device_keys: { [bob.userId]: [] } })],
        ['receipt', () => call('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(eventId)}`, {})],
        ['read markers', () => call('POST', `/rooms/${enc(roomId)}/read_markers`, { 'm.fully_read': eventId, 'm.read': eventId })],
        ['typing', (i) => call('PUT', `/rooms/${enc(roomId)}/typing/${enc(alice.userId)}`, { typing: i % 2 === 0, timeout: 10_000 })],
        ['account data', (i) => call('PUT', `/user/${enc(alice.userId)}/account_data/org.example.n`, { i })],
        ['presence', (i) => call('PUT', `/presence/${enc(alice.userId)}/status`, { presence: i % 2 === 0 ? 'online' : 'unavailable' })],
      ];
      for (const [what, next] of calls) {
        const statuses: number[] = [];
        for (let i = 0; i < count; i++) statuses.push((await next(i)).status);
        assert.deepEqual(statuses.filter((s) => s !== 200), [], what);
      }
    });
  });
}
