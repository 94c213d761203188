// Checks for the network-shaped values of the configuration: server names, listening addresses,
// base URLs and message-bus addresses.

import { isIP } from 'node:net';
import { isServerName, isUserId } from '../protocol/ids.js';

export { isServerName, isUserId };

export interface HostPort {
  host: string;
  port: number;
}

const DNS_NAME = /^[0-9A-Za-z.-]{1,255}$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;
const PORT = /^\d{1,5}$/;

function splitHostPort(text: string): { host: string; port: string | undefined } | undefined {
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    const after = text.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return undefined;
    return { host: text.slice(0, close + 1), port: after === '' ? undefined : after.slice(1) };
  }
  const colon = text.lastIndexOf(':');
  if (colon < 0) return { host: text, port: undefined };
  return { host: text.slice(0, colon), port: text.slice(colon + 1) };
}

function validHost(host: string): boolean {
  if (host.startsWith('[')) return host.endsWith(']') && IPV6.test(host.slice(1, -1));
  return DNS_NAME.test(host);
}

function validPort(port: string, min: number): boolean {
  return PORT.test(port) && Number(port) >= min && Number(port) <= 65535;
}

/**
 * Parses a listening address `host:port`. An empty host means every IPv4 interface ("0.0.0.0");
 * brackets around an IPv6 host are removed. Port 0 asks the system for a free port.
 */
export function parseBindAddress(text: string): HostPort | undefined {
  const parts = splitHostPort(text);
  if (parts === undefined || parts.port === undefined || !validPort(parts.port, 0)) return undefined;
  if (parts.host === '') return { host: '0.0.0.0', port: Number(parts.port) };
  if (!validHost(parts.host)) return undefined;
  const host = parts.host.startsWith('[') ? parts.host.slice(1, -1) : parts.host;
  return { host, port: Number(parts.port) };
}

/** Formats a listening address back to `host:port`, bracketing IPv6 hosts. */
export function formatBindAddress(address: HostPort): string {
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return `${host}:${address.port}`;
}

/** Parses an absolute URL whose scheme is one of `schemes` (without the colon). */
export function parseUrl(text: string, schemes: readonly string[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (!schemes.includes(url.protocol.slice(0, -1))) return undefined;
  return url.host === '' ? undefined : url;
}

/**
 * A client base URL: an http(s) URL, or a bare `host[:port]` which stands for
 * `https://host[:port]`. Returns the URL text, or undefined when neither form fits.
 */
export function parseClientBaseUrl(text: string): string | undefined {
  if (text.includes('://')) return parseUrl(text, ['http', 'https']) === undefined ? undefined : text;
  return isServerName(text) ? `https://${text}` : undefined;
}

/** A NATS server address: `nats://`, `tls://`, `ws://` or `wss://` URL, or a bare `host[:port]`. */
export function isNatsAddress(text: string): boolean {
  if (text.includes('://')) return parseUrl(text, ['nats', 'tls', 'ws', 'wss']) !== undefined;
  return isServerName(text);
}

/**
 * An IP address range: an IPv4 or IPv6 address, optionally with a `/prefix` length. Returns it as
 * `address/prefix` (a bare address is its own /32 or /128), or undefined when the text is neither.
 */
export function parseAddressRange(text: string): string | undefined {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  // A zone (fe80::1%eth0) names an interface of this machine, never a peer's address.
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 0) return undefined;
  const max = family === 4 ? 32 : 128;
  if (slash < 0) return `${address}/${max}`;
  const prefix = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return undefined;
  return `${address}/${Number(prefix)}`;
}
