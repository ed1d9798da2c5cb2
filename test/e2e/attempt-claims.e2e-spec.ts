import { AttemptClaims, type Claim } from '../../src/delivery/attempt-claims.js';
import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const URL = 'https://receiver.example.com/hook';

describe('attempt claims (real Postgres, no worker)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  /** Pending deliveries due now, of a webhook of a new workspace. */
  async function pendingDeliveries(count: number): Promise<string[]> {
    const setup = await setupWebhook(t, URL);
    const submission = await submit(setup.api, setup.calculator.id);
    const owner = ownerOf(setup, submission);
    const ids = await insertDeliveries(
      t,
      owner,
      Array.from({ length: count }, () => ({ status: 'pending' as const, createdAt: new Date() })),
    );
    await t.dataSource.query(`UPDATE deliveries SET next_attempt_at = now() WHERE id = ANY($1)`, [ids]);
    return ids;
  }

  const releaseAll = (claims: Claim[]) => {
    for (const claim of claims) if (claim.outcome === 'claimed') claim.written();
  };

  it('two jobs of one delivery claiming in one batch: only one gets it, the other is busy', async () => {
    const [first, duplicated] = await pendingDeliveries(2);
    // A pool of 2 lets one claim batch run at a time: the duplicated claims wait together behind the first.
    const claims = new AttemptClaims(t.dataSource, { ...t.config, databasePoolSize: 2 });
    const results = await Promise.all([claims.claim(first), claims.claim(duplicated), claims.claim(duplicated)]);
    releaseAll(results);

    expect(results[0].outcome).toBe('claimed');
    expect(results.slice(1).map((c) => c.outcome)).toEqual(['claimed', 'busy']);
    // The lease is held: a later claim of either job is busy too.
    const later = await claims.claim(duplicated);
    releaseAll([later]);
    expect(later.outcome).toBe('busy');
  });
});
