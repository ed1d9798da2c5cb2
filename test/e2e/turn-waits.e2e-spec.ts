import { RedisClients } from '../../src/core/redis/redis.module.js';
import { DeliveryQueue } from '../../src/delivery/delivery-queue.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { waitFor } from '../support/receiver.js';

const SUBMISSIONS = 8;

// One attempt in flight per webhook: every job of a burst to one webhook but the first is turned away.
describe('a job turned away at its host', () => {
  const env = useFastDeliveryApp({ DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '1' });

  /** How many times the delivery queue parked a job (its events stream's `delayed` events). */
  async function parkedCount(): Promise<number> {
    const queue = env.t.app.get(DeliveryQueue).queues[0];
    const client = env.t.app.get(RedisClients).get('queue');
    const events = (await client.xrange(queue.keys.events, '-', '+')) as [string, string[]][];
    return events.filter(([, fields]) => fields[0] === 'event' && fields[1] === 'delayed').length;
  }

  /** A burst of submissions to one webhook whose receiver answers after `delayMs`; resolves once all arrived. */
  async function burst(delayMs: number) {
    const receiver = await env.startReceiver(() => ({ status: 200, delayMs }));
    const { api, calculator } = await setupWebhook(env.t, receiver.url);
    const parkedBefore = await parkedCount();
    const submittedAt = await Promise.all(
      Array.from({ length: SUBMISSIONS }, () => submit(api, calculator.id).then(() => Date.now())),
    );
    await waitFor(() => receiver.requests.length === SUBMISSIONS, 10_000, 'every delivery');
    await waitFor(() => receiver.open === 0, 5_000, 'the last answer');
    // Some were queued while the first was in flight, so were turned away; they went one by one.
    const firstAnswer = receiver.requests[0].answeredAt!;
    expect(submittedAt.filter((at) => at < firstAnswer).length).toBeGreaterThanOrEqual(3);
    expect(receiver.maxOpen).toBe(1);
    return { parked: (await parkedCount()) - parkedBefore };
  }

  it('waits in process while its host frees slots, and takes its turn without parking', async () => {
    const { parked } = await burst(30);
    expect(parked).toBe(0);
  }, 30_000);

  it('parks once its host has freed no slot for the idle time (100 ms), and still comes in turn', async () => {
    const { parked } = await burst(400);
    expect(parked).toBeGreaterThanOrEqual(1);
  }, 30_000);
});
