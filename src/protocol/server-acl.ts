// Server ACLs (client-server API, "Server Access Control Lists (ACLs) for rooms"; the
// m.room.server_acl event): which servers may take part in a room at the federation level. Pure:
// parse an ACL's content once, then match server names against it.

import { isIPv4, isIPv6 } from 'node:net';

export interface ServerAcl {
  readonly allowIpLiterals: boolean;
  readonly allow: readonly RegExp[];
  readonly deny: readonly RegExp[];
}

/**
 * A glob (appendices, "Glob-style matching": `*` any run of characters, `?` exactly one) as an
 * anchored, case-insensitive expression: ACL globs are case-insensitive.
 */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (const ch of glob) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 'is');
}

/**
 * An ACL from an m.room.server_acl event's content. Malformed parts are read as the reference
 * server reads them: a non-boolean `allow_ip_literals` is true, a list that is not an array is
 * empty, and entries that are not strings are ignored.
 */
export function parseServerAcl(content: unknown): ServerAcl {
  const c = typeof content === 'object' && content !== null && !Array.isArray(content) ? (content as Record<string, unknown>) : {};
  const globs = (v: unknown): RegExp[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string').map(globToRegExp) : []);
  return {
    allowIpLiterals: typeof c['allow_ip_literals'] === 'boolean' ? c['allow_ip_literals'] : true,
    allow: globs(c['allow']),
    deny: globs(c['deny']),
  };
}

/** A server name without its port: `[::1]:8448` → `[::1]`, `example.org:8448` → `example.org`. */
export function hostOfServerName(serverName: string): string {
  if (serverName.startsWith('[')) {
    const close = serverName.indexOf(']');
    return close === -1 ? serverName : serverName.slice(0, close + 1);
  }
  const colon = serverName.indexOf(':');
  return colon === -1 ? serverName : serverName.slice(0, colon);
}

/**
 * Whether a host (no port) is an IP literal: IPv4, or anything bracketed (server names write IPv6
 * literals in brackets; a malformed one must not slip past a ban on literals), or a bare IPv6.
 */
export function isIpLiteral(host: string): boolean {
  return host.startsWith('[') || isIPv4(host) || isIPv6(host);
}

/**
 * Whether `serverName` may take part in a room under `acl` (undefined: the room has no ACL). The
 * port is never considered. The event's rules, in order:
 */
export function serverAllowedByAcl(acl: ServerAcl | undefined, serverName: string): boolean {
  // 1. No m.room.server_acl event in the room state: allow.
  if (acl === undefined) return true;
  const host = hostOfServerName(serverName);
  // 2. An IP literal when allow_ip_literals is false: deny.
  if (!acl.allowIpLiterals && isIpLiteral(host)) return false;
  // 3. Matches an entry of `deny`: deny.
  if (acl.deny.some((re) => re.test(host))) return false;
  // 4. Matches an entry of `allow`: allow.
  if (acl.allow.some((re) => re.test(host))) return true;
  // 5. Otherwise: deny (an empty or absent `allow` denies everyone).
  return false;
}
