import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { canSeeEvent, historyVisibilityOf, type VisibilityHistory } from '../../src/rooms/visibility.js';

const U = '@u:hs';
const msg = (position: number) => ({ position, type: 'm.room.message' });

/** A room whose visibility is `vis` from position 1, and the user's memberships at the given positions. */
function history(vis: string, memberships: [number, string][], visChanges: [number, string][] = []): VisibilityHistory {
  return {
    visibility: [[1, vis] as [number, string], ...visChanges].map(([position, value]) => ({ position, value })),
    membership: memberships.map(([position, value]) => ({ position, value })),
  };
}

describe('history visibility rules', () => {
  test('unknown or absent values read as shared', () => {
    assert.equal(historyVisibilityOf(undefined), 'shared');
    assert.equal(historyVisibilityOf('bogus'), 'shared');
    assert.equal(historyVisibilityOf('joined'), 'joined');
  });

  test('world_readable: anyone, member or not', () => {
    assert.ok(canSeeEvent(history('world_readable', []), msg(5), U));
    assert.ok(canSeeEvent(history('world_readable', [[3, 'leave']]), msg(5), U));
  });

  test('joined: only while joined', () => {
    const h = history('joined', [[10, 'join'], [20, 'leave']]);
    assert.equal(canSeeEvent(h, msg(5), U), false, 'before the join');
    assert.equal(canSeeEvent(h, msg(15), U), true, 'while joined');
    assert.equal(canSeeEvent(h, msg(25), U), false, 'after leaving');
  });

  test('shared: everything up to the time the user was joined, nothing after they left for good', () => {
    const h = history('shared', [[10, 'join'], [20, 'leave']]);
    assert.equal(canSeeEvent(h, msg(5), U), true, 'before the join: they joined later');
    assert.equal(canSeeEvent(h, msg(15), U), true);
    assert.equal(canSeeEvent(h, msg(25), U), false, 'after leaving, never joined again');
    assert.equal(canSeeEvent(history('shared', [[10, 'invite']]), msg(5), U), false, 'invited, never joined');
    assert.equal(canSeeEvent(history('shared', []), msg(5), U), false, 'never a member');
  });

  test('invited: from the invite on', () => {
    const h = history('invited', [[10, 'invite'], [20, 'join']]);
    assert.equal(canSeeEvent(h, msg(5), U), false);
    assert.equal(canSeeEvent(h, msg(15), U), true, 'while invited');
    assert.equal(canSeeEvent(h, msg(25), U), true);
    assert.equal(canSeeEvent(history('joined', [[10, 'invite']]), msg(15), U), false, 'joined visibility: an invite is not enough');
  });

  test('a history_visibility event is visible when the setting before or after allows it', () => {
    // joined → world_readable at 10: a non-member sees the change.
    const opened = history('joined', [], [[10, 'world_readable']]);
    assert.ok(canSeeEvent(opened, { position: 10, type: 'm.room.history_visibility', stateKey: '' }, U));
    assert.equal(canSeeEvent(opened, msg(9), U), false);
    // world_readable → joined at 10: the change is visible too, what follows is not.
    const closed = history('world_readable', [], [[10, 'joined']]);
    assert.ok(canSeeEvent(closed, { position: 10, type: 'm.room.history_visibility', stateKey: '' }, U));
    assert.equal(canSeeEvent(closed, msg(11), U), false);
    // Another user's history_visibility-typed message is nothing special.
    assert.equal(canSeeEvent(opened, { position: 10, type: 'm.room.history_visibility' }, U), false);
  });

  test("the user's own member events are visible when the membership before or after allows it", () => {
    const h = history('joined', [[10, 'join'], [20, 'leave']]);
    assert.ok(canSeeEvent(h, { position: 10, type: 'm.room.member', stateKey: U }, U), 'their join');
    assert.ok(canSeeEvent(h, { position: 20, type: 'm.room.member', stateKey: U }, U), 'their leave');
    assert.equal(canSeeEvent(h, { position: 21, type: 'm.room.member', stateKey: '@other:hs' }, U), false, "someone else's member event after the leave");
    assert.ok(canSeeEvent(h, { position: 15, type: 'm.room.member', stateKey: '@other:hs' }, U), "someone else's member event while joined");
    // Only their own: the same change to another user's membership is judged by the state at it.
    const invited = history('joined', [[10, 'invite']]);
    assert.ok(canSeeEvent(history('joined', [[10, 'join']]), { position: 10, type: 'm.room.member', stateKey: U }, U));
    assert.equal(canSeeEvent(invited, { position: 10, type: 'm.room.member', stateKey: U }, U), false, 'an invite under joined visibility');
  });
});
