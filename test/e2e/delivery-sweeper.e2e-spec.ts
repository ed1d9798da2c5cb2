import type { PoolClient } from 'pg';
import { createId } from '@paralleldrive/cuid2';
import { RedisClients } from '../../src/core/redis/redis.module.js';
import { drainJobId, HostWakes } from '../../src/delivery/host-wakes.js';
import { DeliverySweeper } from '../../src/delivery/scheduled/delivery.sweeper.js';
import { OVERDUE_HOSTS as HOSTS_PAGE } from '../../src/delivery/store/delivery-statements.js';
import { DeliveryStore } from '../../src/delivery/store/delivery-store.js';
import { deliveryReads } from '../support/delivery-rows.js';
import { setupWebhook, submit } from '../support/delivery.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const URL = 'https://receiver.example.com/hook';
// Hosts with overdue deliveries: the sweeper's pages of 500 hosts end twice among them, so paging must go
// on after the last host of a page.
const OVERDUE_HOSTS = 1_100;
// One host's backlog: a pass wakes its host once, whatever the number of its deliveries.
const BACKLOG = 1_500;

describe('delivery sweeper', () => {
  let t: TestApp;
  let wakes: HostWakes;
  let sweeper: DeliverySweeper;

  beforeAll(async () => {
    // No in-process worker: the wakes stay where the sweeper leaves them, and the test runs each pass.
    t = await createTestApp();
    wakes = t.app.get(HostWakes);
    sweeper = new DeliverySweeper(t.app.get(DeliveryStore), t.config, wakes);
  });
  afterAll(() => t.close());

  /** Pending deliveries of the webhook at `hosts` (one each, or `each`), due at now + `dueInMs`. */
  async function insertPending(
    setup: Awaited<ReturnType<typeof setupWebhook>>,
    submissionId: string,
    hosts: string[],
    dueInMs: number,
    each = 1,
  ) {
    const rows = hosts.flatMap((host) => Array.from({ length: each }, () => ({ id: createId(), host })));
    await t.dataSource.query(
      `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, status, attempt_count, max_attempts,
                               next_attempt_at, host)
       SELECT u.id, $3, $4, $5, 'pending', 0, 8, now() + make_interval(secs => $6::float / 1000), u.host
       FROM unnest($1::varchar[], $2::varchar[]) AS u(id, host)`,
      [rows.map((r) => r.id), rows.map((r) => r.host), setup.workspace.id, setup.webhook.id, submissionId, dueInMs],
    );
  }

  /** When the host's wake is due (ms), or null when it has none; BullMQ scores a delayed job by ms times 0x1000. */
  async function wakeAt(host: string): Promise<number | null> {
    const queue = wakes.queueOf(host);
    const job = await queue.getJob(drainJobId(host));
    if (!job) return null;
    expect(job.data).toEqual({ host });
    const score = await t.app.get(RedisClients).get('queue').zscore(queue.toKey('delayed'), job.id!);
    return score === null ? job.timestamp : Math.floor(Number(score) / 0x1000);
  }

  it('one pass wakes every host with a delivery overdue by a sweep interval, once each, and no other', async () => {
    const setup = await setupWebhook(t, URL);
    const submission = await submit(setup.api, setup.calculator.id);
    const overdue = Array.from({ length: OVERDUE_HOSTS }, (_, i) => `h${String(i).padStart(4, '0')}.example.com`);
    await insertPending(setup, submission.id, overdue, -2 * 3_600_000);
    await insertPending(setup, submission.id, ['backlog.example.com'], -2 * 3_600_000, BACKLOG);
    await insertPending(setup, submission.id, ['later.example.com'], 3_600_000);
    // Due now: within the sweep interval its own wake (made with it) is still to come.
    await insertPending(setup, submission.id, ['recent.example.com'], 0);
    // One overdue host's wake is there already, one is left too late (a move that was lost): the first is
    // left as it is, the second is moved to the host's due time.
    const [kept, moved] = [overdue[0], overdue[OVERDUE_HOSTS - 1]];
    await wakes.wake([{ host: kept }, { host: moved, at: new Date(Date.now() + 3_600_000) }]);
    const keptAt = await wakeAt(kept);
    expect(await wakeAt(moved)).toBeGreaterThan(Date.now() + 3_000_000);

    const woken = await sweeper.sweepOnce();
    const after = Date.now();

    expect(woken).toBe(OVERDUE_HOSTS + 1);
    for (const host of [...overdue, 'backlog.example.com']) expect(await wakeAt(host)).toBeLessThanOrEqual(after);
    expect(await wakeAt(kept)).toBe(keptAt);
    for (const host of ['later.example.com', 'recent.example.com']) expect(await wakeAt(host)).toBeNull();
    // One job per woken host and nothing else: Redis holds hosts, not deliveries. The submission's own
    // delivery's host (receiver.example.com) was woken by the submission.
    const counts = await wakes.queues[0].getJobCounts('waiting', 'delayed', 'active');
    expect(counts.waiting + counts.delayed + counts.active).toBe(OVERDUE_HOSTS + 2);
  }, 60_000);

  // Its cost follows hosts: a step to the next host reads an entry or two of each partition's index,
  // however many deliveries wait at a host (planned on an empty partition beside one without statistics, a
  // plain statement once sorted them all at each step; attempt-claims checks the function's plan settings).
  it('a page of hosts reads a few index entries per host, never a host’s whole backlog', async () => {
    const setup = await setupWebhook(t, URL);
    const submission = await submit(setup.api, setup.calculator.id);
    await insertPending(setup, submission.id, ['zz-deep.example.com'], -3_600_000, BACKLOG);
    const hosts = Array.from({ length: 20 }, (_, i) => `zz${i}.example.com`);
    await insertPending(setup, submission.id, hosts, -3_600_000);
    // A new connection plans the page now, on the partitions as they are; the page starts after the hosts
    // of the test before (zz sorts after them).
    const runner = t.dataSource.createQueryRunner();
    try {
      const client = (await runner.connect()) as PoolClient;
      const indexReads = () => deliveryReads(client, 'indexes');
      await runner.startTransaction();
      const before = await indexReads();
      const page = (await runner.query(HOSTS_PAGE.text, ['zz', 500])) as { host: string }[];
      const read = (await indexReads()) - before;
      await runner.rollbackTransaction();
      expect(page.map((r) => r.host).sort()).toEqual(['zz-deep.example.com', ...hosts].sort());
      expect(read).toBeLessThan(BACKLOG);
    } finally {
      await runner.release();
    }
  });
});
