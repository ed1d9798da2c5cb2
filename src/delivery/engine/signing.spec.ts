import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { generateSigningSecret } from '../../webhooks/webhooks.service.js';
import { signPayload } from './signing.js';

const now = () => Math.floor(Date.now() / 1000);

describe('signPayload', () => {
  const secret = generateSigningSecret();
  const body = JSON.stringify({ webhookId: 'w1', event: 'newSubmission', data: { id: 's1', data: { a: 'é' } } });

  it('produces the three Standard Webhooks headers', () => {
    const ts = now();
    const headers = signPayload([secret], 'msg_1', ts, body);
    expect(Object.keys(headers).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toBe(String(ts));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('verifies with the standardwebhooks package', () => {
    const headers = signPayload([secret], 'msg_1', now(), body);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it('is deterministic for the same id, timestamp and body', () => {
    const ts = now();
    expect(signPayload([secret], 'msg_1', ts, body)).toEqual(signPayload([secret], 'msg_1', ts, body));
  });

  it('fails verification with another secret, body, id or timestamp', () => {
    const ts = now();
    const headers = { ...signPayload([secret], 'msg_1', ts, body) };
    const wh = new Webhook(secret);
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow(WebhookVerificationError);
    expect(() => wh.verify(body.replace('w1', 'w2'), headers)).toThrow(WebhookVerificationError);
    expect(() => wh.verify(body, { ...headers, 'webhook-id': 'msg_2' })).toThrow(WebhookVerificationError);
    expect(() => wh.verify(body, { ...headers, 'webhook-timestamp': String(ts - 1) })).toThrow(
      WebhookVerificationError,
    );
  });

  it('signs with each secret during a rotation overlap, so a receiver knowing either accepts it', () => {
    const previous = generateSigningSecret();
    const headers = { ...signPayload([secret, previous], 'msg_1', now(), body) };
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(headers['webhook-signature'].split(' ')[0]).toBe(
      signPayload([secret], 'msg_1', Number(headers['webhook-timestamp']), body)['webhook-signature'],
    );
    for (const key of [secret, previous]) expect(new Webhook(key).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow(WebhookVerificationError);
  });

  it('is refused by a receiver when the timestamp is stale', () => {
    const headers = { ...signPayload([secret], 'msg_1', now() - 3600, body) };
    expect(() => new Webhook(secret).verify(body, headers)).toThrow(WebhookVerificationError);
  });
});
