import type { LookupAddress } from 'node:dns';
import {
  assertPublicLiteral,
  ForbiddenDestinationError,
  forbiddenAddressRule,
  forbiddenHostRule,
  guardedLookup,
  isForbiddenAddress,
  type Resolver,
} from './ssrf-guard.js';

describe('isForbiddenAddress', () => {
  it.each([
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['10.0.0.1', 'private 10/8'],
    ['10.255.255.255', 'private 10/8'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12'],
    ['192.0.0.1', 'IETF protocol assignments'],
    ['192.168.1.1', 'private 192.168/16'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
  ])('forbids IPv4 %s (%s)', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.1', '172.15.255.255', '172.32.0.1', '198.20.0.1'])(
    'allows public IPv4 %s',
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );

  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'unique local'],
    ['fd12::1', 'unique local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
    ['2002:7f00:1::', '6to4 of 127.0.0.1'],
    ['2002:0a00:0001::1', '6to4 of 10.0.0.1'],
    ['2002:a9fe:a9fe::', '6to4 of 169.254.169.254'],
    ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
    ['64:ff9b::10.0.0.1', 'NAT64 of 10.0.0.1'],
  ])('forbids IPv6 %s (%s)', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each(['2606:4700::1111', '2001:4860:4860::8888', '::ffff:8.8.8.8', '2002:0808:0808::', '64:ff9b::808:808'])(
    'allows public IPv6 %s',
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );

  it.each([
    '',
    'localhost',
    'example.com',
    '999.1.1.1',
    '1.2.3',
    '::g',
    'fe80::1::2',
    '10.0.0.1/8',
    ' 8.8.8.8x',
    '010.0.0.1',
    '127.1',
    '2130706433',
  ])('forbids unparsable input %p', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });
});

describe('forbiddenAddressRule', () => {
  it.each([
    ['0.0.0.0', 'this network 0.0.0.0/8'],
    ['10.0.0.5', 'private-use 10.0.0.0/8'],
    ['100.64.0.1', 'shared address space 100.64.0.0/10'],
    ['127.0.0.1', 'loopback 127.0.0.0/8'],
    ['169.254.169.254', 'link-local 169.254.0.0/16'],
    ['172.16.0.1', 'private-use 172.16.0.0/12'],
    ['192.0.0.8', 'IETF protocol assignments 192.0.0.0/24'],
    ['192.168.1.1', 'private-use 192.168.0.0/16'],
    ['198.18.0.1', 'benchmarking 198.18.0.0/15'],
    ['224.0.0.1', 'multicast 224.0.0.0/4'],
    ['255.255.255.255', 'reserved 240.0.0.0/4'],
    ['::', 'unspecified ::/128'],
    ['::1', 'loopback ::1/128'],
    ['fd00::1', 'unique-local fc00::/7'],
    ['fe80::1', 'link-local fe80::/10'],
    ['fe80::1%eth0', 'link-local fe80::/10'],
    ['ff02::1', 'multicast ff00::/8'],
  ])('names the rule refusing %s: %s', (ip, rule) => {
    expect(forbiddenAddressRule(ip)).toBe(rule);
  });

  it('calls unparsable input what it is', () => {
    expect(forbiddenAddressRule('127.1')).toBe('not a plain IP address');
  });

  // Each IPv6 form that carries an IPv4 address, with a forbidden and a public one inside.
  it.each([
    ['::ffff:127.0.0.1', 'IPv4-mapped IPv6 embedding loopback 127.0.0.0/8'],
    ['::ffff:7f00:1', 'IPv4-mapped IPv6 embedding loopback 127.0.0.0/8'],
    ['::ffff:10.0.0.1', 'IPv4-mapped IPv6 embedding private-use 10.0.0.0/8'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'IPv4-mapped IPv6 embedding link-local 169.254.0.0/16'],
    ['::127.0.0.1', 'IPv4-compatible IPv6 embedding loopback 127.0.0.0/8'],
    ['::7f00:1', 'IPv4-compatible IPv6 embedding loopback 127.0.0.0/8'],
    ['0::10.0.0.1', 'IPv4-compatible IPv6 embedding private-use 10.0.0.0/8'],
    ['::169.254.169.254', 'IPv4-compatible IPv6 embedding link-local 169.254.0.0/16'],
    ['::2', 'IPv4-compatible IPv6 embedding this network 0.0.0.0/8'],
    ['::ffff:0:7f00:1', 'IPv4-translated IPv6 embedding loopback 127.0.0.0/8'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated IPv6 embedding loopback 127.0.0.0/8'],
    ['::ffff:0:c0a8:101', 'IPv4-translated IPv6 embedding private-use 192.168.0.0/16'],
    ['2002:7f00:1::', '6to4 IPv6 embedding loopback 127.0.0.0/8'],
    ['2002:0a00:0001::1', '6to4 IPv6 embedding private-use 10.0.0.0/8'],
    ['2002:a9fe:a9fe:1234::', '6to4 IPv6 embedding link-local 169.254.0.0/16'],
    ['64:ff9b::7f00:1', 'NAT64 IPv6 embedding loopback 127.0.0.0/8'],
    ['64:ff9b::10.0.0.1', 'NAT64 IPv6 embedding private-use 10.0.0.0/8'],
    ['64:ff9b:1:7f00:0:100::', 'local-use NAT64 IPv6 embedding loopback 127.0.0.0/8'],
    ['64:ff9b:1:a00:0:5::', 'local-use NAT64 IPv6 embedding private-use 10.0.0.0/8'],
    ['64:ff9b:1:a9fe:a9:fe00:0:1', 'local-use NAT64 IPv6 embedding link-local 169.254.0.0/16'],
  ])('refuses %s: %s', (ip, rule) => {
    expect(forbiddenAddressRule(ip)).toBe(rule);
  });

  it.each([
    ['::ffff:93.184.216.34', 'IPv4-mapped'],
    ['::93.184.216.34', 'IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-compatible'],
    ['::ffff:0:808:808', 'IPv4-translated'],
    ['::ffff:0:93.184.216.34', 'IPv4-translated'],
    ['2002:5db8:d822::1', '6to4'],
    ['64:ff9b::93.184.216.34', 'NAT64'],
    ['64:ff9b:1:5db8:d8:2200::', 'local-use NAT64'],
    // 8.8.8.8 around the reserved byte 8; the last four bytes (127.0.0.1) are the suffix, not the IPv4.
    ['64:ff9b:1:808:8:800:7f00:1', 'local-use NAT64'],
  ])('allows %s, a %s form of a public IPv4', (ip) => {
    expect(forbiddenAddressRule(ip)).toBeNull();
  });
});

describe('forbiddenHostRule', () => {
  const hostOf = (url: string) => new URL(url).hostname;

  it.each([
    ['http://localhost/', 'loopback name localhost (RFC 6761)'],
    ['http://LOCALHOST./', 'loopback name localhost (RFC 6761)'],
    ['http://api.localhost:8080/', 'loopback name localhost (RFC 6761)'],
    ['http://api.localhost./', 'loopback name localhost (RFC 6761)'],
    ['http://127.0.0.1/', 'loopback 127.0.0.0/8'],
    ['http://127.1/', 'loopback 127.0.0.0/8'],
    ['http://0x7f000001/', 'loopback 127.0.0.0/8'],
    ['http://10.0.0.5./', 'private-use 10.0.0.0/8'],
    ['http://0/', 'this network 0.0.0.0/8'],
    ['http://[::1]/', 'loopback ::1/128'],
    ['http://[::127.0.0.1]/', 'IPv4-compatible IPv6 embedding loopback 127.0.0.0/8'],
    ['http://[::ffff:0:7f00:1]/', 'IPv4-translated IPv6 embedding loopback 127.0.0.0/8'],
    ['http://[::ffff:10.0.0.1]/', 'IPv4-mapped IPv6 embedding private-use 10.0.0.0/8'],
    ['http://[2002:a9fe:a9fe::]/', '6to4 IPv6 embedding link-local 169.254.0.0/16'],
    ['http://[64:ff9b:1:7f00:0:100::]/', 'local-use NAT64 IPv6 embedding loopback 127.0.0.0/8'],
  ])('refuses the host of %s: %s', (url, rule) => {
    expect(forbiddenHostRule(hostOf(url))).toBe(rule);
  });

  it.each([
    'https://receiver.example.com/',
    'http://93.184.216.34/',
    'http://[2606:4700::1111]/',
    'http://[::ffff:93.184.216.34]/',
    'http://localhost.example.com/',
    'http://notlocalhost/',
  ])('lets the host of %s through (names are checked at send time)', (url) => {
    expect(forbiddenHostRule(hostOf(url))).toBeNull();
  });
});

describe('assertPublicLiteral', () => {
  it.each(['127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '10.1.2.3', 'localhost'])('refuses %s', (host) => {
    expect(() => assertPublicLiteral(host)).toThrow(ForbiddenDestinationError);
  });

  it('names the address and the rule', () => {
    expect(() => assertPublicLiteral('10.0.0.5')).toThrow(
      'Destination 10.0.0.5 refused by the SSRF guard: private-use 10.0.0.0/8',
    );
    expect(() => assertPublicLiteral('[::7f00:1]')).toThrow(
      'Destination ::7f00:1 refused by the SSRF guard: IPv4-compatible IPv6 embedding loopback 127.0.0.0/8',
    );
  });

  it.each(['8.8.8.8', '[2606:4700::1111]', 'example.com'])('lets %s through (names are checked at lookup)', (host) => {
    expect(() => assertPublicLiteral(host)).not.toThrow();
  });

  it('refuses what the URL parser turns into a loopback literal', () => {
    for (const url of ['http://127.1/', 'http://0x7f000001/', 'http://2130706433/', 'http://[::ffff:7f00:1]/']) {
      expect(() => assertPublicLiteral(new URL(url).hostname)).toThrow(ForbiddenDestinationError);
    }
  });
});

describe('guardedLookup', () => {
  const dns: Record<string, LookupAddress[]> = {
    'public.test': [{ address: '93.184.216.34', family: 4 }],
    'dual.test': [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ],
    'private.test': [{ address: '10.0.0.5', family: 4 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'mixed.test': [
      { address: '93.184.216.34', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ],
    'mapped.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
    'compatible.test': [{ address: '::127.0.0.1', family: 6 }],
    'nat64.test': [{ address: '64:ff9b:1:a00:0:5::', family: 6 }],
    'empty.test': [],
  };
  const resolver: Resolver = (hostname, callback) => {
    const addresses = dns[hostname];
    if (!addresses)
      return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(null, addresses);
  };
  const lookup = (hostname: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>(
      (resolve) =>
        guardedLookup(resolver)(hostname, { all }, (error, address, family) => resolve({ error, address, family })),
    );

  it('passes a public address through, as one address or all of them', async () => {
    expect(await lookup('public.test', false)).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    expect(await lookup('dual.test', true)).toEqual({ error: null, address: dns['dual.test'], family: undefined });
  });

  it.each(['private.test', 'metadata.test', 'mapped.test', 'compatible.test', 'nat64.test'])(
    'refuses %s, which resolves to a private address',
    async (host) => {
      for (const all of [false, true]) {
        const { error } = await lookup(host, all);
        expect(error).toBeInstanceOf(ForbiddenDestinationError);
        expect(error!.message).toContain(host);
        expect(error!.message).toMatch(
          /refused by the SSRF guard: (private-use|link-local|IPv4-mapped|IPv4-compatible|local-use NAT64)/,
        );
      }
    },
  );

  it('refuses a name when any one of its addresses is private', async () => {
    const { error } = await lookup('mixed.test', true);
    expect(error).toBeInstanceOf(ForbiddenDestinationError);
    expect(error!.message).toBe('Destination mixed.test (127.0.0.1) refused by the SSRF guard: loopback 127.0.0.0/8');
  });

  it('fails a name with no address as a lookup error, not a refusal', async () => {
    const { error } = await lookup('empty.test', false);
    expect(error).not.toBeInstanceOf(ForbiddenDestinationError);
    expect(error!.code).toBe('ENODATA');
  });

  it('passes a resolver error on', async () => {
    const { error } = await lookup('nowhere.test', false);
    expect(error).not.toBeInstanceOf(ForbiddenDestinationError);
    expect(error!.code).toBe('ENOTFOUND');
  });
});

describe('ForbiddenDestinationError.isRefusal', () => {
  const refusal = new ForbiddenDestinationError('10.0.0.5', 'private-use 10.0.0.0/8');

  it('recognises a refusal thrown directly or wrapped as a cause', () => {
    expect(ForbiddenDestinationError.isRefusal(refusal)).toBe(true);
    expect(ForbiddenDestinationError.isRefusal(new TypeError('fetch failed', { cause: refusal }))).toBe(true);
  });

  it.each([new Error('ECONNREFUSED'), null, undefined, 'boom'])('does not take %p for a refusal', (error) => {
    expect(ForbiddenDestinationError.isRefusal(error)).toBe(false);
  });
});
