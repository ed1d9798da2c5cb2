import { destinationOf } from '../../src/delivery/host-wakes.js';
import { DeliveryStore, type PickPosition } from '../../src/delivery/store/delivery-store.js';
import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const URL = 'https://pick.example.com/hook';

describe("a drain's pick (real Postgres, no worker)", () => {
  let t: TestApp;
  let store: DeliveryStore;

  beforeAll(async () => {
    t = await createTestApp();
    store = t.app.get(DeliveryStore);
  });
  afterAll(() => t.close());

  const pick = (webhookId: string, after?: PickPosition) =>
    store.pick({
      host: destinationOf(URL),
      room: 10,
      busy: new Map(),
      defaultCap: 10,
      fullWorkspaces: [],
      lane: 0,
      lanes: 1,
      after: new Map(after ? [[webhookId, after]] : []),
    });

  it('starts past the last delivery started, by due time and then by id', async () => {
    const setup = await setupWebhook(t, URL);
    const owner = ownerOf(setup, await submit(setup.api, setup.calculator.id));
    const ids = await insertDeliveries(
      t,
      owner,
      Array.from({ length: 4 }, () => ({ status: 'pending' as const, createdAt: new Date() })),
    );
    await t.dataSource.query(`DELETE FROM deliveries WHERE webhook_id = $1 AND NOT id = ANY($2)`, [
      setup.webhook.id,
      ids,
    ]); // the submission's own
    // Three due in one millisecond (a batch of retries is recorded at one now()), one the millisecond after.
    await t.dataSource.query(
      `UPDATE deliveries SET next_attempt_at = date_trunc('milliseconds', now() - interval '1 second')
         + CASE WHEN id = $2 THEN interval '1 millisecond' ELSE interval '0' END
       WHERE id = ANY($1)`,
      [ids, ids[3]],
    );
    const all = await pick(setup.webhook.id);
    expect(all.map((d) => d.id)).toEqual([...ids.slice(0, 3).sort(), ids[3]]);
    expect(new Set(all.map((d) => d.next_attempt_at.getTime())).size).toBe(2);

    // Each position returns what follows it only: none started is picked again.
    for (let i = 0; i < all.length; i++) {
      const next = await pick(setup.webhook.id, { at: all[i].next_attempt_at, id: all[i].id });
      expect(next.map((d) => d.id)).toEqual(all.slice(i + 1).map((d) => d.id));
    }
  });
});
