// The push rules API over real HTTP, on SQLite and PostgreSQL: every endpoint and error, ordering
// with before/after, changes to default rules, the m.push_rules account data in /sync, and the
// user's own rules deciding the unread notification counts /sync reports.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { HttpClient } from '../support/http-client.js';
import { serverBackends, useTestServer } from '../support/server.js';
import { clients, enc, type Reply } from '../sync/sync-client.js';

const RULES = '/pushrules/global';

function expectError(r: Reply, status: number, errcode: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.errcode, errcode, JSON.stringify(r.body));
  assert.equal(typeof r.body.error, 'string');
}

const userRuleIds = (rules: any[]) => rules.filter((r) => !r.default).map((r) => r.rule_id);
const pushRulesIn = (sync: any) => sync.account_data.events.filter((e: any) => e.type === 'm.push_rules');

for (const { backend, skip } of await serverBackends()) {
  describe(`push rules over HTTP on ${backend}`, { skip }, () => {
    const hs = useTestServer({ backend });
    const user = clients(hs);

    test('GET /pushrules/, /pushrules/global/ and /pushrules serve the defaults under r0 and v3', async () => {
      const alice = await user('alice');
      const all = await alice.ok('GET', '/pushrules/');
      for (const kind of ['override', 'content', 'room', 'sender', 'underride']) assert.ok(Array.isArray(all.global[kind]), kind);
      assert.equal(all.global.override[0].rule_id, '.m.rule.master');
      assert.deepEqual(await alice.ok('GET', '/pushrules'), all);
      assert.deepEqual(await alice.ok('GET', `${RULES}/`), all.global);
      assert.deepEqual(await alice.ok('GET', `/_matrix/client/r0${RULES}/`), all.global);
      assert.deepEqual(await alice.ok('GET', `/_chat/client/v3${RULES}/underride/.m.rule.message`), {
        rule_id: '.m.rule.message',
        default: true,
        enabled: true,
        conditions: [{ kind: 'event_match', key: 'type', pattern: 'm.room.message' }],
        actions: ['notify'],
      });
      const anonymous = await new HttpClient(hs.baseUrl).get('/pushrules/');
      assert.equal(anonymous.status, 401);
    });

    test('PUT, GET and DELETE a rule; before/after order rules of a kind', async () => {
      const alice = await user('alice');
      const put = (kind: string, id: string, body: object, query = '') => alice.call('PUT', `${RULES}/${kind}/${enc(id)}${query}`, body);
      // The specification's examples.
      assert.equal((await put('room', '!dj234r78wl45Gh4D:matrix.org', { actions: [] })).status, 200);
      assert.equal((await put('sender', '@spambot:matrix.org', { actions: [] })).status, 200);
      assert.equal((await put('content', 'SSByZWFsbHkgbGlrZSBjYWtl', { pattern: 'cake', actions: ['notify', { set_tweak: 'sound', value: 'cakealarm.wav' }] })).status, 200);
      assert.equal((await put('content', 'U3BvbmdlIGNha2UgaXMgYmVzdA', { pattern: 'cake*lie', actions: ['notify'] }, '?before=SSByZWFsbHkgbGlrZSBjYWtl')).status, 200);
      const beer = {
        conditions: [
          { kind: 'event_match', key: 'content.body', pattern: 'beer' },
          { kind: 'room_member_count', is: '<=10' },
        ],
        actions: ['notify', { set_tweak: 'sound', value: 'beeroclock.wav' }],
      };
      assert.equal((await put('override', 'U2VlIHlvdSBpbiBUaGUgRHVrZQ', beer)).status, 200);

      assert.deepEqual(await alice.ok('GET', `${RULES}/override/U2VlIHlvdSBpbiBUaGUgRHVrZQ`), { rule_id: 'U2VlIHlvdSBpbiBUaGUgRHVrZQ', default: false, enabled: true, ...beer });
      assert.deepEqual(await alice.ok('GET', `${RULES}/room/${enc('!dj234r78wl45Gh4D:matrix.org')}`), { rule_id: '!dj234r78wl45Gh4D:matrix.org', default: false, enabled: true, actions: [] });
      const all = (await alice.ok('GET', `${RULES}/`)) as any;
      assert.deepEqual(userRuleIds(all.content), ['U3BvbmdlIGNha2UgaXMgYmVzdA', 'SSByZWFsbHkgbGlrZSBjYWtl']);
      assert.deepEqual(all.override.slice(0, 2).map((r: any) => r.rule_id), ['.m.rule.master', 'U2VlIHlvdSBpbiBUaGUgRHVrZQ']);
      assert.deepEqual(userRuleIds(all.sender), ['@spambot:matrix.org']);

      // after= puts the rule next below; without either a new rule goes first.
      for (const [id, query] of [['c', ''], ['a', ''], ['b', '?after=a'], ['z', '?after=c'], ['top', '?before=a']] as const) {
        assert.equal((await put('underride', id, { actions: ['notify'], conditions: [] }, query)).status, 200);
      }
      assert.deepEqual(userRuleIds((await alice.ok('GET', `${RULES}/`)).underride), ['top', 'a', 'b', 'c', 'z']);
      // Both: before wins. An update moves the rule to where it is asked.
      assert.equal((await put('underride', 'z', { actions: [] }, '?before=a&after=c')).status, 200);
      assert.deepEqual(userRuleIds((await alice.ok('GET', `${RULES}/`)).underride), ['top', 'z', 'a', 'b', 'c']);
      // User underride rules come before the default underride rules.
      const underride = (await alice.ok('GET', `${RULES}/`)).underride as any[];
      assert.deepEqual(underride.slice(5).map((r) => r.default), underride.slice(5).map(() => true));

      assert.deepEqual(await alice.ok('DELETE', `${RULES}/underride/z`), {});
      expectError(await alice.call('GET', `${RULES}/underride/z`), 404, 'M_NOT_FOUND');
      expectError(await alice.call('DELETE', `${RULES}/underride/z`), 404, 'M_NOT_FOUND');
      assert.deepEqual(userRuleIds((await alice.ok('GET', `${RULES}/`)).underride), ['top', 'a', 'b', 'c']);
      // Another user's rules are their own.
      const bob = await user('bob');
      assert.deepEqual(userRuleIds((await bob.ok('GET', `${RULES}/`)).underride), []);
    });

    test('enabled and actions: of user rules and of default rules', async () => {
      const alice = await user('alice');
      await alice.ok('PUT', `${RULES}/content/pizza`, { pattern: 'pizza', actions: ['notify'] });
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/pizza/enabled`), { enabled: true });
      assert.deepEqual(await alice.ok('PUT', `${RULES}/content/pizza/enabled`, { enabled: false }), {});
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/pizza/enabled`), { enabled: false });
      // A bare boolean is not the spec's body: refused, nothing changed.
      await alice.ok('PUT', `${RULES}/content/pizza/enabled`, { enabled: false });
      expectError(await alice.call('PUT', `${RULES}/content/pizza/enabled`, true), 400, 'M_BAD_JSON');
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/pizza/enabled`), { enabled: false });
      await alice.ok('PUT', `${RULES}/content/pizza/enabled`, { enabled: true });
      await alice.ok('PUT', `${RULES}/content/pizza/actions`, { actions: ['notify', { set_tweak: 'highlight' }] });
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/pizza/actions`), { actions: ['notify', { set_tweak: 'highlight' }] });

      await alice.ok('PUT', `${RULES}/override/.m.rule.master/enabled`, { enabled: true });
      assert.deepEqual(await alice.ok('GET', `${RULES}/override/.m.rule.master/enabled`), { enabled: true });
      await alice.ok('PUT', `${RULES}/underride/.m.rule.message/actions`, { actions: [] });
      const message = await alice.ok('GET', `${RULES}/underride/.m.rule.message`);
      assert.deepEqual(message.actions, []);
      assert.equal(message.default, true);
      await alice.ok('PUT', `${RULES}/override/.m.rule.master/enabled`, { enabled: false });
      assert.equal((await alice.ok('GET', '/pushrules/')).global.override[0].enabled, false);

      expectError(await alice.call('GET', `${RULES}/content/nope/enabled`), 404, 'M_NOT_FOUND');
      expectError(await alice.call('PUT', `${RULES}/content/nope/enabled`, { enabled: true }), 404, 'M_NOT_FOUND');
      expectError(await alice.call('GET', `${RULES}/content/nope/actions`), 404, 'M_NOT_FOUND');
      expectError(await alice.call('PUT', `${RULES}/content/nope/actions`, { actions: [] }), 404, 'M_NOT_FOUND');
      expectError(await alice.call('PUT', `${RULES}/override/.m.rule.nope/enabled`, { enabled: true }), 404, 'M_NOT_FOUND');
      expectError(await alice.call('PUT', `${RULES}/content/pizza/enabled`, { enabled: 1 }), 400, 'M_BAD_JSON');
      expectError(await alice.call('PUT', `${RULES}/content/pizza/enabled`, {}), 400, 'M_MISSING_PARAM');
      expectError(await alice.call('PUT', `${RULES}/content/pizza/enabled`, [true]), 400, 'M_BAD_JSON');
      expectError(await alice.call('PUT', `${RULES}/content/pizza/actions`, { actions: ['notify', 'bell'] }), 400, 'M_BAD_JSON');
      expectError(await alice.call('PUT', `${RULES}/content/pizza/actions`, {}), 400, 'M_MISSING_PARAM');
    });

    test('errors: scope, kind, reserved and malformed ids, bodies, before/after', async () => {
      const alice = await user('alice');
      await alice.ok('PUT', `${RULES}/override/anchor`, { actions: [], conditions: [] });
      const ok = { actions: ['notify'], conditions: [] };
      // Scope: Synapse's answer, 400 M_UNRECOGNIZED; kind: 400 M_INVALID_PARAM.
      expectError(await alice.call('GET', '/pushrules/device/'), 400, 'M_UNRECOGNIZED');
      expectError(await alice.call('GET', '/pushrules/device/override/anchor'), 400, 'M_UNRECOGNIZED');
      expectError(await alice.call('PUT', '/pushrules/device/override/x', ok), 400, 'M_UNRECOGNIZED');
      expectError(await alice.call('DELETE', '/pushrules/device/override/anchor'), 400, 'M_UNRECOGNIZED');
      expectError(await alice.call('PUT', '/pushrules/device/override/anchor/enabled', { enabled: false }), 400, 'M_UNRECOGNIZED');
      expectError(await alice.call('GET', `${RULES}/overide/anchor`), 400, 'M_INVALID_PARAM');
      expectError(await alice.call('PUT', `${RULES}/overide/x`, ok), 400, 'M_INVALID_PARAM');
      expectError(await alice.call('PUT', `${RULES}/overide/anchor/actions`, { actions: [] }), 400, 'M_INVALID_PARAM');
      expectError(await alice.call('GET', `${RULES}/override/missing`), 404, 'M_NOT_FOUND');
      // Server-default ids are reserved; defaults cannot be deleted.
      expectError(await alice.call('PUT', `${RULES}/override/.m.rule.master`, ok), 400, 'M_INVALID_PARAM');
      expectError(await alice.call('PUT', `${RULES}/override/.custom`, ok), 400, 'M_INVALID_PARAM');
      expectError(await alice.call('DELETE', `${RULES}/override/.m.rule.master`), 404, 'M_NOT_FOUND');
      // Slashes and backslashes, percent-encoded in the path.
      expectError(await alice.call('PUT', `${RULES}/override/a%2Fb`, ok), 400, 'M_INVALID_PARAM');
      expectError(await alice.call('PUT', `${RULES}/override/a%5Cb`, ok), 400, 'M_INVALID_PARAM');
      // Bodies.
      expectError(await alice.call('PUT', `${RULES}/override/x`, { conditions: [] }), 400, 'M_MISSING_PARAM');
      expectError(await alice.call('PUT', `${RULES}/override/x`, { actions: 'notify', conditions: [] }), 400, 'M_BAD_JSON');
      expectError(await alice.call('PUT', `${RULES}/override/x`, { actions: [], conditions: [{ key: 'type', pattern: 'x' }] }), 400, 'M_BAD_JSON');
      expectError(await alice.call('PUT', `${RULES}/override/x`, { actions: [], conditions: 'type' }), 400, 'M_BAD_JSON');
      expectError(await alice.call('PUT', `${RULES}/content/x`, { actions: [] }), 400, 'M_MISSING_PARAM');
      const malformed = await alice.http.put(`${RULES}/override/x`, undefined, { raw: '{"actions": [' });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.errcode, 'M_NOT_JSON');
      // before/after must name a user rule of the same kind (the specification's 400 M_UNKNOWN).
      expectError(await alice.call('PUT', `${RULES}/override/x?before=missing`, ok), 400, 'M_UNKNOWN');
      expectError(await alice.call('PUT', `${RULES}/override/x?after=.m.rule.master`, ok), 400, 'M_UNKNOWN');
      expectError(await alice.call('PUT', `${RULES}/underride/x?after=anchor`, ok), 400, 'M_UNKNOWN');
      expectError(await alice.call('PUT', `${RULES}/override/x?before=anchor&before=anchor`, ok), 400, 'M_INVALID_PARAM');
      // None of it was stored.
      assert.deepEqual(userRuleIds((await alice.ok('GET', `${RULES}/`)).override), ['anchor']);
      assert.deepEqual(userRuleIds((await alice.ok('GET', `${RULES}/`)).underride), []);
    });

    test('dont_notify and an empty actions list are served as they were stored', async () => {
      const alice = await user('alice');
      const mute = { actions: ['dont_notify'], conditions: [{ kind: 'event_match', key: 'room_id', pattern: '!quiet:localhost' }] };
      await alice.ok('PUT', `${RULES}/override/mute`, mute);
      await alice.ok('PUT', `${RULES}/room/${enc('!a:localhost')}`, { actions: [] });
      await alice.ok('PUT', `${RULES}/sender/${enc('@b:localhost')}`, { actions: ['notify', 'coalesce'] });
      assert.deepEqual(await alice.ok('GET', `${RULES}/override/mute`), { rule_id: 'mute', default: false, enabled: true, ...mute });
      assert.deepEqual(await alice.ok('GET', `${RULES}/override/mute/actions`), { actions: ['dont_notify'] });
      assert.deepEqual((await alice.ok('GET', `${RULES}/room/${enc('!a:localhost')}`)).actions, []);
      assert.deepEqual((await alice.ok('GET', `${RULES}/sender/${enc('@b:localhost')}/actions`)).actions, ['notify', 'coalesce']);
      // The same through .../actions, on a user rule and on a default rule.
      await alice.ok('PUT', `${RULES}/room/${enc('!a:localhost')}/actions`, { actions: ['dont_notify'] });
      await alice.ok('PUT', `${RULES}/underride/.m.rule.message/actions`, { actions: ['dont_notify'] });
      await alice.ok('PUT', `${RULES}/override/.m.rule.suppress_notices/actions`, { actions: [] });
      const all = (await alice.ok('GET', '/pushrules/')).global;
      assert.deepEqual(all.room.find((r: any) => r.rule_id === '!a:localhost').actions, ['dont_notify']);
      assert.deepEqual(all.underride.find((r: any) => r.rule_id === '.m.rule.message').actions, ['dont_notify']);
      assert.deepEqual(all.override.find((r: any) => r.rule_id === '.m.rule.suppress_notices').actions, []);
      assert.deepEqual(all.override.find((r: any) => r.rule_id === 'mute').actions, ['dont_notify']);
      // And so in the m.push_rules account data.
      const [rules] = pushRulesIn(await alice.sync());
      assert.deepEqual(rules.content.global, all);
    });

    test('malformed paths answer the API\'s errors, not the router\'s, and change nothing', async () => {
      const alice = await user('alice');
      await alice.ok('PUT', `${RULES}/override/keep`, { actions: ['notify'], conditions: [] });
      await alice.ok('PUT', `${RULES}/override/keep/enabled`, { enabled: false });
      const ok = { actions: ['notify'], conditions: [] };
      const cases: [string, string, unknown, number, string][] = [
        // A missing segment.
        ['GET', '/pushrules/global', undefined, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}/override`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override`, ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/override`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/`, ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', '/pushrules/', ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', '/pushrules/', undefined, 400, 'M_UNRECOGNIZED'],
        // An empty rule id or kind.
        ['PUT', `${RULES}/override/`, ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/override/`, undefined, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}/override//enabled`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override//enabled`, { enabled: true }, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}/override//actions`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override//actions`, { actions: [] }, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/override//actions`, undefined, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}//keep`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}//keep`, ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}//keep`, undefined, 400, 'M_UNRECOGNIZED'],
        // A trailing slash or segment.
        ['GET', `${RULES}/override/keep/`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override/keep/`, ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/override/keep/`, undefined, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}/override/keep/enabled/`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override/keep/enabled/`, { enabled: true }, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override/keep/actions/x`, { actions: [] }, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}/override/keep/colour`, undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', `${RULES}/override/keep/colour`, { colour: 'red' }, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/override/keep/colour`, undefined, 400, 'M_UNRECOGNIZED'],
        // enabled and actions are no things to delete; the rule stays.
        ['DELETE', `${RULES}/override/keep/enabled`, undefined, 400, 'M_UNRECOGNIZED'],
        ['DELETE', `${RULES}/override/keep/actions`, undefined, 400, 'M_UNRECOGNIZED'],
        // Unknown scope or kind, in every shape of path.
        ['GET', '/pushrules/device', undefined, 400, 'M_UNRECOGNIZED'],
        ['PUT', '/pushrules/device/', ok, 400, 'M_UNRECOGNIZED'],
        ['DELETE', '/pushrules/device/override/keep/enabled', undefined, 400, 'M_UNRECOGNIZED'],
        ['GET', '/pushrules/device/override/keep/x/y', undefined, 400, 'M_UNRECOGNIZED'],
        ['GET', `${RULES}/overide/`, undefined, 400, 'M_INVALID_PARAM'],
        ['PUT', `${RULES}/overide/keep/enabled`, { enabled: true }, 400, 'M_INVALID_PARAM'],
        ['DELETE', `${RULES}/overide/keep/actions`, undefined, 400, 'M_INVALID_PARAM'],
        ['GET', `${RULES}/overide/keep/x/y`, undefined, 400, 'M_INVALID_PARAM'],
        // A missing rule, through each attribute.
        ['GET', `${RULES}/override/gone/enabled`, undefined, 404, 'M_NOT_FOUND'],
        ['GET', `${RULES}/override/gone/conditions`, undefined, 404, 'M_NOT_FOUND'],
        ['PUT', `${RULES}/override/gone/actions`, { actions: [] }, 404, 'M_NOT_FOUND'],
      ];
      for (const [method, path, body, status, errcode] of cases) {
        const r = await alice.call(method, path, body);
        assert.equal(r.status, status, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.errcode, errcode, `${method} ${path}: ${JSON.stringify(r.body)}`);
      }
      // Nothing was stored, changed or deleted.
      const all = (await alice.ok('GET', '/pushrules/')).global;
      assert.deepEqual(userRuleIds(all.override), ['keep']);
      assert.deepEqual(await alice.ok('GET', `${RULES}/override/keep`), { rule_id: 'keep', default: false, enabled: false, ...ok });
      // A kind's rules, and another attribute of a rule, read as Synapse serves them.
      assert.deepEqual(await alice.ok('GET', `${RULES}/override/`), all.override);
      assert.deepEqual(await alice.ok('GET', `${RULES}/override/keep/conditions`), { conditions: [] });
      // Methods no push-rule path serves stay 405.
      expectError(await alice.call('POST', `${RULES}/override/keep`, ok), 405, 'M_UNRECOGNIZED');
      expectError(await alice.call('POST', `${RULES}/override/keep/x/y`, ok), 405, 'M_UNRECOGNIZED');
    });

    test('conditions whose fields are not of the spec\'s types are 400 M_INVALID_PARAM; nothing is stored', async () => {
      const alice = await user('alice');
      const bad: object[] = [
        { kind: 'event_match', key: 5, pattern: 'x' },
        { kind: 'event_match', key: 'content.body' },
        { kind: 'event_match', key: 'content.body', pattern: ['x'] },
        { kind: 'event_match', pattern: 'x' },
        { kind: 'room_member_count', is: 2 },
        { kind: 'room_member_count' },
        { kind: 'room_member_count', is: 'two' },
        { kind: 'room_member_count', is: '=<2' },
        { kind: 'sender_notification_permission', key: true },
        { kind: 'sender_notification_permission' },
        { kind: 'event_property_is', key: 'content.x', value: { a: 1 } },
        { kind: 'event_property_is', key: 'content.x', value: [1] },
        { kind: 'event_property_is', key: 'content.x', value: 1.5 },
        { kind: 'event_property_is', key: 'content.x' },
        { kind: 'event_property_is', key: 1, value: 1 },
        { kind: 'event_property_contains', key: 'content.x', value: {} },
        { kind: 'event_property_contains', key: null, value: 'x' },
      ];
      for (const c of bad) {
        for (const kind of ['override', 'underride']) {
          const r = await alice.call('PUT', `${RULES}/${kind}/bad`, { actions: ['notify'], conditions: [{ kind: 'contains_display_name' }, c] });
          expectError(r, 400, 'M_INVALID_PARAM');
          assert.match(r.body.error, /conditions\[1\]/);
        }
      }
      const all = (await alice.ok('GET', '/pushrules/')).global;
      assert.deepEqual([...userRuleIds(all.override), ...userRuleIds(all.underride)], []);
      // Well-typed conditions of every kind, and a kind this server does not know, are stored.
      const good = [
        { kind: 'event_match', key: 'content.body', pattern: 'cake*' },
        { kind: 'room_member_count', is: '>=2' },
        { kind: 'room_member_count', is: '10' },
        { kind: 'sender_notification_permission', key: 'room' },
        { kind: 'event_property_is', key: 'content.x', value: null },
        { kind: 'event_property_is', key: 'content.x', value: -3 },
        { kind: 'event_property_contains', key: 'content.tags', value: 'a' },
        { kind: 'event_property_contains', key: 'content.flags', value: false },
        { kind: 'contains_display_name' },
        { kind: 'org.example.future', anything: [1, { b: 2 }] },
      ];
      await alice.ok('PUT', `${RULES}/override/good`, { actions: ['notify'], conditions: good });
      assert.deepEqual((await alice.ok('GET', `${RULES}/override/good`)).conditions, good);
    });

    test('enabled and actions bodies of the wrong shape are 400; the rule is unchanged', async () => {
      const alice = await user('alice');
      await alice.ok('PUT', `${RULES}/content/tea`, { pattern: 'tea', actions: ['notify'] });
      const raw = (attribute: string, body: string) => alice.http.put(`${RULES}/content/tea/${attribute}`, undefined, { raw: body });
      const enabledCases: [string, number, string][] = [
        ['"false"', 400, 'M_BAD_JSON'],
        ['{"enabled": "false"}', 400, 'M_BAD_JSON'],
        ['{"enabled": 0}', 400, 'M_BAD_JSON'],
        ['{"enabled": null}', 400, 'M_BAD_JSON'],
        ['null', 400, 'M_BAD_JSON'],
        ['[false]', 400, 'M_BAD_JSON'],
        ['{}', 400, 'M_MISSING_PARAM'],
        ['{"actions": []}', 400, 'M_MISSING_PARAM'],
        ['', 400, 'M_MISSING_PARAM'],
        ['{"enabled": fal', 400, 'M_NOT_JSON'],
      ];
      for (const [body, status, errcode] of enabledCases) expectError(await raw('enabled', body), status, errcode);
      const actionsCases: [string, number, string][] = [
        ['["dont_notify"]', 400, 'M_BAD_JSON'],
        ['"notify"', 400, 'M_BAD_JSON'],
        ['{"actions": "notify"}', 400, 'M_BAD_JSON'],
        ['{"actions": {"0": "notify"}}', 400, 'M_BAD_JSON'],
        ['{"actions": ["notify", "ring"]}', 400, 'M_BAD_JSON'],
        ['{"actions": [{"value": true}]}', 400, 'M_BAD_JSON'],
        ['{"actions": null}', 400, 'M_BAD_JSON'],
        ['{}', 400, 'M_MISSING_PARAM'],
        ['{"enabled": false}', 400, 'M_MISSING_PARAM'],
        ['', 400, 'M_MISSING_PARAM'],
      ];
      for (const [body, status, errcode] of actionsCases) expectError(await raw('actions', body), status, errcode);
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/tea`), { rule_id: 'tea', default: false, enabled: true, pattern: 'tea', actions: ['notify'] });
      // The spec's bodies work; a bare boolean is refused.
      assert.equal((await raw('enabled', '{"enabled": false}')).status, 200);
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/tea/enabled`), { enabled: false });
      expectError(await raw('enabled', 'true'), 400, 'M_BAD_JSON');
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/tea/enabled`), { enabled: false });
      assert.equal((await raw('enabled', '{"enabled": true}')).status, 200);
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/tea/enabled`), { enabled: true });
      assert.equal((await raw('actions', '{"actions": ["dont_notify"]}')).status, 200);
      assert.deepEqual(await alice.ok('GET', `${RULES}/content/tea/actions`), { actions: ['dont_notify'] });
    });

    test('sync: m.push_rules in the initial account data, and again after each change', async () => {
      const alice = await user('alice');
      const initial = await alice.sync();
      const [rules] = pushRulesIn(initial);
      assert.deepEqual(rules?.content, await alice.ok('GET', '/pushrules/'), 'the defaults, though never changed');
      assert.deepEqual(await alice.ok('GET', `/user/${enc(alice.userId)}/account_data/m.push_rules`), rules.content);

      await alice.ok('PUT', `${RULES}/content/pizza`, { pattern: 'pizza', actions: ['notify', { set_tweak: 'highlight' }] });
      const s1 = await alice.sync({ since: initial.next_batch });
      const changed = pushRulesIn(s1);
      assert.equal(changed.length, 1);
      assert.deepEqual(changed[0].content, await alice.ok('GET', '/pushrules/'));
      assert.deepEqual(userRuleIds(changed[0].content.global.content), ['pizza']);
      assert.ok(changed[0].content.global.underride.some((r: any) => r.rule_id === '.m.rule.message'), 'merged with the defaults');
      const s2 = await alice.sync({ since: s1.next_batch });
      assert.deepEqual(pushRulesIn(s2), [], 'once');

      await alice.ok('PUT', `${RULES}/underride/.m.rule.message/enabled`, { enabled: false });
      const s3 = await alice.sync({ since: s2.next_batch });
      assert.equal(pushRulesIn(s3)[0]?.content.global.underride.find((r: any) => r.rule_id === '.m.rule.message').enabled, false);
      // A long-poll wakes for it.
      const waiting = alice.sync({ since: s3.next_batch, timeout: 10_000 });
      await new Promise((r) => setTimeout(r, 50));
      await alice.ok('DELETE', `${RULES}/content/pizza`);
      assert.deepEqual(userRuleIds(pushRulesIn(await waiting)[0]?.content.global.content ?? [{}]), []);
      // Still not writable as account data.
      expectError(await alice.call('PUT', `/user/${enc(alice.userId)}/account_data/m.push_rules`, { global: {} }), 405, 'M_BAD_JSON');
    });

    test("unread_notifications in /sync follow the user's rules as they were when each event came", async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      // Three members, so that plain messages notify through .m.rule.message.
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await carol.join(roomId);
      // A room of two: alice's messages there always notify bob, and mark how far the push-rule
      // pass has gone (it takes events in order).
      const side = await alice.createRoom({ preset: 'private_chat', invite: [bob.userId] });
      await bob.join(side);
      let marks = 0;
      const evaluated = async () => {
        const mark = `mark-${++marks}`;
        await alice.text(side, mark);
        await eventually(async () => (await bob.ok('GET', '/notifications')).notifications.some((n: any) => n.event.content.body === mark), `${mark} is evaluated`);
      };
      let since = (await bob.sync()).next_batch;
      const unread = async () => {
        const s = await bob.sync({ since });
        since = s.next_batch;
        return s.rooms.join[roomId]?.unread_notifications;
      };

      await alice.text(roomId, 'hello');
      assert.deepEqual(await unread(), { notification_count: 1, highlight_count: 0 });
      await alice.text(roomId, 'pizza time');
      assert.deepEqual(await unread(), { notification_count: 2, highlight_count: 0 }, 'no highlight without a rule');

      // A content rule: "pizza" highlights what comes after it; what came before stays as it was.
      await evaluated();
      await bob.ok('PUT', `${RULES}/content/pizza`, { pattern: 'pizza', actions: ['notify', { set_tweak: 'highlight' }] });
      await alice.text(roomId, 'PIZZA again');
      assert.deepEqual(await unread(), { notification_count: 3, highlight_count: 1 });

      // .m.rule.message disabled: only the content rule notifies.
      await evaluated();
      await bob.ok('PUT', `${RULES}/underride/.m.rule.message/enabled`, { enabled: false });
      await alice.text(roomId, 'just chatting');
      assert.deepEqual(await unread(), { notification_count: 3, highlight_count: 1 });

      // A dont_notify override for the room silences it.
      await bob.ok('PUT', `${RULES}/override/mute`, { actions: ['dont_notify'], conditions: [{ kind: 'event_match', key: 'room_id', pattern: roomId }] });
      await alice.text(roomId, 'pizza!');
      assert.deepEqual(await unread(), { notification_count: 3, highlight_count: 1 });

      // Undo both: every message counts again; carol's messages too, and bob's own never.
      await evaluated();
      await bob.ok('DELETE', `${RULES}/override/mute`);
      await bob.ok('PUT', `${RULES}/underride/.m.rule.message/enabled`, { enabled: true });
      await carol.text(roomId, 'me too');
      await bob.text(roomId, 'pizza for me');
      await alice.text(roomId, 'more pizza');
      assert.deepEqual(await unread(), { notification_count: 5, highlight_count: 2 });
      // Alice's counts never depended on bob's rules.
      const a = await alice.sync();
      assert.deepEqual(a.rooms.join[roomId].unread_notifications, { notification_count: 2, highlight_count: 0 });
      // A read receipt on the latest resets bob's counts.
      await evaluated();
      const last = (await bob.ok('GET', '/notifications')).notifications.find((n: any) => n.room_id === roomId);
      assert.equal(last.event.content.body, 'more pizza');
      await bob.ok('POST', `/rooms/${enc(roomId)}/receipt/m.read/${enc(last.event.event_id)}`, {});
      assert.deepEqual(await unread(), { notification_count: 0, highlight_count: 0 });
    });

    test('unread counts have no bound: 150 unread messages count 150', async () => {
      const alice = await user('alice');
      const bob = await user('bob');
      const carol = await user('carol');
      const roomId = await alice.createRoom({ preset: 'public_chat' });
      await bob.join(roomId);
      await carol.join(roomId);
      const first = await bob.sync();
      for (let i = 0; i < 150; i++) await alice.text(roomId, `message ${i}`);
      await eventually(async () => (await bob.ok('GET', '/notifications?limit=200')).notifications.filter((n: any) => n.room_id === roomId).length === 150, 'the 150 are evaluated');
      const s = await bob.sync({ since: first.next_batch });
      assert.deepEqual(s.rooms.join[roomId].unread_notifications, { notification_count: 150, highlight_count: 0 });
      const initial = await bob.sync();
      assert.deepEqual(initial.rooms.join[roomId].unread_notifications, { notification_count: 150, highlight_count: 0 });
    });
  });
}
