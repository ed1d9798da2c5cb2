import { insertDeliveries, ownerOf } from '../support/delivery-rows.js';
import { setupWebhook, submit, useFastDeliveryApp } from '../support/delivery.js';
import { snapshotDatabase } from '../support/hostile-input.js';
import {
  expectBadRequest,
  expectJson,
  expectNotFound,
  expectTimestamp,
  keysOf,
  removeWebhook,
  type Client,
} from '../support/management-api.js';
import { expectNothingFor, Receiver, waitFor } from '../support/receiver.js';
import { createTestApp, type TestApp } from '../support/test-app.js';
import { ensureBuilt, spawnWorker, type WorkerProcess } from '../support/worker-process.js';

const RECOVERY_KEYS = [
  'completedAt',
  'createdAt',
  'id',
  'matched',
  'requeued',
  'since',
  'status',
  'until',
  'webhookId',
];

interface Recovery {
  id: string;
  webhookId: string;
  since: string;
  until: string;
  status: string;
  matched: number;
  requeued: number;
  createdAt: string;
  completedAt: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

// Spans at least one pass of the recovery runner (every second at most) and the send a requeue causes.
const REQUEUE_WINDOW_MS = 1_500;
/** Fails if the receiver gets any request within REQUEUE_WINDOW_MS: a wrong second requeue would send. */
/** No further request for any of `ids` (the recovered deliveries; another delivery of the webhook may still retry). */
const expectNoSecondRequeue = (receiver: Receiver, ids: string[]) => {
  const ofIds = () => receiver.requests.filter((r) => ids.includes(String(r.headers['webhook-id']))).length;
  const count = ofIds();
  return expectNothingFor(REQUEUE_WINDOW_MS, 'request after every requeued delivery ended', () =>
    ofIds() > count ? `${ofIds() - count} more` : false,
  );
};

async function recover(api: Client, webhookId: string, body: object): Promise<Recovery> {
  const res = await api.post(`/webhooks/${webhookId}/recover`, body);
  expectJson(res, 202);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual(RECOVERY_KEYS);
  return res.body.data as Recovery;
}

async function getRecovery(api: Client, webhookId: string, id: string): Promise<Recovery> {
  const res = await api.get(`/webhooks/${webhookId}/recoveries/${id}`);
  expectJson(res, 200);
  expect(keysOf(res.body)).toEqual(['data']);
  expect(keysOf(res.body.data)).toEqual(RECOVERY_KEYS);
  return res.body.data as Recovery;
}

/** Requests the receiver got, per webhook-id (= delivery id). */
const countsById = (receiver: Receiver): Map<string, number> => {
  const counts = new Map<string, number>();
  for (const r of receiver.requests) {
    const id = String(r.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
};

/** A webhook on `receiver` with one real submission delivered, and the owner of rows to insert. */
async function webhookWithSubmission(t: TestApp, receiver: Receiver) {
  const setup = await setupWebhook(t, receiver.url);
  const submission = await submit(setup.api, setup.calculator.id);
  const owner = ownerOf(setup, submission);
  return { ...setup, submission, owner };
}

const deliveryStates = async (t: TestApp, webhookId: string) =>
  (await t.dataSource.query(
    `SELECT id, status, attempt_count AS "attemptCount", max_attempts AS "maxAttempts",
       (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
     FROM deliveries d WHERE webhook_id = $1`,
    [webhookId],
  )) as { id: string; status: string; attemptCount: number; maxAttempts: number; attempts: number }[];

describe('POST /webhooks/{id}/recover (in-process worker)', () => {
  const env = useFastDeliveryApp();
  let t: TestApp;
  beforeAll(() => {
    t = env.t;
  });

  /**
   * A webhook whose receiver fails everything: `failed` real deliveries (3 attempts each), `skipped`
   * rows from an hour ago, succeeded and pending rows (not recoverable), and failed rows from the day before.
   */
  const failingWebhook = async ({ failed = 2, skipped = 3 } = {}) => {
    const receiver = await env.startReceiver(() => ({ status: 500 }));
    const setup = await webhookWithSubmission(t, receiver);
    for (let i = 1; i < failed; i++) await submit(setup.api, setup.calculator.id, { data: { i } });
    await waitFor(
      async () => (await deliveryStates(t, setup.webhook.id)).every((d) => d.status === 'failed'),
      10_000,
      'the real deliveries to fail',
    );
    const hourAgo = Date.now() - 3_600_000;
    const inRange = await insertDeliveries(
      t,
      setup.owner,
      Array.from({ length: skipped }, (_, i) => ({ status: 'skipped' as const, createdAt: new Date(hourAgo + i) })),
    );
    const notRecoverable = await insertDeliveries(t, setup.owner, [
      { status: 'succeeded', createdAt: new Date(hourAgo) },
      { status: 'cancelled', createdAt: new Date(hourAgo) },
      { status: 'pending', createdAt: new Date(hourAgo) },
      { status: 'failed', createdAt: new Date(hourAgo - 86_400_000) }, // before `since`
    ]);
    return { ...setup, receiver, skippedIds: inRange, notRecoverable, since: iso(hourAgo - 60_000) };
  };

  it('dry run: counts the failed and skipped deliveries of [since, until) and changes nothing', async () => {
    const { api, webhook, since } = await failingWebhook();
    const before = await snapshotDatabase(t);
    const res = await api.post(`/webhooks/${webhook.id}/recover`, { since, dryRun: true });
    expectJson(res, 200);
    expect(res.body).toEqual({ data: { matched: 5 } });
    const narrow = await api.post(`/webhooks/${webhook.id}/recover`, {
      since,
      until: iso(Date.now() - 1_800_000),
      dryRun: true,
    });
    expect(narrow.body).toEqual({ data: { matched: 3 } }); // the skipped rows only
    // The fast worker's runner looks for recoveries every 200 ms: one started by a dry run would show.
    const changed = async () => JSON.stringify(await snapshotDatabase(t)) !== JSON.stringify(before);
    await expectNothingFor(1_200, 'change to the database after a dry run', changed, 200);
    expect(await snapshotDatabase(t)).toEqual(before);
  });

  it('sends every matched delivery again exactly once, same webhook-id, even when it fails again', async () => {
    const { api, webhook, receiver, since, skippedIds, notRecoverable } = await failingWebhook({
      failed: 3,
      skipped: 520, // more than one batch
    });
    const states = await deliveryStates(t, webhook.id);
    const realFailed = states.filter((d) => d.status === 'failed' && d.attempts === 3).map((d) => d.id);
    expect(realFailed).toHaveLength(3);
    const sentBefore = countsById(receiver);

    const created = await recover(api, webhook.id, { since });
    expect(created).toMatchObject({ webhookId: webhook.id, since, status: 'running', matched: 523 });
    expect(created.requeued).toBeLessThanOrEqual(523);
    expect(created.completedAt).toBeNull();
    expectTimestamp(created.createdAt);
    expectTimestamp(created.until);

    const done = await waitFor(
      async () => {
        const r = await getRecovery(api, webhook.id, created.id);
        return r.status === 'completed' ? r : null;
      },
      20_000,
      'the recovery to complete',
    );
    expect(done).toMatchObject({ matched: 523, requeued: 523 });
    expectTimestamp(done.completedAt);
    const ended = await waitFor(
      async () => {
        const now = await deliveryStates(t, webhook.id);
        return now.every((d) => d.status !== 'pending' || notRecoverable.includes(d.id)) ? now : null;
      },
      30_000,
      'every requeued delivery to end',
    );
    await expectNoSecondRequeue(receiver, [...realFailed, ...skippedIds]);

    const sent = countsById(receiver);
    for (const id of [...realFailed, ...skippedIds]) {
      expect({ id, sent: (sent.get(id) ?? 0) - (sentBefore.get(id) ?? 0) }).toEqual({ id, sent: 1 });
    }
    for (const id of notRecoverable) expect(sent.get(id)).toBeUndefined();
    const byId = new Map(ended.map((d) => [d.id, d]));
    for (const id of realFailed) expect(byId.get(id)).toMatchObject({ status: 'failed', attempts: 4, maxAttempts: 4 });
    for (const id of skippedIds) expect(byId.get(id)).toMatchObject({ status: 'failed', attempts: 1, maxAttempts: 1 });
    expect(byId.get(notRecoverable[3])).toMatchObject({ status: 'failed', attempts: 0 });

    // A new recovery of the same range is a new one: each goes once more.
    const again = await recover(api, webhook.id, { since, until: done.until });
    expect(again.matched).toBe(523);
    await waitFor(async () => (await getRecovery(api, webhook.id, again.id)).status === 'completed', 20_000);
  }, 90_000);

  it('a delivery that succeeds on the recovery attempt ends succeeded', async () => {
    const { api, webhook, receiver, since, skippedIds } = await failingWebhook({ failed: 1, skipped: 2 });
    receiver.behaviour = () => ({ status: 200 });
    const created = await recover(api, webhook.id, { since });
    await waitFor(async () => (await getRecovery(api, webhook.id, created.id)).status === 'completed');
    const states = await waitFor(async () => {
      const now = await deliveryStates(t, webhook.id);
      return skippedIds.every((id) => now.find((d) => d.id === id)?.status === 'succeeded') ? now : null;
    });
    expect(states.filter((d) => d.status === 'succeeded')).toHaveLength(4); // 1 real + 2 skipped + 1 seeded succeeded
  });

  describe('rejects with 400 naming the field, changing nothing', () => {
    let api: Client;
    let webhookId: string;
    beforeAll(async () => {
      const setup = await failingWebhook({ failed: 1, skipped: 1 });
      api = setup.api;
      webhookId = setup.webhook.id;
    });
    // The worker quiet (no recovery running, nothing due), so the database changes only by the request.
    beforeEach(() =>
      waitFor(
        async () => {
          const [row] = await t.dataSource.query(
            `SELECT (SELECT count(*) FROM recoveries WHERE status = 'running')
               + (SELECT count(*) FROM deliveries WHERE status = 'pending' AND next_attempt_at < now() + interval '1 hour')
               AS busy`,
          );
          return Number(row.busy) === 0;
        },
        30_000,
        'the worker to be quiet',
      ),
    );

    const now = Date.now();
    it.each([
      [{}, 'since'],
      [{ since: 'yesterday' }, 'since'],
      [{ since: 12345 }, 'since'],
      [{ since: null }, 'since'],
      [{ since: iso(now - 60_000), until: 'tomorrow' }, 'until'],
      [{ since: iso(now - 60_000), until: null }, 'until'],
      [{ since: iso(now - 60_000), until: iso(now - 60_000) }, 'since'],
      [{ since: iso(now - 60_000), until: iso(now - 120_000) }, 'since'],
      [{ since: iso(now + 60_000) }, 'since'], // until defaults to now
      [{ since: iso(now + 60_000), until: iso(now + 120_000) }, 'since'], // until is at most now
      [{ since: iso(now - 31 * 86_400_000) }, 'since'], // older than DELIVERY_RETENTION (30d)
      [{ since: iso(now - 60_000), dryRun: 'yes' }, 'dryRun'],
      [{ since: iso(now - 60_000), force: true }, 'force'],
    ])('%j', async (body, field) => {
      const before = await snapshotDatabase(t);
      expectBadRequest(await api.post(`/webhooks/${webhookId}/recover`, body), field);
      expect(await snapshotDatabase(t)).toEqual(before);
    });

    it('a disabled webhook: enable it first', async () => {
      await t.dataSource.query(`UPDATE webhooks SET disabled_at = now(), disabled_reason = 'manual' WHERE id = $1`, [
        webhookId,
      ]);
      try {
        const before = await snapshotDatabase(t);
        for (const dryRun of [false, true]) {
          const error = expectBadRequest(
            await api.post(`/webhooks/${webhookId}/recover`, { since: iso(Date.now() - 60_000), dryRun }),
          );
          expect(error.message).toMatch(/enable it first/);
        }
        expect(await snapshotDatabase(t)).toEqual(before);
      } finally {
        await t.dataSource.query(`UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL WHERE id = $1`, [
          webhookId,
        ]);
      }
    });
  });

  it("answers 404 for another workspace's webhook or recovery, a removed webhook and an unknown recovery", async () => {
    const mine = await failingWebhook({ failed: 1, skipped: 1 });
    const theirs = await failingWebhook({ failed: 1, skipped: 1 });
    const body = { since: mine.since };
    const theirRecovery = await recover(theirs.api, theirs.webhook.id, body);
    const myRecovery = await recover(mine.api, mine.webhook.id, body);

    expectNotFound(await mine.api.post(`/webhooks/${theirs.webhook.id}/recover`, body));
    expectNotFound(await mine.api.post(`/webhooks/${theirs.webhook.id}/recover`, { ...body, dryRun: true }));
    expectNotFound(await mine.api.get(`/webhooks/${theirs.webhook.id}/recoveries/${theirRecovery.id}`));
    expectNotFound(await mine.api.get(`/webhooks/${mine.webhook.id}/recoveries/${theirRecovery.id}`));
    expectNotFound(await mine.api.get(`/webhooks/${mine.webhook.id}/recoveries/unknownrecovery00000000`));
    expectNotFound(await mine.api.get(`/webhooks/${mine.webhook.id}/recoveries/%00`));
    expect((await getRecovery(mine.api, mine.webhook.id, myRecovery.id)).id).toBe(myRecovery.id);

    await removeWebhook(mine.api, mine.webhook.id);
    expectNotFound(await mine.api.post(`/webhooks/${mine.webhook.id}/recover`, body));
    expectNotFound(await mine.api.get(`/webhooks/${mine.webhook.id}/recoveries/${myRecovery.id}`));
  });
});

describe('recovery carried out by worker processes', () => {
  let t: TestApp;
  let receiver: Receiver;
  const workers: WorkerProcess[] = [];
  const WORKER_ENV = {
    WORKER_CONCURRENCY: '50',
    // The receiver runs in this test's process, which a collection of a large heap can stall for a second:
    // five attempts timing out together would pause its host for 30 s (the breaker), not what is tested here.
    DELIVERY_TIMEOUT_MS: '5000',
    DELIVERY_RETRY_SCHEDULE: '100ms',
    DELIVERY_LOCK_MS: '2000',
    SWEEP_INTERVAL_MS: '1000',
  };

  beforeAll(async () => {
    ensureBuilt();
    t = await createTestApp({ WORKER_ENABLED: 'false' }); // only spawned workers carry recoveries out
  }, 120_000);
  afterEach(async () => {
    for (const w of workers.splice(0)) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    await receiver?.close();
  });
  afterAll(() => t.close());

  const recoveryRow = async (id: string) =>
    (
      (await t.dataSource.query(`SELECT status, matched, requeued FROM recoveries WHERE id = $1`, [id])) as {
        status: string;
        matched: number;
        requeued: number;
      }[]
    )[0];

  it('DELETE of the webhook cancels its running recovery', async () => {
    receiver = await Receiver.start(() => ({ status: 500 }));
    const { api, webhook, owner } = await webhookWithSubmission(t, receiver);
    await insertDeliveries(t, owner, [{ status: 'skipped', createdAt: new Date(Date.now() - 60_000) }]);
    const created = await recover(api, webhook.id, { since: iso(Date.now() - 120_000) });
    expect(created.status).toBe('running');
    await removeWebhook(api, webhook.id);
    const [row] = await t.dataSource.query(`SELECT status, completed_at FROM recoveries WHERE id = $1`, [created.id]);
    expect(row.status).toBe('cancelled');
    expect(row.completed_at).toBeInstanceOf(Date);

    // A canary: a live webhook's recovery, created after the cancelled one. Once the worker has carried it
    // out and its requeued delivery reached its receiver, the worker has run recovery passes and drained
    // the hosts woken before it.
    const canaryReceiver = await Receiver.start();
    try {
      const canary = await webhookWithSubmission(t, canaryReceiver);
      const [canaryDelivery] = await insertDeliveries(t, canary.owner, [
        { status: 'skipped', createdAt: new Date(Date.now() - 60_000) },
      ]);
      const canaryRecovery = await recover(canary.api, canary.webhook.id, { since: iso(Date.now() - 120_000) });

      // A worker started now leaves the cancelled one alone: nothing of the removed webhook is sent.
      workers.push(spawnWorker(t.config, WORKER_ENV));
      await waitFor(
        async () =>
          (await recoveryRow(canaryRecovery.id)).status === 'completed' &&
          canaryReceiver.requests.some((r) => r.headers['webhook-id'] === canaryDelivery),
        30_000,
        'the worker to carry out the canary recovery',
      );
    } finally {
      await canaryReceiver.close();
    }
    expect(await recoveryRow(created.id)).toMatchObject({ status: 'cancelled', requeued: 0 });
    expect(receiver.requests).toHaveLength(0);
  }, 60_000);

  it('resumes after the worker is killed mid-recovery: every matched delivery requeued exactly once', async () => {
    receiver = await Receiver.start(() => ({ status: 500 }));
    const { api, webhook, owner } = await webhookWithSubmission(t, receiver);
    const TOTAL = 3000;
    const start = Date.now() - 600_000;
    const ids = await insertDeliveries(
      t,
      owner,
      Array.from({ length: TOTAL }, (_, i) => ({ status: 'skipped' as const, createdAt: new Date(start + i * 10) })),
    );
    const created = await recover(api, webhook.id, { since: iso(start) });
    expect(created.matched).toBe(TOTAL);

    const first = spawnWorker(t.config, WORKER_ENV);
    workers.push(first);
    await waitFor(async () => (await recoveryRow(created.id)).requeued > 0, 30_000, 'the first batch');
    first.child.kill('SIGKILL');
    await first.exited;
    const midway = await recoveryRow(created.id);
    expect(midway.status).toBe('running');
    expect(midway.requeued).toBeGreaterThan(0);
    expect(midway.requeued).toBeLessThan(TOTAL);

    // Two successors, which share the rest of the recovery batch by batch.
    workers.push(spawnWorker(t.config, WORKER_ENV), spawnWorker(t.config, WORKER_ENV));
    await waitFor(async () => (await recoveryRow(created.id)).status === 'completed', 60_000, 'the recovery');
    expect(await recoveryRow(created.id)).toMatchObject({ matched: TOTAL, requeued: TOTAL });
    const states = await waitFor(
      async () => {
        const now = (await deliveryStates(t, webhook.id)).filter((d) => ids.includes(d.id));
        return now.every((d) => d.status === 'failed') ? now : null;
      },
      90_000,
      'every requeued delivery to be attempted',
    );
    await expectNoSecondRequeue(receiver, ids);
    // Requeued once: one attempt allowed in all (a second requeue after the failed attempt would allow two),
    // plus, for one the killed worker had leased, its attempt of unknown outcome, logged and not counted.
    for (const d of states) {
      expect(d.attempts).toBe(d.attemptCount);
      expect(d.maxAttempts).toBe(d.attemptCount);
      expect(d.attemptCount).toBeLessThanOrEqual(2);
    }
    const sent = countsById(receiver);
    for (const id of ids) expect(sent.get(id) ?? 0).toBeGreaterThanOrEqual(1);
    // At-least-once: a duplicate at the receiver can only be an attempt the killed worker had in flight.
    const duplicates = ids.reduce((n, id) => n + (sent.get(id)! - 1), 0);
    expect(duplicates).toBeLessThanOrEqual(Number(WORKER_ENV.WORKER_CONCURRENCY));
    expect([...sent.keys()].filter((id) => !ids.includes(id))).toHaveLength(1); // the real submission's
  }, 180_000);
});
