import { censorSecrets, REDACTED, redactKeys, redactUrl } from './log-redaction.js';

const KEY = 'ack_1a2b3c4d_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfG';

describe('log redaction', () => {
  it('censors a key-shaped string anywhere in a text, percent-encoded or not', () => {
    expect(redactKeys(`/api/v1/webhooks/${KEY}`)).toBe(`/api/v1/webhooks/${REDACTED}`);
    expect(redactKeys('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=')).toBe(REDACTED);
    expect(redactKeys(KEY.replaceAll('_', '%5F'))).toBe(REDACTED);
    expect(redactKeys('/api/v1/webhooks/wh_123')).toBe('/api/v1/webhooks/wh_123');
    // A portal link's token and a portal session's credential.
    expect(redactKeys('#portal=acpl_Xnq9QuU3SLc3NLfh3qwp8A_NsSpCMrEywFi29dAdNCY')).toBe(`#portal=${REDACTED}`);
    expect(redactKeys('acps_GGi_4x12DAHIZ5PXOUavPC1dtSJ92-y-OgcHbaPVb5c')).toBe(REDACTED);
  });

  it('censors credential-named query parameters and key-shaped values in a URL', () => {
    expect(redactUrl(`/me?api_key=x&limit=5&X-AC-API-KEY=y&access_token=z`)).toBe(
      `/me?api_key=${REDACTED}&limit=5&X-AC-API-KEY=${REDACTED}&access_token=${REDACTED}`,
    );
    expect(redactUrl(`/me?q=${KEY}&${KEY}`)).toBe(`/me?q=${REDACTED}&${REDACTED}`);
    expect(redactUrl('/webhooks?limit=5')).toBe('/webhooks?limit=5');
  });

  it('censors a field named secret at the top and two levels down, copying only what holds one', () => {
    const plain = { method: 'GET', status: 200, nested: { a: 1 } };
    expect(censorSecrets(plain)).toBe(plain);
    const webhook = { id: 'w1', secret: 'whsec_x' };
    const fields = { secret: 's', webhook, list: [{ secret: 'y' }], deep: { a: { secret: 'z' } }, other: { id: 1 } };
    const censored = censorSecrets(fields);
    expect(censored).toEqual({
      secret: REDACTED,
      webhook: { id: 'w1', secret: REDACTED },
      list: [{ secret: REDACTED }],
      deep: { a: { secret: REDACTED } },
      other: { id: 1 },
    });
    expect(censored.other).toBe(fields.other);
    expect(webhook.secret).toBe('whsec_x'); // the caller's objects are left as they were
  });

  it('keeps an object without secrets as it is, an error with its message and stack', () => {
    const error = new Error('boom');
    expect(censorSecrets({ err: error }).err).toBe(error);
    class Entity {
      constructor(public secret: string) {}
    }
    expect(censorSecrets({ webhook: new Entity('whsec_y') })).toEqual({ webhook: { secret: REDACTED } });
  });
});
