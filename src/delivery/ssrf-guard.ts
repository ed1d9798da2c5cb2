import ipaddr from 'ipaddr.js';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

const FORBIDDEN_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
].map((cidr) => ipaddr.IPv4.parseCIDR(cidr));

const FORBIDDEN_V6 = ['::/128', '::1/128', 'fc00::/7', 'fe80::/10', 'ff00::/8'].map((cidr) =>
  ipaddr.IPv6.parseCIDR(cidr),
);
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

const v4FromBytes = (bytes: number[]): ipaddr.IPv4 => new ipaddr.IPv4(bytes);

/** The IPv4 address an IPv6 one stands for (mapped, 6to4, NAT64), if any. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const bytes = address.toByteArray();
  if (address.match(SIX_TO_FOUR)) return v4FromBytes(bytes.slice(2, 6));
  if (address.match(NAT64)) return v4FromBytes(bytes.slice(12, 16));
  return null;
}

/** True when an address is not publicly routable (DESIGN 5); unparsable input counts as forbidden. */
export function isForbiddenAddress(ip: string): boolean {
  // Only the plain forms a socket takes as an address: legacy ones (010.0.0.1, 127.1) parse differently per parser.
  if (isIP(ip) === 0 || !ipaddr.isValid(ip)) return true;
  const address = ipaddr.parse(ip);
  if (address.kind() === 'ipv4') return FORBIDDEN_V4.some((range) => (address as ipaddr.IPv4).match(range));
  const v6 = address as ipaddr.IPv6;
  if (FORBIDDEN_V6.some((range) => v6.match(range))) return true;
  const v4 = embeddedIPv4(v6);
  return v4 !== null && FORBIDDEN_V4.some((range) => v4.match(range));
}

export class ForbiddenDestinationError extends Error {
  readonly code = 'EFORBIDDENDEST';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type Resolver = (hostname: string, callback: (error: Error | null, addresses: LookupAddress[]) => void) => void;

const systemResolver: Resolver = (hostname, callback) =>
  dnsLookup(hostname, { all: true }, (error, addresses) => callback(error, addresses ?? []));

/**
 * A `lookup` for net/tls.connect that refuses hosts resolving to any forbidden address. The socket
 * connects to the address returned here, so the checked address is the one connected to (no DNS
 * rebinding between check and connect).
 */
export function guardedLookup(resolve: Resolver = systemResolver) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname, (error, addresses) => {
      if (error) return callback(error as NodeJS.ErrnoException, []);
      const forbidden = addresses.find((a) => isForbiddenAddress(a.address));
      if (forbidden || addresses.length === 0) {
        const reason = forbidden ? `resolves to non-public address ${forbidden.address}` : 'has no address';
        return callback(new ForbiddenDestinationError(`Destination ${hostname} ${reason}`), []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** For IP-literal URLs, which connect without any lookup. */
export function assertPublicLiteral(hostname: string): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) && isForbiddenAddress(bare)) {
    throw new ForbiddenDestinationError(`Destination address ${bare} is not publicly routable`);
  }
}
