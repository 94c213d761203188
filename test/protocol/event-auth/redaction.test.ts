// Redactions: rule 11 of v1–v2 (redact level or the same server in event ids); from v3 the auth
// rules treat them as any event and `redactionApplies` decides their effect.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { redactionApplies } from '../../../src/protocol/event-auth.js';
import { EventFactory } from '../../support/room-events.js';
import { ALICE, BOB, CAROL, DAVE, Room, runAuthCases, VERSIONS, type AuthCase } from './room.js';

const redaction = (sender: string, id: string, redacts: string | undefined) => ({
  id,
  type: 'm.room.redaction',
  sender,
  content: {},
  ...(redacts === undefined ? {} : { redacts }),
});

const v1v2 = (v: { eventIdFormat: string }) => v.eventIdFormat === 'v1';

const cases: AuthCase[] = [
  // v1–v2 11.1.
  {
    name: '11.1 the redact level may redact another server’s event',
    room: { members: { [BOB]: 'join' } },
    event: redaction(BOB, '$r1:example.org', '$x1:remote.test'),
    expect: true,
  },
  // 11.2.
  {
    name: '11.2 without the redact level, an event of the redaction’s server may be redacted',
    room: { members: { [CAROL]: 'join' } },
    event: redaction(CAROL, '$r1:example.org', '$x1:example.org'),
    expect: true,
  },
  // 11.3 (v1–v2); allowed from v3 where the redact level is not an auth rule.
  {
    name: '11.3 without the redact level, another server’s event: refused in v1–v2 only',
    room: { members: { [CAROL]: 'join' } },
    event: redaction(CAROL, '$r1:example.org', '$x1:remote.test'),
    expect: (v) => (v1v2(v) ? /redaction: sender lacks the redact level/ : true),
  },
  {
    name: '11.3 a raised redact level is not met: refused in v1–v2 only',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, redact: 60 }, members: { [BOB]: 'join' } },
    event: redaction(BOB, '$r1:example.org', '$x1:remote.test'),
    expect: (v) => (v1v2(v) ? /redact level/ : true),
  },
  {
    name: '11.3 a redaction without redacts: refused in v1–v2 only',
    room: { members: { [CAROL]: 'join' } },
    event: redaction(CAROL, '$r1:example.org', undefined),
    expect: (v) => (v1v2(v) ? /redact level/ : true),
  },
  // 7: events / events_default govern m.room.redaction in every version.
  {
    name: '7 events["m.room.redaction"] is the level to send one',
    room: { powerLevels: { users: { [ALICE]: 100, [BOB]: 50 }, events: { 'm.room.redaction': 60 } }, members: { [BOB]: 'join' } },
    event: redaction(BOB, '$r1:example.org', '$x1:example.org'),
    expect: /m\.room\.redaction needs level 60/,
  },
  {
    name: '5 the redacting sender must be joined',
    event: redaction(CAROL, '$r1:example.org', '$x1:example.org'),
    expect: /not joined/,
  },
];

runAuthCases('redactions', cases);

describe('redactionApplies (handling redactions, v3+)', () => {
  for (const version of VERSIONS) {
    test(`room version ${version.id}`, () => {
      const room = new Room(version, { joinRule: 'public', members: { [BOB]: 'join', [CAROL]: 'join', [DAVE]: 'join' } });
      const f = new EventFactory();
      const byCarol = f.make({ id: '$c:example.org', type: 'm.room.message', sender: CAROL });
      const byDave = f.make({ id: '$d:remote.test', type: 'm.room.message', sender: DAVE });
      const redact = (sender: string, target: string) =>
        f.make({ id: `$red-${sender}-${target}`, type: 'm.room.redaction', sender, redacts: target });
      const applies = (sender: string, target: typeof byCarol) =>
        redactionApplies(redact(sender, target.event_id), target, room.state, version);

      // Own event, or an event of one's own server: always.
      assert.equal(applies(CAROL, byCarol), true);
      assert.equal(applies(BOB, byCarol), true);
      // The redact level reaches other servers' events.
      assert.equal(applies(BOB, byDave), true);
      // Below the redact level, another server's event: only in v1–v2, where rule 11 already decided.
      assert.equal(applies(CAROL, byDave), v1v2(version));
      assert.equal(applies(DAVE, byCarol), v1v2(version));
      // Never across rooms, never for another event than `redacts`.
      const elsewhere = new EventFactory('!other:example.org').make({ id: '$o:example.org', type: 'm.room.message', sender: CAROL });
      assert.equal(applies(BOB, elsewhere), false);
      assert.equal(redactionApplies(redact(BOB, '$unrelated'), byCarol, room.state, version), false);
      const notRedaction = f.make({ type: 'm.room.message', sender: BOB, redacts: byCarol.event_id });
      assert.equal(redactionApplies(notRedaction, byCarol, room.state, version), false);
    });
  }
});
