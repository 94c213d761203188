import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthError } from '../../src/protocol/errors.js';
import { defaultPushRules, type PushRuleSet } from '../../src/protocol/push-rules/index.js';
import { InProcessBus } from '../../src/streams/in-process-bus.js';
import { AccountDataService } from '../../src/users/account-data.js';
import { PUSH_RULES_TYPE, PushRuleService } from '../../src/users/push-rules.js';
import { storageBackends } from '../support/databases.js';
import { assertDoesNotWake, assertWakes, SERVER, useDatabase } from './user-data-support.js';

const rejects = (errcode: string, status: number) => (e: unknown) =>
  e instanceof HearthError && e.errcode === errcode && e.status === status;

const ids = (rules: PushRuleSet, kind: keyof PushRuleSet) => rules[kind].map((r) => r.rule_id);
const userIds = (rules: PushRuleSet, kind: keyof PushRuleSet) => rules[kind].filter((r) => !r.default).map((r) => r.rule_id);

for (const backend of await storageBackends()) {
  describe(`push rules on ${backend.name}`, { skip: backend.skip }, () => {
    const h = useDatabase(backend.create);
    const notifier = new InProcessBus();
    let n = 0;
    /** A fresh user and services per test, so that tests do not share rules. */
    const setup = () => {
      const accountData = new AccountDataService({ db: h.db, notifier });
      return { accountData, rules: new PushRuleService({ accountData }), user: `@u${++n}:${SERVER}` };
    };
    const cond = (pattern: string) => [{ kind: 'event_match', key: 'content.body', pattern }];

    test('a new user has the defaults; the rule set is cached until it changes', async () => {
      const { rules, user } = setup();
      const first = await rules.rulesOf(user);
      assert.deepEqual(first, defaultPushRules(user));
      assert.equal(await rules.rulesOf(user), first, 'the same object while nothing changed');
      assert.deepEqual(await rules.all(user), { global: first });
      assert.deepEqual(await rules.ruleset(user, 'global'), first);
      await rules.putRule(user, 'global', 'room', `!r:${SERVER}`, { actions: [] });
      const second = await rules.rulesOf(user);
      assert.notEqual(second, first);
      assert.deepEqual(userIds(second, 'room'), [`!r:${SERVER}`]);
    });

    test('PUT adds user rules above the defaults; before/after place them; an update keeps enabled', async () => {
      const { rules, user } = setup();
      await rules.putRule(user, 'global', 'override', 'a', { actions: ['notify'], conditions: cond('a') });
      // Without before/after a new rule is the most important user rule; the master rule stays first.
      await rules.putRule(user, 'global', 'override', 'b', { actions: ['notify'], conditions: cond('b') });
      let all = await rules.rulesOf(user);
      assert.deepEqual(ids(all, 'override').slice(0, 3), ['.m.rule.master', 'b', 'a']);
      assert.equal(ids(all, 'override').length, defaultPushRules(user).override.length + 2);
      await rules.putRule(user, 'global', 'override', 'c', { actions: [], conditions: cond('c') }, { after: 'a' });
      await rules.putRule(user, 'global', 'override', 'd', { actions: [], conditions: cond('d') }, { before: 'a' });
      // Both given: `before` decides.
      await rules.putRule(user, 'global', 'override', 'e', { actions: [], conditions: cond('e') }, { before: 'b', after: 'c' });
      all = await rules.rulesOf(user);
      assert.deepEqual(userIds(all, 'override'), ['e', 'b', 'd', 'a', 'c']);

      // An update replaces conditions and actions, keeps enabled, and (as in Synapse) moves the rule first.
      await rules.setEnabled(user, 'global', 'override', 'a', { enabled: false });
      await rules.putRule(user, 'global', 'override', 'a', { actions: ['notify', { set_tweak: 'highlight' }], conditions: cond('A2') });
      const a = await rules.rule(user, 'global', 'override', 'a');
      assert.deepEqual(a, { rule_id: 'a', default: false, enabled: false, actions: ['notify', { set_tweak: 'highlight' }], conditions: cond('A2') });
      assert.deepEqual(userIds(await rules.rulesOf(user), 'override'), ['a', 'e', 'b', 'd', 'c']);
      // Moving an existing rule with after.
      await rules.putRule(user, 'global', 'override', 'a', { actions: [], conditions: [] }, { after: 'c' });
      assert.deepEqual(userIds(await rules.rulesOf(user), 'override'), ['e', 'b', 'd', 'c', 'a']);
      // A missing `conditions` is no condition: the rule matches every event.
      await rules.putRule(user, 'global', 'underride', 'all', { actions: ['notify'] });
      assert.deepEqual((await rules.rule(user, 'global', 'underride', 'all')).conditions, []);
    });

    test('content, room and sender rules keep what their kind uses', async () => {
      const { rules, user } = setup();
      await rules.putRule(user, 'global', 'content', 'cake', { pattern: 'cake*lie', actions: ['notify'], conditions: cond('ignored') });
      assert.deepEqual(await rules.rule(user, 'global', 'content', 'cake'), { rule_id: 'cake', default: false, enabled: true, actions: ['notify'], pattern: 'cake*lie' });
      const room = `!dj234r78wl45Gh4D:${SERVER}`;
      await rules.putRule(user, 'global', 'room', room, { actions: [], pattern: 'ignored' });
      assert.deepEqual(await rules.rule(user, 'global', 'room', room), { rule_id: room, default: false, enabled: true, actions: [] });
      await rules.putRule(user, 'global', 'sender', `@spam:${SERVER}`, { actions: ['dont_notify'] });
      // The legacy dont_notify is served as stored (evaluation ignores it).
      assert.deepEqual((await rules.actions(user, 'global', 'sender', `@spam:${SERVER}`)).actions, ['dont_notify']);
    });

    test('delete removes user rules; default and unknown rules are 404', async () => {
      const { rules, user } = setup();
      await rules.putRule(user, 'global', 'content', 'x', { pattern: 'x', actions: [] });
      await rules.deleteRule(user, 'global', 'content', 'x');
      assert.deepEqual(userIds(await rules.rulesOf(user), 'content'), []);
      await assert.rejects(rules.deleteRule(user, 'global', 'content', 'x'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(rules.rule(user, 'global', 'content', 'x'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(rules.deleteRule(user, 'global', 'underride', '.m.rule.message'), rejects('M_NOT_FOUND', 404));
      assert.ok(ids(await rules.rulesOf(user), 'underride').includes('.m.rule.message'));
    });

    test('default rules can be disabled and given other actions; the change is stored compactly', async () => {
      const { accountData, rules, user } = setup();
      await rules.setEnabled(user, 'global', 'underride', '.m.rule.message', { enabled: false });
      await rules.setEnabled(user, 'global', 'override', '.m.rule.master', true);
      await rules.setActions(user, 'global', 'override', '.m.rule.is_room_mention', { actions: ['notify'] });
      const all = await rules.rulesOf(user);
      assert.equal(all.underride.find((r) => r.rule_id === '.m.rule.message')?.enabled, false);
      assert.deepEqual(await rules.enabled(user, 'global', 'override', '.m.rule.master'), { enabled: true });
      assert.deepEqual(await rules.actions(user, 'global', 'override', '.m.rule.is_room_mention'), { actions: ['notify'] });
      // Still default rules, in their place.
      assert.deepEqual(ids(all, 'underride'), ids(defaultPushRules(user), 'underride'));
      assert.ok(all.underride.every((r) => r.default));
      assert.deepEqual(await accountData.get(user, '', PUSH_RULES_TYPE), {
        rules: {},
        default_changes: {
          override: { '.m.rule.master': { enabled: true }, '.m.rule.is_room_mention': { actions: ['notify'] } },
          underride: { '.m.rule.message': { enabled: false } },
        },
      });
      // Restoring a default's own state drops the change.
      await rules.setEnabled(user, 'global', 'underride', '.m.rule.message', { enabled: true });
      await rules.setEnabled(user, 'global', 'override', '.m.rule.master', false);
      assert.deepEqual(await accountData.get(user, '', PUSH_RULES_TYPE), {
        rules: {},
        default_changes: { override: { '.m.rule.is_room_mention': { actions: ['notify'] } } },
      });
      // Unknown rules: 404, for defaults of another kind too.
      await assert.rejects(rules.setEnabled(user, 'global', 'override', '.m.rule.message', { enabled: false }), rejects('M_NOT_FOUND', 404));
      await assert.rejects(rules.setEnabled(user, 'global', 'override', 'nope', { enabled: false }), rejects('M_NOT_FOUND', 404));
      await assert.rejects(rules.setActions(user, 'global', 'content', '.m.rule.nope', { actions: [] }), rejects('M_NOT_FOUND', 404));
      await assert.rejects(rules.enabled(user, 'global', 'room', '!none:x'), rejects('M_NOT_FOUND', 404));
      await assert.rejects(rules.actions(user, 'global', 'room', '!none:x'), rejects('M_NOT_FOUND', 404));
    });

    test('bad requests are 400 with a clear errcode, and write nothing', async () => {
      const { rules, user } = setup();
      await rules.putRule(user, 'global', 'override', 'anchor', { actions: [], conditions: [] });
      const before = notifier.current().account_data;
      const put = (kind: string, ruleId: string, body: object, placement = {}) => rules.putRule(user, 'global', kind, ruleId, body as never, placement);
      await assert.rejects(rules.putRule(user, 'device', 'override', 'x', { actions: [] }), rejects('M_UNRECOGNIZED', 400));
      await assert.rejects(rules.rule(user, 'device', 'override', 'x'), rejects('M_UNRECOGNIZED', 400));
      await assert.rejects(rules.ruleset(user, 'device'), rejects('M_UNRECOGNIZED', 400));
      await assert.rejects(put('overrides', 'x', { actions: [] }), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(rules.rule(user, 'global', 'nope', 'x'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(rules.deleteRule(user, 'global', 'nope', 'x'), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(put('override', '.m.rule.master', { actions: [], conditions: [] }), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(put('override', '.mine', { actions: [], conditions: [] }), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(put('override', 'a/b', { actions: [], conditions: [] }), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(put('override', 'a\\b', { actions: [], conditions: [] }), rejects('M_INVALID_PARAM', 400));
      await assert.rejects(put('override', 'x', { conditions: [] }), rejects('M_MISSING_PARAM', 400));
      await assert.rejects(put('override', 'x', { actions: 'notify', conditions: [] }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('override', 'x', { actions: ['shout'], conditions: [] }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('override', 'x', { actions: [{ value: 1 }], conditions: [] }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('override', 'x', { actions: [], conditions: {} }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('override', 'x', { actions: [], conditions: [{ key: 'type' }] }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('override', 'x', { actions: [], conditions: ['x'] }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('content', 'x', { actions: [] }), rejects('M_MISSING_PARAM', 400));
      await assert.rejects(put('content', 'x', { actions: [], pattern: 5 }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('override', 'x', { actions: [], conditions: [] }, { before: 'missing' }), rejects('M_UNKNOWN', 400));
      await assert.rejects(put('override', 'x', { actions: [], conditions: [] }, { after: '.m.rule.master' }), rejects('M_UNKNOWN', 400));
      // A rule is placed among rules of its own kind only.
      await assert.rejects(put('underride', 'x', { actions: [], conditions: [] }, { after: 'anchor' }), rejects('M_UNKNOWN', 400));
      await assert.rejects(rules.setEnabled(user, 'global', 'override', 'anchor', {}), rejects('M_MISSING_PARAM', 400));
      await assert.rejects(rules.setEnabled(user, 'global', 'override', 'anchor', { enabled: 'yes' }), rejects('M_BAD_JSON', 400));
      await assert.rejects(rules.setActions(user, 'global', 'override', 'anchor', {}), rejects('M_MISSING_PARAM', 400));
      await assert.rejects(rules.setActions(user, 'global', 'override', '.m.rule.master', { actions: [7] }), rejects('M_BAD_JSON', 400));
      await assert.rejects(put('content', 'huge', { actions: [], pattern: 'x'.repeat(1024 * 1024) }), rejects('M_TOO_LARGE', 413));
      assert.equal(notifier.current().account_data, before, 'nothing was written');
      assert.deepEqual(userIds(await rules.rulesOf(user), 'override'), ['anchor']);
      assert.deepEqual(userIds(await rules.rulesOf(user), 'content'), []);
    });

    test('a change is m.push_rules account data: it wakes syncs and reads back merged', async () => {
      const { accountData, rules, user } = setup();
      const other = `@other${n}:${SERVER}`;
      // Before any change, only an initial sync carries the defaults.
      assert.deepEqual((await accountData.accountDataSince(user, 0)).global, []);
      assert.deepEqual((await accountData.accountDataSince(user, 0, { initial: true })).global, [
        { type: PUSH_RULES_TYPE, content: { global: defaultPushRules(user) } },
      ]);
      assert.deepEqual(await accountData.getGlobal(user, user, PUSH_RULES_TYPE), { global: defaultPushRules(user) });
      const mark = notifier.current().account_data;
      await assertWakes(notifier, { userId: user }, () => rules.putRule(user, 'global', 'content', 'pizza', { pattern: 'pizza', actions: ['notify'] }));
      await assertDoesNotWake(notifier, { userId: other }, () => rules.setEnabled(user, 'global', 'content', 'pizza', { enabled: true }));
      const changes = await accountData.accountDataSince(user, mark);
      assert.equal(changes.global.length, 1);
      const content = changes.global[0]!.content as any;
      assert.equal(changes.global[0]!.type, PUSH_RULES_TYPE);
      assert.deepEqual(content, { global: await rules.rulesOf(user) });
      assert.deepEqual(content.global.content.map((r: any) => r.rule_id), ['pizza']);
      assert.deepEqual(await accountData.getGlobal(user, user, PUSH_RULES_TYPE), content);
      // The initial form carries it once.
      assert.equal((await accountData.accountDataSince(user, 0, { initial: true })).global.filter((e) => e.type === PUSH_RULES_TYPE).length, 1);
      // Clients still cannot write it directly.
      await assert.rejects(accountData.setGlobal(user, user, PUSH_RULES_TYPE, {}), rejects('M_BAD_JSON', 405));
    });

    test('concurrent changes are not lost', async () => {
      const { rules, user } = setup();
      await Promise.all(Array.from({ length: 12 }, (_, i) => rules.putRule(user, 'global', 'content', `w${i}`, { pattern: `w${i}`, actions: ['notify'] })));
      assert.equal(userIds(await rules.rulesOf(user), 'content').length, 12);
      // Another service over the same storage (another process) reads what was written.
      const { rules: fresh } = setup();
      assert.deepEqual(await fresh.rulesOf(user), await rules.rulesOf(user));
    });

    test('malformed stored content is read defensively', async () => {
      const { accountData, rules, user } = setup();
      await accountData.write(user, '', PUSH_RULES_TYPE, {
        rules: {
          override: [1, { rule_id: 5, actions: [] }, { rule_id: 'bad', actions: ['notify'], conditions: 'x' }, { rule_id: 'ok', actions: ['notify'] }],
          content: 'x',
        },
        default_changes: { underride: { '.m.rule.message': 'x', '.m.rule.call': { enabled: 'no', actions: [] } }, room: [] },
      });
      const all = await rules.rulesOf(user);
      // Unreadable conditions drop the rule rather than make it match everything.
      assert.deepEqual(userIds(all, 'override'), ['ok']);
      assert.deepEqual(all.override.find((r) => r.rule_id === 'ok')?.conditions, []);
      assert.deepEqual(all.underride.find((r) => r.rule_id === '.m.rule.call')?.actions, []);
      assert.equal(all.underride.find((r) => r.rule_id === '.m.rule.call')?.enabled, true);
      // It can still be edited.
      await rules.putRule(user, 'global', 'override', 'next', { actions: [] });
      assert.deepEqual(userIds(await rules.rulesOf(user), 'override'), ['next', 'ok']);
    });
  });
}
