import { createId } from '@paralleldrive/cuid2';
import { DeliveryQueue } from '../../src/delivery/delivery-queue.js';
import { DeliverySweeper } from '../../src/delivery/scheduled/delivery.sweeper.js';
import { DeliveryStore } from '../../src/delivery/store/delivery-store.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const URL = 'https://receiver.example.com/hook';
// Overdue deliveries in five groups of 300 sharing a next_attempt_at: the sweeper's pages of 1,000
// end inside the fourth group, so paging must go on by id among equal times.
const OVERDUE = 1500;
const GROUP = 300;

describe('delivery sweeper', () => {
  let t: TestApp;
  let queue: DeliveryQueue;
  let sweeper: DeliverySweeper;

  beforeAll(async () => {
    // No in-process worker: the jobs stay where the test puts them, and the test runs each pass.
    t = await createTestApp();
    queue = t.app.get(DeliveryQueue);
    sweeper = new DeliverySweeper(t.app.get(DeliveryStore), t.config, queue);
  });
  afterAll(() => t.close());

  /** `count` pending deliveries of the webhook, due about two hours ago, GROUP to a second; ids in sweep order. */
  async function insertOverdue(setup: Awaited<ReturnType<typeof setupWebhook>>, submissionId: string, count: number) {
    const ids = Array.from({ length: count }, () => createId());
    await t.dataSource.query(
      `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, status, attempt_count, max_attempts,
                               next_attempt_at)
       SELECT id, $2, $3, $4, 'pending', 0, 8, now() - interval '2 hours' + make_interval(secs => (n - 1) / $5)
       FROM unnest($1::varchar[]) WITH ORDINALITY AS u(id, n)`,
      [ids, setup.workspace.id, setup.webhook.id, submissionId, GROUP],
    );
    const ordered: { id: string }[] = await t.dataSource.query(
      `SELECT id FROM deliveries WHERE id = ANY($1) ORDER BY next_attempt_at, id`,
      [ids],
    );
    return ordered.map((d) => d.id);
  }

  it('one pass enqueues every overdue delivery without a job, however many with a job are older', async () => {
    const setup = await setupWebhook(t, URL);
    const submission = await submit(setup.api, setup.calculator.id);
    const overdue = await insertOverdue(setup, submission.id, OVERDUE);
    const rows: { id: string; created_at: Date }[] = await t.dataSource.query(
      `SELECT id, created_at FROM deliveries WHERE id = ANY($1)`,
      [overdue],
    );
    const createdAt = new Map(rows.map((r) => [r.id, r.created_at]));
    await queue.enqueue(
      overdue.map((deliveryId) => ({
        deliveryId,
        createdAt: createdAt.get(deliveryId)!,
        url: URL,
        workspaceId: setup.workspace.id,
        webhookId: setup.webhook.id,
      })),
    );
    // Lost jobs: the first of the second page (same next_attempt_at as the last of the first) and the newest.
    const lost = [overdue[1000], overdue[OVERDUE - 1]];
    for (const id of lost) await queue.queues[0].remove(id);
    for (const id of lost) expect(await queue.queues[0].getJob(id)).toBeUndefined();

    const enqueued = await sweeper.sweepOnce();

    for (const id of lost) expect((await queue.queues[0].getJob(id))?.data).toMatchObject({ deliveryId: id });
    // Only the lost ones were added: the others' jobs were found and left alone.
    expect(enqueued).toBe(lost.length);
    // The jobs that were there are left as they were; the submission's own delivery is not overdue yet.
    const counts = await queue.queues[0].getJobCounts('waiting');
    expect(counts.waiting).toBe(OVERDUE + 1);
  }, 60_000);
});
