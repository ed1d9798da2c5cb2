import type { AppConfig } from '../../../core/config/config.js';
import { WebhookCaps } from './webhook-caps.js';

describe('WebhookCaps', () => {
  const caps = () => new WebhookCaps({ maxInFlightPerWebhook: 20 } as AppConfig);

  it('takes the job’s cap, or the default, for a webhook this worker has not claimed', () => {
    const known = caps();
    expect(known.capOf({ webhookId: 'w', maxInFlight: 3 }, Date.now())).toBe(3);
    expect(known.capOf({ webhookId: 'w', maxInFlight: null }, Date.now())).toBe(20);
    expect(known.capOf({ webhookId: 'w' }, Date.now())).toBe(20);
  });

  it('takes the newer of its last claim and the job', () => {
    const known = caps();
    known.learn('w', 2);
    expect(known.capOf({ webhookId: 'w', maxInFlight: 6 }, Date.now() - 60_000)).toBe(2); // enqueued before
    expect(known.capOf({ webhookId: 'w', maxInFlight: 6 }, Date.now() + 1)).toBe(6); // enqueued after
    expect(known.capOf({ webhookId: 'w' }, Date.now() + 1)).toBe(2); // the job did not say
    known.learn('w', null);
    expect(known.capOf({ webhookId: 'w', maxInFlight: 6 }, Date.now() - 60_000)).toBe(20);
  });

  it('forgets the least recently claimed webhook past 10,000', () => {
    const known = caps();
    for (let i = 0; i <= 10_000; i++) known.learn(`w${i}`, 1);
    expect(known.capOf({ webhookId: 'w0' }, 0)).toBe(20);
    expect(known.capOf({ webhookId: 'w10000' }, 0)).toBe(1);
  });
});
