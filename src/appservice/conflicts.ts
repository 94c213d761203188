// Rules between registrations: what one service claims must not be another's. Whether two regexes
// can match a common ID is undecidable in general, so exclusive namespaces conflict when their
// regexes are the same text, or when one claims another service's own user.

import type { ConfigIssue } from '../config/index.js';
import { type AppServiceRegistration, NAMESPACE_KINDS } from './registration.js';

/** A registration and where it came from (its file), for messages that name both sides. */
export interface SourcedRegistration {
  readonly source: string;
  readonly registration: AppServiceRegistration;
}

/** Every conflict between the registrations, each at `<source>: <field>` of the later one. */
export function registrationConflicts(entries: readonly SourcedRegistration[], serverName: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const report = (entry: SourcedRegistration, field: string, message: string): void => {
    issues.push({ path: `${entry.source}: ${field}`, message });
  };

  const ids = new Map<string, SourcedRegistration>();
  const senders = new Map<string, SourcedRegistration>();
  const tokens = new Map<string, { entry: SourcedRegistration; field: string }>();
  const exclusive = new Map<string, { entry: SourcedRegistration; field: string }>();
  for (const entry of entries) {
    const r = entry.registration;
    const sameId = ids.get(r.id);
    if (sameId === undefined) ids.set(r.id, entry);
    else report(entry, 'id', `"${r.id}" is also the id of ${sameId.source}`);

    const sameSender = senders.get(r.sender_localpart);
    if (sameSender === undefined) senders.set(r.sender_localpart, entry);
    else report(entry, 'sender_localpart', `"${r.sender_localpart}" is also the sender of ${sameSender.source}`);

    // Tokens are secrets: messages say whose they collide with, never what they are.
    for (const field of ['as_token', 'hs_token'] as const) {
      const token = r[field];
      const seen = tokens.get(token);
      if (seen === undefined) tokens.set(token, { entry, field });
      else if (seen.entry !== entry) report(entry, field, `is the same as the ${seen.field} of ${seen.entry.source}`);
    }

    for (const kind of NAMESPACE_KINDS) {
      r.namespaces[kind].forEach((ns, i) => {
        if (!ns.exclusive) return;
        const key = `${kind}\n${ns.regex}`;
        const field = `namespaces.${kind}[${i}].regex`;
        const seen = exclusive.get(key);
        if (seen === undefined) exclusive.set(key, { entry, field });
        else if (seen.entry !== entry) {
          const what = `what ${seen.entry.source} claims exclusively (${seen.field}, the same regex)`;
          report(entry, field, `claims exclusively ${what}`);
        }
      });
    }
  }

  // A service's own user is its alone: no other service may claim it exclusively.
  for (const owner of entries) {
    const sender = `@${owner.registration.sender_localpart}:${serverName}`;
    for (const other of entries) {
      if (other === owner) continue;
      other.registration.namespaces.users.forEach((ns, i) => {
        if (ns.exclusive && ns.pattern.test(sender)) {
          report(other, `namespaces.users[${i}].regex`, `claims exclusively ${sender}, the sender of ${owner.source}`);
        }
      });
    }
  }
  return issues;
}
