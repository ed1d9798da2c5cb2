import ipaddr from 'ipaddr.js';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

interface Rule<T> {
  range: [T, number];
  /** e.g. "private-use 10.0.0.0/8" */
  name: string;
}

const rules = <T extends ipaddr.IPv4 | ipaddr.IPv6>(parse: (cidr: string) => [T, number], list: [string, string][]) =>
  list.map(([cidr, name]): Rule<T> => ({ range: parse(cidr), name: `${name} ${cidr}` }));

// The ranges of DESIGN 5, named as in the IANA special-purpose address registries.
const FORBIDDEN_V4 = rules(
  (cidr) => ipaddr.IPv4.parseCIDR(cidr),
  [
    ['0.0.0.0/8', 'this network'],
    ['10.0.0.0/8', 'private-use'],
    ['100.64.0.0/10', 'shared address space'],
    ['127.0.0.0/8', 'loopback'],
    ['169.254.0.0/16', 'link-local'],
    ['172.16.0.0/12', 'private-use'],
    ['192.0.0.0/24', 'IETF protocol assignments'],
    ['192.168.0.0/16', 'private-use'],
    ['198.18.0.0/15', 'benchmarking'],
    ['224.0.0.0/4', 'multicast'],
    ['240.0.0.0/4', 'reserved'],
  ],
);

const FORBIDDEN_V6 = rules(
  (cidr) => ipaddr.IPv6.parseCIDR(cidr),
  [
    ['::/128', 'unspecified'],
    ['::1/128', 'loopback'],
    ['fc00::/7', 'unique-local'],
    ['fe80::/10', 'link-local'],
    ['ff00::/8', 'multicast'],
  ],
);

interface Embedding {
  range: [ipaddr.IPv6, number];
  form: string;
  /** Indexes of the embedded IPv4's four bytes in the IPv6 address. */
  bytes: number[];
}

const LAST_FOUR = [12, 13, 14, 15];
// Checked in order, after FORBIDDEN_V6 (so :: and ::1 are not read as IPv4-compatible 0.0.0.0 and 0.0.0.1).
const EMBEDDINGS: Embedding[] = [
  { range: ipaddr.IPv6.parseCIDR('::ffff:0:0/96'), form: 'IPv4-mapped IPv6', bytes: LAST_FOUR },
  { range: ipaddr.IPv6.parseCIDR('::ffff:0:0:0/96'), form: 'IPv4-translated IPv6', bytes: LAST_FOUR },
  { range: ipaddr.IPv6.parseCIDR('::/96'), form: 'IPv4-compatible IPv6', bytes: LAST_FOUR },
  { range: ipaddr.IPv6.parseCIDR('2002::/16'), form: '6to4 IPv6', bytes: [2, 3, 4, 5] },
  { range: ipaddr.IPv6.parseCIDR('64:ff9b::/96'), form: 'NAT64 IPv6', bytes: LAST_FOUR },
  // RFC 6052 layout for a /48 prefix: bits 64-71 (byte 8) are reserved, the IPv4 sits around them.
  { range: ipaddr.IPv6.parseCIDR('64:ff9b:1::/48'), form: 'local-use NAT64 IPv6', bytes: [6, 7, 9, 10] },
];

const v4Rule = (address: ipaddr.IPv4): string | null =>
  FORBIDDEN_V4.find((rule) => address.match(rule.range))?.name ?? null;

function v6Rule(address: ipaddr.IPv6): string | null {
  const own = FORBIDDEN_V6.find((rule) => address.match(rule.range));
  if (own) return own.name;
  const embedding = EMBEDDINGS.find((e) => address.match(e.range));
  if (!embedding) return null;
  const bytes = address.toByteArray();
  const rule = v4Rule(new ipaddr.IPv4(embedding.bytes.map((i) => bytes[i])));
  return rule && `${embedding.form} embedding ${rule}`;
}

/**
 * The rule that makes an address not publicly routable (DESIGN 5), e.g. "private-use 10.0.0.0/8" or
 * "IPv4-compatible IPv6 embedding loopback 127.0.0.0/8"; null for a public address. Unparsable input
 * is forbidden.
 */
export function forbiddenAddressRule(ip: string): string | null {
  // Only the plain forms a socket takes as an address: legacy ones (010.0.0.1, 127.1) parse differently per parser.
  const family = isIP(ip);
  if (family === 0 || !ipaddr.isValid(ip)) return 'not a plain IP address';
  if (family === 4) return v4Rule(ipaddr.IPv4.parse(ip));
  // ipaddr.js reads the IPv4-compatible ::a.b.c.d as the IPv4-mapped ::ffff:a.b.c.d; 0::a.b.c.d it reads right.
  return v6Rule(ipaddr.IPv6.parse(ip.replace(/^::(?=[\d.]+(%.*)?$)/, '0::')));
}

export const isForbiddenAddress = (ip: string): boolean => forbiddenAddressRule(ip) !== null;

/**
 * The rule refusing a URL host (as `new URL(url).hostname` gives it) without any lookup: `localhost`
 * names, which never leave the machine (RFC 6761), and forbidden IP literals. Other names: null,
 * their addresses are checked at send time.
 */
export function forbiddenHostRule(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return 'loopback name localhost (RFC 6761)';
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  return isIP(bare) ? forbiddenAddressRule(bare) : null;
}

export class ForbiddenDestinationError extends Error {
  readonly code = 'EFORBIDDENDEST';

  constructor(destination: string, rule: string) {
    super(`Destination ${destination} refused by the SSRF guard: ${rule}`);
  }

  /** True for a refusal by the guard, thrown directly or wrapped as the `cause` of a connect error. */
  static isRefusal(error: unknown): boolean {
    return error instanceof ForbiddenDestinationError || (error as Error)?.cause instanceof ForbiddenDestinationError;
  }
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
      // A name without addresses is a lookup failure like ENOTFOUND (retried), not a refusal.
      if (addresses.length === 0) {
        return callback(Object.assign(new Error(`getaddrinfo ENODATA ${hostname}`), { code: 'ENODATA' }), []);
      }
      for (const { address } of addresses) {
        const rule = forbiddenAddressRule(address);
        if (rule) return callback(new ForbiddenDestinationError(`${hostname} (${address})`, rule), []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** For hosts that connect without any lookup (IP literals) or must never be looked up (localhost). */
export function assertPublicLiteral(hostname: string): void {
  const rule = forbiddenHostRule(hostname);
  if (rule) throw new ForbiddenDestinationError(hostname.replace(/^\[(.*)\]$/, '$1'), rule);
}
