import { RedisClients } from '../../src/core/redis/redis.module.js';
import { QueueLayout } from '../../src/core/redis/queue-layout.js';
import { DeliveryQueue, destinationOf } from '../../src/delivery/delivery-queue.js';
import { Admission } from '../../src/delivery/engine/admission/admission.js';
import { HostAdmission } from '../../src/delivery/engine/admission/host-admission.js';
import { WebhookCaps } from '../../src/delivery/engine/admission/webhook-caps.js';
import { hostKeysOf } from '../../src/delivery/host-state.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { pace, Receiver, waitFor } from '../support/receiver.js';
import { client, registerWebhook } from '../support/management-api.js';
import { createCalculator, createWorkspace, type TestApp } from '../support/test-app.js';

const SUBMISSIONS = 8;
// One attempt in flight per webhook: every job of a burst to one webhook but the first is turned away.
const ONE_AT_A_TIME = { DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '1' };

/** How many times the delivery queue parked a job (its events stream's `delayed` events). */
async function parkedCount(t: TestApp): Promise<number> {
  const queue = t.app.get(DeliveryQueue).queues[0];
  const client = t.app.get(RedisClients).get('queue');
  const events = (await client.xrange(queue.keys.events, '-', '+')) as [string, string[]][];
  return events.filter(([, fields]) => fields[0] === 'event' && fields[1] === 'delayed').length;
}

/** A burst of submissions to one webhook whose receiver answers after `delayMs`; resolves once all arrived. */
async function burst(t: TestApp, receiver: Receiver) {
  const { api, calculator } = await setupWebhook(t, receiver.url);
  const parkedBefore = await parkedCount(t);
  const submittedAt = await Promise.all(
    Array.from({ length: SUBMISSIONS }, () => submit(api, calculator.id).then(() => Date.now())),
  );
  await waitFor(() => receiver.requests.length === SUBMISSIONS, 10_000, 'every delivery');
  await waitFor(() => receiver.open === 0, 5_000, 'the last answer');
  // Some were queued while the first was in flight, so were turned away; they went one by one.
  const firstAnswer = receiver.requests[0].answeredAt!;
  expect(submittedAt.filter((at) => at < firstAnswer).length).toBeGreaterThanOrEqual(3);
  expect(receiver.maxOpen).toBe(1);
  return { parked: (await parkedCount(t)) - parkedBefore };
}

describe('a job turned away at its host', () => {
  const env = useFastDeliveryApp(ONE_AT_A_TIME);

  it('waits in process while its host frees slots, and takes its turn without parking', async () => {
    const receiver = await env.startReceiver(() => ({ status: 200, delayMs: 30 }));
    const { parked } = await burst(env.t, receiver);
    // Without the wait all but the first would park; a stall over 100 ms on a loaded machine may park one or two.
    expect(parked).toBeLessThanOrEqual(2);
  }, 30_000);

  it('parks once its host has freed no slot for the idle time (100 ms), and still comes in turn', async () => {
    const receiver = await env.startReceiver(() => ({ status: 200, delayMs: 400 }));
    const { parked } = await burst(env.t, receiver);
    expect(parked).toBeGreaterThanOrEqual(1);
  }, 30_000);
});

describe('a job turned away at its host, its turn given by another worker', () => {
  const env = useFastDeliveryApp(ONE_AT_A_TIME);
  let other: Admission | undefined;
  afterAll(() => other?.onModuleDestroy());

  // The test plays the other worker: it holds webhook A's only slot at the host, then frees it with an
  // Admission of its own (its own jobs waiting in process; none here). The app's job for A waits in the
  // app's process meanwhile, kept waiting by the app's own releases at the host (webhook B's stream).
  // The other worker's release gives it its turn and tells the app on the wake channel; without it the
  // job waits out the longest wait (1 s), or its host's idle time once B's stream ends, then parks and
  // finds its turn.
  it('is woken at once by that release, through the wake channel', async () => {
    const t = env.t;
    const receiver = await env.startReceiver(() => ({ status: 200, delayMs: 20 }));
    const { workspace, key } = await createWorkspace(t);
    const api = client(t, key);
    const [calculatorA, calculatorB] = [
      await createCalculator(t, workspace.id),
      await createCalculator(t, workspace.id),
    ];
    const webhookA = await registerWebhook(api, { url: receiver.url, calculators: [calculatorA.id] });
    await registerWebhook(api, { url: receiver.url, calculators: [calculatorB.id] });
    const host = t.app.get(HostAdmission);
    const destination = destinationOf(receiver.url);
    const held = { destination, holder: 'other-worker:1', webhookId: webhookA.id, workspaceId: workspace.id };
    expect(await host.enter({ ...held, jobId: 'other-job', cap: 1 })).toEqual([0, []]);
    other = new Admission(t.config, host, t.app.get(DeliveryQueue), t.app.get(WebhookCaps), t.app.get(RedisClients));

    // B's stream first (about a second of answers, one at a time), then A's delivery.
    const streamB = Promise.all(Array.from({ length: 40 }, () => submit(api, calculatorB.id)));
    await waitFor(() => receiver.requests.length >= 2, 5_000, 'B’s stream under way');
    await submit(api, calculatorA.id);
    const [{ id: jobId }] = await t.dataSource.query('SELECT id FROM deliveries WHERE webhook_id = $1', [webhookA.id]);
    const waiting = hostKeysOf(QueueLayout.of(t.config), destination).waiting;
    const redis = t.app.get(RedisClients).get('admission');
    await waitFor(async () => (await redis.hexists(waiting, jobId)) === 1, 5_000, 'the job in the host’s line');
    await pace(150); // past the host's idle time: the app's releases (B's) keep the job waiting
    other.answered({ ...held, admittedAt: Date.now(), left: false }, { signal: 'ok', latencyMs: 5 });
    const releasedAt = Date.now();
    const toA = () => receiver.requests.find((r) => r.body.includes(webhookA.id));
    const sent = await waitFor(toA, 5_000, 'the delivery to webhook A');
    await streamB;
    // Woken at once: tens of milliseconds. Not woken, it is sent only once it parks, most of a second later.
    // (A stall that parked it before the release is also sent at once: that release promotes it.)
    expect(sent.receivedAt - releasedAt).toBeLessThan(400);
  }, 30_000);
});
