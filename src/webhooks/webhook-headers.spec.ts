import { headerProblem, maskHeaderValue, mergeHeaders } from './webhook-headers.js';

describe('custom request headers', () => {
  it.each(['Authorization', 'X-Api-Key', 'x_tenant', "a!#$%&'*+.^_`|~9"])('allows the name %s', (name) => {
    expect(headerProblem(name, 'value')).toBeNull();
  });

  it.each([
    'Content-Type',
    'content-length',
    'User-Agent',
    'Webhook-Id',
    'webhook-signature',
    'webhook-anything',
    'Host',
    'Connection',
    'Keep-Alive',
    'Transfer-Encoding',
    'TE',
    'Upgrade',
    'Proxy-Authorization',
  ])('refuses %s, which is ours or the connection’s', (name) => {
    expect(headerProblem(name, 'x')).toMatch(/set by the service/);
  });

  it.each(['', 'has space', 'colon:', 'x-ü', 'a'.repeat(257)])('refuses the invalid name %j', (name) => {
    expect(headerProblem(name, 'x')).toMatch(/not a valid HTTP header name/);
  });

  it.each(['', ' lead', 'trail ', 'a\r\nb', 'nul\0', 'é', 5, 'v'.repeat(4097)])('refuses the value %j', (value) => {
    expect(headerProblem('x-h', value)).not.toBeNull();
  });

  it('never repeats a value in its answer', () => {
    expect(headerProblem('x-h', 'secret\nvalue')).not.toContain('secret');
  });

  it('masks a value: its first 4 characters from 16 characters on, else nothing of it', () => {
    expect(maskHeaderValue('Bearer 0123456789')).toBe('Bear…');
    expect(maskHeaderValue('0123456789abcde')).toBe('••••');
  });

  it('merges a patch: sets, replaces case-insensitively, removes with null, all with null', () => {
    const current = { authorization: 'a', 'x-keep': 'k' };
    expect(mergeHeaders(current, { Authorization: 'b', 'X-New': 'n' })).toEqual({
      authorization: 'b',
      'x-keep': 'k',
      'x-new': 'n',
    });
    expect(mergeHeaders(current, { AUTHORIZATION: null })).toEqual({ 'x-keep': 'k' });
    expect(mergeHeaders(current, null)).toEqual({});
  });

  it('keeps a header named __proto__ as data', () => {
    const merged = mergeHeaders({}, JSON.parse('{"__proto__": "v"}') as Record<string, string>);
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(merged)).toEqual(['__proto__']);
  });
});
