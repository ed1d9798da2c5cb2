import { REDACTED, redactKeys, redactUrl } from './log-redaction.js';

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
});
