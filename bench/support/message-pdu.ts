// The PDU the protocol and inbound benchmarks measure with: a typical m.room.message.

import type { PduDraft } from '../../src/protocol/hashes.js';

/** A typical m.room.message PDU of about 1 KB once signed. */
export function messageDraft(i: number): PduDraft {
  return {
    type: 'm.room.message',
    room_id: '!OGEhHVWSdvArJzumhm:matrix.example.org',
    sender: '@alice.wonderland:matrix.example.org',
    origin_server_ts: 1_712_345_678_901 + i,
    depth: 4321 + i,
    auth_events: [
      '$Q7fWbP2x0ZgvsD6e0A5bPv8HkRuZ3yJqYgTz7u1Rr4o',
      '$aX1Uo4qAqzWnDvn-Rb7sZBwWcW_3ScK2fnYgP4Fq1lQ',
      '$Yc7d-_Uw4Lh9vG0c2YfDOpM3eG0xkX6pVZbBf1JtOeE',
    ],
    prev_events: ['$9kbE5nN7gPqL0n2FvR1pH3kz6QyT8cWdXaU4mJsYtIo', '$Lr2tA0vkq9Hj-8PzXcY1gS7wNuFbE3mQdK6oTiZ4yVU'],
    content: {
      msgtype: 'm.text',
      body:
        `Message ${i}: ` +
        'The quick brown fox jumps over the lazy dog while the federation keeps every server in ' +
        'step; signatures and hashes make sure nobody changes a word on the way. Ünïcödé and ' +
        'emoji 🎉 keep the encoder honest. This line pads the body to a few hundred bytes.',
      format: 'org.matrix.custom.html',
      formatted_body: `<p>Message ${i}: the <b>quick</b> brown fox</p>`,
      'm.mentions': { user_ids: ['@bob:other.example.net'] },
    },
    unsigned: { age_ts: 1_712_345_678_901, transaction_id: `m${i}.1` },
  };
}
