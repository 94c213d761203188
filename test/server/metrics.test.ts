// GET /metrics on real servers: absent unless enabled; the Prometheus text with every named metric;
// the request counter by route template; basic auth; sync waiters, persisted events and an
// application service's backlog moving as the server works. Both storage backends.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';

const NAMES = [
  'hearth_http_requests_total',
  'hearth_http_request_duration_seconds',
  'hearth_sync_waiting',
  'hearth_events_persisted_total',
  'hearth_room_queue_busy_rooms',
  'hearth_room_queue_tasks',
  'hearth_event_writer_queue',
  'hearth_db_query_duration_seconds',
  'hearth_federation_pending_destinations',
  'hearth_federation_send_failures_total',
  'hearth_appservice_events_behind',
  'hearth_appservice_failures_total',
  'hearth_push_events_behind',
  'hearth_push_sent_total',
  'hearth_push_failures_total',
  'hearth_cache_hits_total',
  'hearth_cache_misses_total',
  'hearth_process_cpu_seconds_total',
  'hearth_nodejs_eventloop_lag_seconds',
];

async function scrape(hs: TestServer, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${hs.baseUrl}/metrics`, { headers });
  assert.equal(res.status, 200);
  return res.text();
}

/** The value of the sample with exactly these labels (in the order the registry writes them); 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  const prefix = labels === '' ? `${name} ` : `${name}{${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.slice(prefix.length));
}

async function eventually(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function call(hs: TestServer, user: TestUser, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${hs.baseUrl}/_matrix/client/v3${path}`, {
    method,
    headers: { ...hs.auth(user), 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as Record<string, unknown>;
  assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
  return json;
}

/** A loopback port nothing listens on: connections to it are refused. */
async function refusingUrl(): Promise<string> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('metrics disabled', () => {
  let hs: TestServer;
  before(async () => {
    hs = await startTestServer();
  });
  after(() => hs.close());

  test('/metrics is an unknown path; /health still answers', async () => {
    const res = await fetch(`${hs.baseUrl}/metrics`);
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as { errcode: string }).errcode, 'M_UNRECOGNIZED');
    assert.equal((await fetch(`${hs.baseUrl}/health`)).status, 200);
  });
});

describe('metrics behind basic auth', () => {
  let hs: TestServer;
  before(async () => {
    hs = await startTestServer({ config: { global: { metrics: { enabled: true, basic_auth: { username: 'prom', password: 's3cret' } } } } });
  });
  after(() => hs.close());

  const basic = (credentials: string) => ({ authorization: `Basic ${Buffer.from(credentials).toString('base64')}` });

  test('401 with a Basic challenge without credentials or with wrong ones', async () => {
    for (const headers of [{}, basic('prom:wrong'), basic('other:s3cret'), { authorization: 'Bearer s3cret' }]) {
      const res = await fetch(`${hs.baseUrl}/metrics`, { headers });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Basic realm="metrics"');
    }
  });

  test('200 with the right credentials', async () => {
    const text = await scrape(hs, basic('prom:s3cret'));
    assert.match(text, /^# HELP hearth_http_requests_total /m);
  });
});

for (const { backend, skip } of await serverBackends()) {
  describe(`metrics enabled (${backend})`, { skip }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-metrics-'));
    let hs: TestServer;
    let alice: TestUser;
    let roomId: string;

    before(async () => {
      const file = join(dir, 'bridge.yaml');
      writeFileSync(
        file,
        `id: bridge\nurl: ${await refusingUrl()}\nas_token: metrics-as-token-0123456789\nhs_token: metrics-hs-token-0123456789\n` +
          `sender_localpart: bridgebot\nnamespaces:\n  users:\n    - exclusive: true\n      regex: '@_bridge_.*:localhost'\n` +
          // Every room interests it, so every event is one it must be sent.
          `  rooms:\n    - exclusive: false\n      regex: '!.*'\n`,
      );
      hs = await startTestServer({
        backend,
        config: { global: { metrics: { enabled: true } }, app_service_config_files: [file] },
        appServiceRetry: { minMs: 20, maxMs: 100 },
      });
      alice = await hs.registerUser('alice', 'password-alice');
      roomId = (await call(hs, alice, 'POST', '/createRoom', {})).room_id as string;
    });
    after(async () => {
      await hs.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('Prometheus text with every named metric', async () => {
      const res = await fetch(`${hs.baseUrl}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      for (const name of NAMES) assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
      if (backend === 'postgres') {
        assert.ok(sample(text, 'hearth_db_pool_connections') >= 1);
        assert.doesNotMatch(text, /hearth_sqlite_/);
      } else {
        assert.doesNotMatch(text, /hearth_db_pool_/);
        // The room created before was written to the log: a pass copies it within half a second.
        await eventually(async () => sample(await scrape(hs), 'hearth_sqlite_checkpoints_total') >= 1, 'a checkpoint pass');
        const later = await scrape(hs);
        assert.ok(sample(later, 'hearth_sqlite_checkpoint_loop_seconds_total') > 0);
        assert.match(later, /^hearth_sqlite_wal_pages \d+$/m);
        assert.match(later, /^hearth_sqlite_checkpoint_restarts_total \d+$/m);
      }
      assert.ok(sample(text, 'hearth_db_query_duration_seconds_count') > 0);
    });

    test('the request counter rises by route template; unknown paths share one label', async () => {
      const labels = 'api="client",route="/account/whoami",method="GET",status="200"';
      const before = sample(await scrape(hs), 'hearth_http_requests_total', labels);
      for (let i = 0; i < 3; i++) await call(hs, alice, 'GET', '/account/whoami');
      await fetch(`${hs.baseUrl}/no/such/path/${Date.now()}`);
      // Uploads are mounted apart (their bodies are streamed); they are counted all the same.
      const upload = await fetch(`${hs.baseUrl}/_matrix/media/v3/upload`, { method: 'POST', headers: { ...hs.auth(alice), 'content-type': 'text/plain' }, body: 'hello' });
      assert.equal(upload.status, 200);
      const text = await scrape(hs);
      assert.equal(sample(text, 'hearth_http_requests_total', labels), before + 3);
      assert.ok(sample(text, 'hearth_http_requests_total', 'api="unmatched",route="unmatched",method="GET",status="404"') >= 1);
      assert.ok(sample(text, 'hearth_http_request_duration_seconds_count', 'api="client",route="/account/whoami",method="GET"') >= 3);
      assert.ok(sample(text, 'hearth_http_requests_total', 'api="media",route="/upload",method="POST",status="200"') >= 1);
      assert.ok(sample(text, 'hearth_cache_hits_total', 'cache="access_tokens"') >= 3);
      assert.doesNotMatch(text, /route="\/_matrix/);
    });

    test('sync waiters rise during a long-poll', async () => {
      const first = await call(hs, alice, 'GET', '/sync?timeout=0');
      const controller = new AbortController();
      const poll = fetch(`${hs.baseUrl}/_matrix/client/v3/sync?timeout=30000&since=${encodeURIComponent(first.next_batch as string)}`, {
        headers: hs.auth(alice),
        signal: controller.signal,
      }).catch(() => undefined);
      try {
        await eventually(async () => sample(await scrape(hs), 'hearth_sync_waiting') >= 1, 'a waiting sync');
      } finally {
        controller.abort();
        await poll;
      }
    });

    test('events persisted rise after a send; the event cache is looked up', async () => {
      const before = sample(await scrape(hs), 'hearth_events_persisted_total', 'status="timeline"');
      await call(hs, alice, 'PUT', `/rooms/${encodeURIComponent(roomId)}/send/m.room.message/m${Date.now()}`, { msgtype: 'm.text', body: 'hi' });
      const text = await scrape(hs);
      assert.equal(sample(text, 'hearth_events_persisted_total', 'status="timeline"'), before + 1);
      assert.ok(sample(text, 'hearth_cache_hits_total', 'cache="events"') + sample(text, 'hearth_cache_misses_total', 'cache="events"') > 0);
    });

    test("an application service's backlog and failures rise while it is down", async () => {
      for (let i = 0; i < 3; i++) {
        await call(hs, alice, 'PUT', `/rooms/${encodeURIComponent(roomId)}/send/m.room.message/as${i}-${Date.now()}`, { msgtype: 'm.text', body: `m${i}` });
      }
      await eventually(async () => {
        const text = await scrape(hs);
        return sample(text, 'hearth_appservice_events_behind', 'service="bridge"') >= 3 && sample(text, 'hearth_appservice_failures_total', 'service="bridge"') >= 1;
      }, 'the service backlog');
    });
  });
}
