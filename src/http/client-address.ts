// The address of the client behind a request. Behind a reverse proxy every connection comes from
// the proxy; the proxy names the client in X-Forwarded-For. That header is believed only from
// trusted proxies (`global.trusted_proxies`), since anyone else can write anything in it.

import { BlockList, isIP } from 'node:net';

/** `::ffff:192.0.2.1` (how a dual-stack socket shows an IPv4 peer) as `192.0.2.1`, so one client has one address. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** The address an X-Forwarded-For entry names: ports and brackets removed; undefined when it names none. */
function forwardedAddress(entry: string): string | undefined {
  let text = entry.trim();
  if (text.startsWith('[')) {
    // [2001:db8::1]:443
    const close = text.indexOf(']');
    text = close < 0 ? '' : text.slice(1, close);
  } else if (text.indexOf(':') > 0 && text.indexOf(':') === text.lastIndexOf(':')) {
    // 192.0.2.1:5678
    text = text.slice(0, text.indexOf(':'));
  }
  return isIP(text) === 0 ? undefined : plainAddress(text);
}

export class ClientAddresses {
  private readonly trusted: BlockList | undefined;

  /**
   * `ranges`: addresses and `address/prefix` ranges, as `global.trusted_proxies` holds them once
   * loaded; none: X-Forwarded-For is never read.
   */
  constructor(ranges: readonly string[] = []) {
    if (ranges.length === 0) return;
    this.trusted = new BlockList();
    for (const range of ranges) {
      const [address = '', prefix] = range.split('/');
      const family = isIP(address);
      if (family === 0) throw new Error(`not an IP address or CIDR range: ${range}`);
      const bits = prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix);
      this.trusted.addSubnet(address, bits, family === 4 ? 'ipv4' : 'ipv6');
    }
  }

  isTrusted(address: string): boolean {
    const family = isIP(address);
    return this.trusted !== undefined && family !== 0 && this.trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }

  /**
   * The client's address for a connection from `peer` carrying `forwardedFor`. From a trusted
   * proxy, the chain is read from the right (each proxy appends the address it was connected
   * from) and the first address that is not itself a trusted proxy is the client. An entry that
   * names no address ends the walk at the proxy that wrote it.
   */
  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    let client = plainAddress(peer ?? '');
    if (this.trusted === undefined || forwardedFor === undefined || !this.isTrusted(client)) return client;
    const entries = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = entries.length - 1; i >= 0; i--) {
      const address = forwardedAddress(entries[i]!);
      if (address === undefined) break;
      client = address;
      if (!this.isTrusted(address)) break;
    }
    return client;
  }
}
