import { expectNothingFor, pace, Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// A retry the removal failed to cancel would come within 150 ms (+20%), a swept delivery within a sweep (200 ms).
const AFTER_DELETE_WINDOW_MS = 1_500;
const expectNothingSentAfter = (receiver: Receiver, removedAt: number) =>
  expectNothingFor(AFTER_DELETE_WINDOW_MS, 'request after DELETE returned', () =>
    receiver.requests.some((r) => r.receivedAt > removedAt),
  );

describe('DELETE /webhooks/{id} and deliveries', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await createTestApp({
      WORKER_ENABLED: 'true',
      WORKER_CONCURRENCY: '10',
      DELIVERY_TIMEOUT_MS: '2000',
      DELIVERY_RETRY_SCHEDULE: '150ms,150ms,150ms,150ms,150ms,150ms,150ms,150ms',
      SWEEP_INTERVAL_MS: '200',
    });
  });
  afterEach(() => receiver.close());
  afterAll(() => t.close());

  async function setup() {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const hook = await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .send({ url: receiver.url, calculators: [calc.id] })
      .expect(200);
    const submit = (n: number) =>
      t.http().post(`/api/v1/calculators/${calc.id}/submissions`).set('x-ac-api-key', key).send({ data: { n } });
    const remove = async () => {
      await t.http().delete(`/api/v1/webhooks/${hook.body.data.id}`).set('x-ac-api-key', key).expect(200);
      return Date.now();
    };
    return { webhookId: hook.body.data.id as string, submit, remove };
  }

  const statuses = async (webhookId: string) =>
    (
      (await t.dataSource.query(`SELECT status FROM deliveries WHERE webhook_id = $1`, [webhookId])) as {
        status: string;
      }[]
    ).map((r) => r.status);

  it('cancels pending retries: nothing reaches the receiver after DELETE has returned', async () => {
    receiver = await Receiver.start(() => ({ status: 500 }));
    const { webhookId, submit, remove } = await setup();
    await submit(1).expect(200);
    await waitFor(() => receiver.requests.length >= 2, 5000, 'a retry');
    const removedAt = await remove();
    await expectNothingSentAfter(receiver, removedAt);
    expect(receiver.requests.filter((r) => r.receivedAt > removedAt)).toEqual([]);
    expect(await statuses(webhookId)).toEqual(['cancelled']);
  });

  it('waits for an attempt in flight, and sends nothing after returning, with submissions in flight', async () => {
    receiver = await Receiver.start(() => ({ status: 200, delayMs: 300 }));
    const { webhookId, submit, remove } = await setup();
    // A steady stream of submissions that goes on until well after DELETE has returned.
    let removedAt = 0;
    const sent: { startedAt: number; id?: string; status?: number }[] = [];
    const stream = (async () => {
      for (let n = 0; !removedAt || Date.now() < removedAt + 300; n++) {
        const entry: (typeof sent)[number] = { startedAt: Date.now() };
        sent.push(entry);
        void submit(n).then((r) => Object.assign(entry, { id: r.body.data?.id, status: r.status }));
        await pace(20);
      }
    })();
    await waitFor(() => receiver.requests.length >= 3, 5000, 'attempts in flight');
    removedAt = await remove();
    await stream;
    await waitFor(() => sent.every((e) => e.status !== undefined), 10_000, 'every submission to be answered');
    expect(sent.every((e) => e.status === 200)).toBe(true);
    await expectNothingSentAfter(receiver, removedAt);
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests.filter((r) => r.receivedAt > removedAt)).toEqual([]);
    const final = await statuses(webhookId);
    // Every delivery either reached the receiver before DELETE returned or was cancelled.
    expect(final.filter((s) => s !== 'succeeded' && s !== 'cancelled')).toEqual([]);
    expect(final.filter((s) => s === 'succeeded')).toHaveLength(
      new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size,
    );
    // Submissions sent after DELETE returned created no delivery for the removed webhook.
    const afterRemoval = sent.filter((e) => e.startedAt > removedAt).map((e) => e.id);
    expect(afterRemoval.length).toBeGreaterThan(0);
    const [{ count }] = await t.dataSource.query(
      'SELECT count(*)::int AS count FROM deliveries WHERE webhook_id = $1 AND submission_id = ANY($2)',
      [webhookId, afterRemoval],
    );
    expect(count).toBe(0);
  });
});
