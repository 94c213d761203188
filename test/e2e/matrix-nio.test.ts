// The real matrix-nio (0.20, Debian's python3-matrix-nio) against a real server, on SQLite and
// PostgreSQL. test/e2e/support/nio-client.py drives nio's AsyncClient over /_matrix/client/r0 (token
// in the query string): register, log in, create a room with an invite, join, send, sync, page back,
// redact, custom state, display name, typing, read markers, to-device, joined members, log out. It
// prints what nio observed as JSON; these tests assert on it and check the server's side over HTTP.
//
// Needs /usr/bin/python3 with nio importable. Without it the suite is skipped, except when CI is set:
// there it fails, so that CI cannot pass without having run it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serverBackends, startTestServer, type TestServer, type TestUser } from '../support/server.js';
import { enc, request } from './support/client.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./support/nio-client.py', import.meta.url));
const SCRIPT_TIMEOUT_MS = 60_000;

/** Undefined when nio imports under PYTHON; otherwise why not. */
function nioUnavailable(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import nio'], { encoding: 'utf8', timeout: 20_000 });
  if (probe.error) return `${PYTHON}: ${probe.error.message}`;
  if (probe.status !== 0) return probe.stderr.trim().split('\n').at(-1) ?? `exit ${probe.status}`;
  return undefined;
}

const missing = nioUnavailable();
const inCi = (process.env['CI'] ?? '') !== '' && process.env['CI'] !== 'false';
const skipNio = missing !== undefined && !inCi ? `python3-matrix-nio is not installed: apt-get install python3-matrix-nio (${missing})` : false;

/** What nio-client.py prints. */
interface NioReport {
  registered: { user_id: string; device_id: string; whoami: string; whoami_after_logout: { class: string; status_code: string | null }; token: string };
  alice: { user_id: string; device_id: string };
  bob: { user_id: string; device_id: string; token: string };
  room_id: string;
  invite: { room_name: string; inviter: string; membership: string; stripped_types: string[] };
  join_room_id: string;
  room_seen_by_bob: { name: string; topic: string };
  sent: { tx_id: string; event_id: string; body: string }[];
  resent_event_id: string;
  bob_received: { event_id: string; sender: string; body: string; ts: number }[];
  pages: { from: string; start: string; end: string | null; events: { event_id: string; type: string; class: string }[] }[];
  redaction: {
    target: string;
    event_id: string;
    seen_event_id: string;
    seen_sender: string;
    seen_reason: string | null;
    paged_class: string | null;
    paged_content: Record<string, unknown> | null;
    paged_redacted_by: string | null;
    paged_reason: string | null;
  };
  state: {
    event_id: string;
    content: Record<string, unknown>;
    event_type: string;
    state_key: string;
    sync_type: string;
    sync_state_key: string;
    missing_class: string;
    missing_status_code: string | null;
  };
  profile: { displayname: string | null; avatar_url: string | null; room_name_for_bob: string };
  typing: { on: string[]; off: string[] };
  receipt: { event_id: string; user_id: string; receipt_type: string; ts: number; fully_read: string };
  to_device: { transaction_ids: string[]; sender: string; transaction_id: string; code: string; reason: string };
  joined_members: { user_id: string; display_name: string | null }[];
  sync_errors: { alice: string[]; bob: string[] };
  logged_out: boolean;
}

/** Runs the script; rejects with its standard error when it fails or prints no JSON. */
function runNio(args: string[]): Promise<NioReport> {
  return new Promise((resolve, reject) => {
    execFile(PYTHON, [SCRIPT, ...args], { timeout: SCRIPT_TIMEOUT_MS, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`nio-client.py failed (${err.killed ? `killed after ${SCRIPT_TIMEOUT_MS} ms` : `exit ${String(err.code)}`}):\n${stderr}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as NioReport);
      } catch {
        reject(new Error(`nio-client.py printed no JSON:\n${stdout}\n${stderr}`));
      }
    });
  });
}

for (const { backend, skip } of await serverBackends()) {
  describe(`matrix-nio against the server on ${backend}`, { skip: skip || skipNio }, () => {
    let hs: TestServer;
    let alice: TestUser;
    let nio: NioReport;
    const bodies = ['first from nio', 'second from nio', 'third from nio'];

    before(async () => {
      if (missing !== undefined) {
        throw new Error(`python3-matrix-nio is not installed: apt-get install python3-matrix-nio (${missing}); CI is set, so this fails instead of skipping`);
      }
      hs = await startTestServer({ backend });
      // Alice is made directly; this session of hers is ours, for checking the server's side below.
      alice = await hs.registerUser('alice', 'alice-pw');
      nio = await runNio([hs.baseUrl, alice.userId, 'alice-pw', 'bob', 'bob-pw']);
    });
    after(async () => {
      await hs?.close();
    });

    test('nio registers bob with the dummy flow, and the token stops working at logout', async () => {
      assert.equal(nio.registered.user_id, '@bob:localhost');
      assert.equal(nio.registered.whoami, '@bob:localhost');
      assert.deepEqual(nio.registered.whoami_after_logout, { class: 'WhoamiError', status_code: 'M_UNKNOWN_TOKEN' });
      assert.equal(nio.alice.user_id, alice.userId);
      assert.notEqual(nio.alice.device_id, alice.deviceId, 'a password login makes a new device');
      assert.equal(nio.bob.user_id, '@bob:localhost');
      assert.notEqual(nio.bob.device_id, nio.registered.device_id);
      assert.deepEqual(nio.sync_errors, { alice: [], bob: [] });
      assert.equal(nio.logged_out, true);
      for (const token of [nio.registered.token, nio.bob.token]) {
        const who = await request(hs.baseUrl, 'GET', '/_matrix/client/v3/account/whoami', undefined, { token });
        assert.equal(who.status, 401);
        assert.equal(who.body.errcode, 'M_UNKNOWN_TOKEN');
      }
    });

    test('the invite reaches bob with the room name; he joins and sees name and topic', () => {
      assert.match(nio.room_id, /^!.+:localhost$/);
      assert.deepEqual(nio.invite, {
        room_name: 'nio room',
        inviter: alice.userId,
        membership: 'invite',
        stripped_types: ['InviteMemberEvent', 'InviteNameEvent'],
      });
      assert.equal(nio.join_room_id, nio.room_id);
      assert.deepEqual(nio.room_seen_by_bob, { name: 'nio room', topic: 'Made by matrix-nio' });
    });

    test("alice's messages reach bob's sync once each, in order, and a reused transaction id gives back the same event", () => {
      assert.deepEqual(nio.sent.map((s) => s.body), bodies);
      const ids = nio.sent.map((s) => s.event_id);
      for (const id of ids) assert.match(id, /^\$/);
      assert.equal(new Set(ids).size, 3);
      assert.equal(nio.resent_event_id, ids[0]);
      assert.deepEqual(
        nio.bob_received.map(({ event_id, sender, body }) => ({ event_id, sender, body })),
        nio.sent.map((s) => ({ event_id: s.event_id, sender: alice.userId, body: s.body })),
      );
      for (const m of nio.bob_received) assert.ok(Math.abs(m.ts - Date.now()) < 120_000, `timestamp ${m.ts}`);
    });

    test('room_messages pages backwards from the sync token to the creation of the room', () => {
      const { pages } = nio;
      assert.ok(pages.length >= 2, `several pages of 3: ${pages.length}`);
      for (const [i, page] of pages.entries()) {
        assert.equal(page.start, page.from, `page ${i} starts where it was asked to`);
        if (i > 0) assert.equal(page.from, pages[i - 1]!.end, `page ${i} continues from the previous end`);
        if (i < pages.length - 2) assert.equal(page.events.length, 3, `page ${i} is full`);
        if (i < pages.length - 1) assert.ok(page.end, `page ${i} has an end token`);
      }
      // As from the reference server: every page with events has an end, and the empty page past the room's start has none.
      assert.equal(pages.at(-1)!.end, null, 'the last page has no end token');
      assert.deepEqual(pages.at(-1)!.events, [], 'the last page is empty');
      // Newest first: reversed, the room from its creation to alice's three messages.
      const timeline = pages.flatMap((p) => p.events).reverse();
      const ids = timeline.map((e) => e.event_id);
      assert.equal(new Set(ids).size, ids.length, 'no event twice');
      assert.equal(timeline[0]!.type, 'm.room.create');
      assert.deepEqual(ids.slice(-3), nio.sent.map((s) => s.event_id));
      assert.deepEqual(timeline.slice(-3).map((e) => e.class), ['RoomMessageText', 'RoomMessageText', 'RoomMessageText']);
      const types = timeline.map((e) => e.type);
      for (const t of ['m.room.power_levels', 'm.room.join_rules', 'm.room.name', 'm.room.topic']) assert.ok(types.includes(t), t);
      assert.equal(types.filter((t) => t === 'm.room.member').length, 3, "alice's join, bob's invite, bob's join");
    });

    test('a redaction reaches bob with its reason; nio and the server then serve the event stripped', async () => {
      const { redaction } = nio;
      assert.equal(redaction.target, nio.sent[1]!.event_id);
      assert.match(redaction.event_id, /^\$/);
      assert.equal(redaction.seen_event_id, redaction.event_id);
      assert.equal(redaction.seen_sender, alice.userId);
      assert.equal(redaction.seen_reason, 'typo');
      assert.equal(redaction.paged_class, 'RedactedEvent');
      assert.deepEqual(redaction.paged_content, {});
      assert.equal(redaction.paged_redacted_by, alice.userId);
      assert.equal(redaction.paged_reason, 'typo');

      // The server's own view, asked over HTTP with a session nio never had.
      const res = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/rooms/${enc(nio.room_id)}/messages?dir=b&limit=50`, undefined, { token: alice.accessToken });
      assert.equal(res.status, 200);
      const chunk = res.body.chunk as { event_id: string; type: string; content: Record<string, unknown>; unsigned?: any }[];
      const target = chunk.find((e) => e.event_id === redaction.target);
      assert.ok(target, 'the redacted event is still in the history');
      assert.deepEqual(target.content, {});
      assert.equal(target.unsigned?.redacted_because?.event_id, redaction.event_id);
      assert.equal(target.unsigned?.redacted_because?.content?.reason, 'typo');
      const messages = chunk.filter((e) => e.type === 'm.room.message' && e.content['body'] !== undefined).map((e) => e.event_id).reverse();
      assert.deepEqual(messages, [nio.sent[0]!.event_id, nio.sent[2]!.event_id]);
      const redactions = chunk.filter((e) => e.type === 'm.room.redaction');
      assert.deepEqual(redactions.map((e) => e.event_id), [redaction.event_id]);
    });

    test('custom state: put by alice, read back by bob, in his sync, and a missing key is M_NOT_FOUND', async () => {
      assert.deepEqual(nio.state, {
        event_id: nio.state.event_id,
        content: { colour: 'teal', n: 7 },
        event_type: 'org.example.nio.state',
        state_key: 'k1',
        sync_type: 'org.example.nio.state',
        sync_state_key: 'k1',
        missing_class: 'RoomGetStateEventError',
        missing_status_code: 'M_NOT_FOUND',
      });
      assert.match(nio.state.event_id, /^\$/);
      const res = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/rooms/${enc(nio.room_id)}/state/org.example.nio.state/k1`, undefined, { token: alice.accessToken });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { colour: 'teal', n: 7 });
    });

    test("bob's display name: read back by get_profile and reaching alice's member list", async () => {
      assert.deepEqual(nio.profile, { displayname: 'Bob via nio', avatar_url: null, room_name_for_bob: 'Bob via nio' });
      const res = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/profile/${enc('@bob:localhost')}/displayname`, undefined, { token: alice.accessToken });
      assert.deepEqual([res.status, res.body], [200, { displayname: 'Bob via nio' }]);
    });

    test("typing and read markers reach the other's sync as ephemeral events, the fully-read marker bob's account data", () => {
      assert.deepEqual(nio.typing, { on: ['@bob:localhost'], off: [] });
      const read = nio.sent[2]!.event_id;
      assert.deepEqual(
        { event_id: nio.receipt.event_id, user_id: nio.receipt.user_id, receipt_type: nio.receipt.receipt_type, fully_read: nio.receipt.fully_read },
        { event_id: read, user_id: '@bob:localhost', receipt_type: 'm.read', fully_read: read },
      );
      assert.ok(Math.abs(nio.receipt.ts - Date.now()) < 120_000, `receipt timestamp ${nio.receipt.ts}`);
    });

    test('a to-device message sent twice under one transaction id is delivered once', () => {
      assert.deepEqual(nio.to_device, {
        transaction_ids: ['nio-verification-1', 'nio-verification-2'],
        sender: alice.userId,
        transaction_id: 'nio-verification-1',
        code: 'm.user',
        reason: 'just testing',
      });
    });

    test('joined_members lists both with their display names', async () => {
      assert.deepEqual(nio.joined_members, [
        { user_id: alice.userId, display_name: 'alice' },
        { user_id: '@bob:localhost', display_name: 'Bob via nio' },
      ]);
      const res = await request(hs.baseUrl, 'GET', `/_matrix/client/v3/rooms/${enc(nio.room_id)}/joined_members`, undefined, { token: alice.accessToken });
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body.joined).sort(), [alice.userId, '@bob:localhost']);
    });
  });
}
