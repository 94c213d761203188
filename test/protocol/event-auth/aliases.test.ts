// m.room.aliases: its own rule 4 in v1–v5 (only the sender's server matters); from v6 an ordinary
// state event.

import { describe, test } from 'node:test';
import { checkStateIndependentAuth } from '../../../src/protocol/event-auth.js';
import { EventFactory } from '../../support/room-events.js';
import { ALICE, assertAuth, CAROL, DAVE, runAuthCases, VERSIONS, type AuthCase } from './room.js';

const aliases = (sender: string, stateKeyValue: string | undefined) => ({
  type: 'm.room.aliases',
  sender,
  ...(stateKeyValue === undefined ? {} : { state_key: stateKeyValue }),
  content: { aliases: ['#room:' + (stateKeyValue ?? 'x')] },
});

const cases: AuthCase[] = [
  {
    name: '4.3 a server’s own entry, by a user who is not in the room: v1–v5 only',
    event: aliases(DAVE, 'remote.test'),
    expect: (v) => (v.specialCaseAliases ? true : /not joined/),
  },
  {
    name: '4.3 a joined member without the state level: v1–v5 only',
    room: { members: { [CAROL]: 'join' } },
    event: aliases(CAROL, 'example.org'),
    expect: (v) => (v.specialCaseAliases ? true : /m\.room\.aliases needs level 50/),
  },
  {
    name: '4.2 another server’s entry is refused in v1–v5; from v6 the normal rules allow the creator',
    event: aliases(ALICE, 'remote.test'),
    expect: (v) => (v.specialCaseAliases ? /not the sender's server/ : true),
  },
  {
    name: '4.1 no state_key is refused in v1–v5; from v6 it is a message the creator may send',
    event: aliases(ALICE, undefined),
    expect: (v) => (v.specialCaseAliases ? /no state_key/ : true),
  },
  {
    name: '3 m.federate false comes first, in every version',
    room: { createContent: { creator: ALICE, 'm.federate': false } },
    event: aliases(DAVE, 'remote.test'),
    expect: /does not federate/,
  },
  {
    name: '8 from v6 an @ state_key must be the sender; v1–v5 compare it with the server',
    event: aliases(ALICE, CAROL),
    expect: (v) => (v.specialCaseAliases ? /not the sender's server/ : /starts with @/),
  },
];

runAuthCases('m.room.aliases', cases);

describe('m.room.aliases without state', () => {
  for (const version of VERSIONS) {
    test(`room version ${version.id}`, () => {
      const f = new EventFactory();
      const foreign = f.make(aliases(DAVE, 'example.org'));
      assertAuth(
        checkStateIndependentAuth(foreign, version),
        version.specialCaseAliases ? /not the sender's server/ : true,
      );
      assertAuth(checkStateIndependentAuth(f.make(aliases(DAVE, 'remote.test')), version), true);
    });
  }
});
