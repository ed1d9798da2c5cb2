import type { LookupAddress } from 'node:dns';
import {
  assertPublicLiteral,
  ForbiddenDestinationError,
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

describe('assertPublicLiteral', () => {
  it.each(['127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '10.1.2.3'])('refuses the IP literal %s', (host) => {
    expect(() => assertPublicLiteral(host)).toThrow(ForbiddenDestinationError);
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

  it.each(['private.test', 'metadata.test', 'mapped.test'])(
    'refuses %s, which resolves to a private address',
    async (host) => {
      for (const all of [false, true]) {
        const { error } = await lookup(host, all);
        expect(error).toBeInstanceOf(ForbiddenDestinationError);
        expect(error!.message).toContain(host);
        expect(error!.message).toMatch(/non-public address/);
      }
    },
  );

  it('refuses a name when any one of its addresses is private', async () => {
    const { error } = await lookup('mixed.test', true);
    expect(error).toBeInstanceOf(ForbiddenDestinationError);
    expect(error!.message).toContain('127.0.0.1');
  });

  it('refuses a name with no address', async () => {
    expect((await lookup('empty.test', false)).error).toBeInstanceOf(ForbiddenDestinationError);
  });

  it('passes a resolver error on', async () => {
    const { error } = await lookup('nowhere.test', false);
    expect(error).not.toBeInstanceOf(ForbiddenDestinationError);
    expect(error!.code).toBe('ENOTFOUND');
  });
});
