// Served events write their own JSON from a cached head (rooms/client-event.ts): the text must
// say what JSON.stringify of the object says, also after the object is changed.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toClientEvent, type ClientEvent } from '../../src/rooms/client-event.js';
import type { StoredEvent } from '../../src/rooms/stored-event.js';
import { getRoomVersion } from '../../src/protocol/room-versions.js';
import type { Pdu } from '../../src/protocol/events.js';
import { stringifyJson } from '../../src/protocol/json-text.js';

const version = getRoomVersion('10')!;

function stored(pdu: Partial<Pdu> & { type: string }, extra: Partial<StoredEvent> = {}): StoredEvent {
  const full = { room_id: '!room:hearth.test', sender: '@alice:hearth.test', origin_server_ts: 1_700_000_000_000, content: {}, depth: 3, prev_events: [], auth_events: [], hashes: { sha256: 'x' }, signatures: {}, ...pdu } as Pdu;
  return {
    nid: 7,
    eventId: `$${pdu.type}-${pdu.state_key ?? 'm'}`,
    roomNid: 1,
    roomId: '!room:hearth.test',
    version,
    pdu: full,
    type: full.type,
    stateKey: full.state_key,
    sender: full.sender,
    originServerTs: full.origin_server_ts,
    streamOrdering: 10,
    unsigned: undefined,
    redacts: undefined,
    redactedBy: undefined,
    status: 'timeline',
    txn: undefined,
    stateBeforeNid: undefined,
    stateAfterNid: undefined,
    size: 100,
    ...extra,
  };
}

const same = (ev: ClientEvent) => assert.deepEqual(JSON.parse(stringifyJson(ev)!), JSON.parse(JSON.stringify(ev)));
const options = { now: 1_700_000_005_000 };

describe('client events write their own JSON', () => {
  const message = stored({ type: 'm.room.message', content: { msgtype: 'm.text', body: 'héllo "quoted" \u2028', nested: [1, { a: null }] } });
  const state = stored({ type: 'm.room.topic', state_key: '', content: { topic: 't' } }, { unsigned: { prev_content: { topic: 'old' }, replaces_state: '$old' } });
  const redaction = stored({ type: 'm.room.redaction', content: { redacts: '$target' }, redacts: '$target' }, { redacts: '$target' });
  const sent = stored({ type: 'm.reaction', content: { 'm.relates_to': { rel_type: 'm.annotation', event_id: '$m', key: '👍' } } }, { txn: { deviceId: 'DEV', txnId: 'txn1' } });

  test('the same as JSON.stringify, with and without room_id, from the cached head on a second serving', () => {
    for (const e of [message, state, redaction, sent]) {
      for (const omitRoomId of [false, true]) {
        for (let round = 0; round < 2; round++) {
          same(toClientEvent(e, { ...options, omitRoomId, viewer: { userId: '@alice:hearth.test', deviceId: 'DEV' } }));
          same(toClientEvent(e, { now: options.now + 1000 * round, omitRoomId }));
        }
      }
    }
  });

  test('unsigned is written as it stands when served: age, transaction id, added aggregations', () => {
    const ev = toClientEvent(sent, { ...options, viewer: { userId: '@alice:hearth.test', deviceId: 'DEV' }, relations: { 'm.reference': { chunk: [{ event_id: '$r' }] } } });
    ev.unsigned['membership'] = 'join';
    const out = JSON.parse(stringifyJson(ev)!) as ClientEvent;
    assert.deepEqual(out.unsigned, { age: 5000, transaction_id: 'txn1', 'm.relations': { 'm.reference': { chunk: [{ event_id: '$r' }] } }, membership: 'join' });
  });

  test('a changed object is written as it is, not from the cache', () => {
    const changes: ((ev: ClientEvent) => void)[] = [
      (ev) => (ev.content = { body: 'replaced' }),
      (ev) => (ev.room_id = '!other:hearth.test'),
      (ev) => delete ev.room_id,
      (ev) => (ev.state_key = 'now a state event'),
      (ev) => ((ev as unknown as Record<string, unknown>)['extra'] = [1]),
      (ev) => (ev.sender = '@mallory:hearth.test'),
      (ev) => (ev.type = 'm.sticker'),
    ];
    for (const change of changes) {
      // Cached first, then changed.
      same(toClientEvent(message, options));
      const ev = toClientEvent(message, options);
      change(ev);
      same(ev);
      const copy = { ...toClientEvent(message, options), event_id: '$copy' };
      same(copy);
    }
  });

  test('redacted events are written in their redacted form', () => {
    const redacted = stored({ type: 'm.room.message', content: { body: 'secret' } }, { redactedBy: '$redaction' });
    const ev = toClientEvent(redacted, { ...options, redactedBecause: toClientEvent(redaction, options) });
    assert.deepEqual(JSON.parse(stringifyJson({ chunk: [ev] })!).chunk[0].content, {});
    same(ev);
  });
});
