import { jest } from '@jest/globals';
import { createId } from '@paralleldrive/cuid2';
import { API_KEY_HEADER } from '../../src/auth/api-key.js';
import { isCuid2 } from '../../src/core/ids.js';
import { destinationOf, drainJobId, HostWakes } from '../../src/delivery/host-wakes.js';
import { countRows, submit, SUBMISSION_KEYS } from '../support/delivery.js';
import {
  API,
  client,
  expectBadRequest,
  expectError,
  expectNotAuthenticated,
  expectNotFound,
  expectTimestamp,
  keysOf,
  registerWebhook,
  removeWebhook,
  type Client,
} from '../support/management-api.js';
import { waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const RECEIVER = 'https://receiver.example.com/hook';

// The worker is off: deliveries stay as the submission wrote them.
describe('POST /calculators/{calculatorId}/submissions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ DELIVERY_RETRY_SCHEDULE: '1s,2s,3s' });
  });
  afterAll(() => t.close());

  /** A workspace with a calculator that has one webhook. */
  const setup = async () => {
    const { workspace, key } = await createWorkspace(t);
    const api = client(t, key);
    const calculator = await createCalculator(t, workspace.id);
    const webhook = await registerWebhook(api, { url: RECEIVER, calculators: [calculator.id] });
    return { workspace, key, api, calculator, webhook };
  };

  const calculatorCounters = async (api: Client, calculatorId: string) => {
    const res = await api.get('/calculators?limit=100');
    expect(res.status).toBe(200);
    const calc = (res.body.data as { id: string; submissionsCount: number; lastSubmissionAt: string | null }[]).find(
      (c) => c.id === calculatorId,
    );
    return { submissionsCount: calc!.submissionsCount, lastSubmissionAt: calc!.lastSubmissionAt };
  };

  describe('a valid submission', () => {
    it('answers 200 { data: Submission } with exactly its seven fields and the defaults', async () => {
      const { api, calculator } = await setup();
      const before = Date.now();
      const res = await api.post(`/calculators/${calculator.id}/submissions`, { data: { price: 12.5, plan: 'pro' } });

      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(keysOf(res.body)).toEqual(['data']);
      const submission = res.body.data;
      expect(keysOf(submission)).toEqual(SUBMISSION_KEYS);
      expect(isCuid2(submission.id)).toBe(true);
      expect(submission).toMatchObject({
        calculatorId: calculator.id,
        finished: true,
        data: { price: 12.5, plan: 'pro' },
        meta: {},
      });
      expectTimestamp(submission.createdAt);
      expect(submission.updatedAt).toBe(submission.createdAt);
      expect(Date.parse(submission.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(submission.createdAt)).toBeLessThanOrEqual(Date.now() + 1000);
    });

    it('keeps finished: false, the meta given, and an empty data object', async () => {
      const { api, calculator } = await setup();
      const submission = await submit(api, calculator.id, { data: {}, finished: false, meta: { utm: 'x', n: [1] } });
      expect(submission).toMatchObject({ finished: false, data: {}, meta: { utm: 'x', n: [1] } });
    });

    it('stores what it returns', async () => {
      const { workspace, api, calculator } = await setup();
      const submission = await submit(api, calculator.id, { data: { a: 'é😀', b: { c: [null, false] } } });
      const [row] = await t.dataSource.query(
        `SELECT id, workspace_id, calculator_id, finished, data, meta, created_at FROM submissions WHERE id = $1`,
        [submission.id],
      );
      expect(row).toEqual({
        id: submission.id,
        workspace_id: workspace.id,
        calculator_id: calculator.id,
        finished: true,
        data: { a: 'é😀', b: { c: [null, false] } },
        meta: {},
        created_at: new Date(submission.createdAt),
      });
    });

    it('bumps the calculator’s submissionsCount and lastSubmissionAt (GET /calculators)', async () => {
      const { api, calculator } = await setup();
      expect(await calculatorCounters(api, calculator.id)).toEqual({ submissionsCount: 0, lastSubmissionAt: null });
      await submit(api, calculator.id);
      const last = await submit(api, calculator.id);
      expect(await calculatorCounters(api, calculator.id)).toEqual({
        submissionsCount: 2,
        lastSubmissionAt: last.createdAt,
      });
    });

    it('accepts a body just under the 256 KiB limit', async () => {
      const { api, calculator } = await setup();
      const submission = await submit(api, calculator.id, { data: { blob: 'x'.repeat(250 * 1024) } });
      expect((submission.data.blob as string).length).toBe(250 * 1024);
    });
  });

  describe('the outbox', () => {
    const deliveryRows = (submissionId: string) =>
      t.dataSource.query(
        `SELECT id, webhook_id, status, attempt_count, max_attempts, next_attempt_at, host, next_trigger, created_at
         FROM deliveries WHERE submission_id = $1 ORDER BY webhook_id`,
        [submissionId],
      );

    it('writes one pending delivery per active webhook of the calculator, at its host, and wakes the hosts', async () => {
      const { workspace, api, calculator, webhook } = await setup();
      const elsewhere = `https://${createId()}.example.com:8443/hook`;
      const second = await registerWebhook(api, { url: elsewhere, calculators: [calculator.id] });
      const removed = await registerWebhook(api, { url: `${RECEIVER}/3`, calculators: [calculator.id] });
      await removeWebhook(api, removed.id);
      const otherCalculator = await createCalculator(t, workspace.id, 'Other');
      await registerWebhook(api, { url: `${RECEIVER}/4`, calculators: [otherCalculator.id] });

      const submission = await submit(api, calculator.id);
      const rows = await deliveryRows(submission.id);
      expect(rows.map((r: { webhook_id: string }) => r.webhook_id)).toEqual([webhook.id, second.id].sort());
      const hosts = new Map([
        [webhook.id, destinationOf(RECEIVER)],
        [second.id, destinationOf(elsewhere)],
      ]);
      const [queue] = t.app.get(HostWakes).queues; // one shard here
      for (const row of rows) {
        const host = hosts.get(row.webhook_id)!;
        expect(row).toMatchObject({
          status: 'pending',
          attempt_count: 0,
          max_attempts: 4,
          host,
          next_trigger: 'scheduled',
        });
        expect(row.next_attempt_at).toEqual(new Date(submission.createdAt));
        expect(isCuid2(row.id)).toBe(true);
        // Its host's one wake (no worker runs here), due now (waiting); nothing in Redis names the delivery.
        const job = await queue.getJob(drainJobId(host));
        expect(job?.data).toEqual({ host });
        expect(await job?.getState()).toBe('waiting');
        expect(await queue.getJob(row.id)).toBeUndefined();
      }
      expect(await countRows(t, 'deliveries', workspace.id)).toBe(2);
    });

    it('wakes the hosts of submissions that commit while a wake is out together, in one round trip', async () => {
      const { workspace, api } = await setup();
      // A calculator per host, each host new: every submission has a wake of its own to add.
      const calculators = [];
      for (let i = 0; i < 10; i++) {
        const calculator = await createCalculator(t, workspace.id, `Host ${i}`);
        await registerWebhook(api, { url: `https://${createId()}.example.com/hook`, calculators: [calculator.id] });
        calculators.push(calculator);
      }
      const wakes = t.app.get(HostWakes);
      const [queue] = wakes.queues; // one shard here
      // The real methods, watched: the first addBulk is held until every submission has handed its wake over.
      const addBulk = queue.addBulk.bind(queue);
      const wakeOrThrow = wakes.wakeOrThrow.bind(wakes);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const bulks: number[] = [];
      let handedOver = 0;
      const bulkSpy = jest.spyOn(queue, 'addBulk').mockImplementation(async (jobs) => {
        bulks.push(jobs.length);
        if (bulks.length === 1) await held;
        return addBulk(jobs);
      });
      const wakeSpy = jest.spyOn(wakes, 'wakeOrThrow').mockImplementation((...args) => {
        handedOver++;
        return wakeOrThrow(...args);
      });
      try {
        const first = submit(api, calculators[0].id);
        await waitFor(() => bulks.length === 1);
        const others = calculators.slice(1).map((calculator) => submit(api, calculator.id));
        await waitFor(() => handedOver === 10);
        release();
        const submissions = await Promise.all([first, ...others]);
        expect(bulks).toEqual([1, 9]);
        const rows: { host: string }[] = await t.dataSource.query(
          `SELECT host FROM deliveries WHERE submission_id = ANY($1)`,
          [submissions.map((s) => s.id)],
        );
        expect(new Set(rows.map((r) => r.host)).size).toBe(10);
        for (const { host } of rows) expect((await queue.getJob(drainJobId(host)))?.data).toEqual({ host });
      } finally {
        release();
        bulkSpy.mockRestore();
        wakeSpy.mockRestore();
      }
    });

    it('writes a delivery, at its url’s host, for every webhook bound since the calculator’s last submission', async () => {
      const { api, calculator, webhook } = await setup();
      const first = await submit(api, calculator.id);
      expect(await deliveryRows(first.id)).toHaveLength(1);
      const added = [];
      for (let i = 2; i <= 5; i++) {
        added.push(
          await registerWebhook(api, { url: `https://${createId()}.example.com/${i}`, calculators: [calculator.id] }),
        );
      }
      const urls = new Map([webhook, ...added].map((w) => [w.id, w.url]));
      const second = await submit(api, calculator.id);
      const rows: { id: string; webhook_id: string; host: string }[] = await deliveryRows(second.id);
      expect(rows.map((r) => r.webhook_id)).toEqual([...urls.keys()].sort());
      for (const row of rows) {
        const host = destinationOf(urls.get(row.webhook_id)!);
        expect(row.host).toBe(host);
        expect((await t.app.get(HostWakes).queues[0].getJob(drainJobId(host)))?.data).toEqual({ host });
      }
      await removeWebhook(api, added[0].id);
      await removeWebhook(api, added[1].id);
      const third = await submit(api, calculator.id);
      expect((await deliveryRows(third.id)).map((r: { webhook_id: string }) => r.webhook_id)).toEqual(
        [webhook.id, added[2].id, added[3].id].sort(),
      );
    });

    it('writes no delivery for a calculator without webhooks', async () => {
      const { workspace, api } = await setup();
      const bare = await createCalculator(t, workspace.id, 'No webhooks');
      const submission = await submit(api, bare.id);
      expect(await deliveryRows(submission.id)).toEqual([]);
    });
  });

  describe('bad input: 4xx and nothing written', () => {
    /** Runs `request` and checks it left no submission, delivery or counter change behind. */
    const expectNothingWritten = async (
      ctx: Awaited<ReturnType<typeof setup>>,
      request: () => Promise<void>,
    ): Promise<void> => {
      await request();
      expect(await countRows(t, 'submissions', ctx.workspace.id)).toBe(0);
      expect(await countRows(t, 'deliveries', ctx.workspace.id)).toBe(0);
      expect(await calculatorCounters(ctx.api, ctx.calculator.id)).toEqual({
        submissionsCount: 0,
        lastSubmissionAt: null,
      });
    };

    it.each([
      ['data missing', {}, 'data'],
      ['data an array', { data: [1, 2] }, 'data'],
      ['data a string', { data: 'answers' }, 'data'],
      ['data null', { data: null }, 'data'],
      ['data a number', { data: 7 }, 'data'],
      ['finished a string', { data: {}, finished: 'yes' }, 'finished'],
      ['finished a number', { data: {}, finished: 1 }, 'finished'],
      ['finished null', { data: {}, finished: null }, 'finished'],
      ['meta an array', { data: {}, meta: [] }, 'meta'],
      ['meta a string', { data: {}, meta: 'x' }, 'meta'],
      ['meta null', { data: {}, meta: null }, 'meta'],
      ['an unknown field', { data: {}, calculatorId: 'x' }, 'calculatorId'],
      ['a NUL character in data', { data: { a: 'x\u0000y' } }, 'data'],
      ['a NUL character in a key of data', { data: { ['k\u0000']: 1 } }, 'data'],
      ['an unpaired surrogate in data', { data: { a: ['\ud800'] } }, 'data'],
      ['a NUL character in meta', { data: {}, meta: { a: '\u0000' } }, 'meta'],
    ])('400 naming the field for %s', async (_name, body, field) => {
      const ctx = await setup();
      await expectNothingWritten(ctx, async () => {
        expectBadRequest(await ctx.api.post(`/calculators/${ctx.calculator.id}/submissions`, body), field);
      });
    });

    it.each([
      ['malformed JSON', '{"data":', 'application/json'],
      ['a JSON array body', '[{"data":{}}]', 'application/json'],
      ['a non-JSON content type', 'data=1', 'application/x-www-form-urlencoded'],
    ])('400 for %s', async (_name, raw, type) => {
      const ctx = await setup();
      await expectNothingWritten(ctx, async () => {
        const res = await ctx.api.request('post', `/calculators/${ctx.calculator.id}/submissions`).type(type).send(raw);
        expectBadRequest(res);
      });
    });

    it('413 payload_too_large for a body over 256 KiB', async () => {
      const ctx = await setup();
      await expectNothingWritten(ctx, async () => {
        const res = await ctx.api.post(`/calculators/${ctx.calculator.id}/submissions`, {
          data: { blob: 'x'.repeat(257 * 1024) },
        });
        expectError(res, 413, 'payload_too_large');
      });
    });

    it.each([
      ['an unknown calculator', () => createId()],
      ['an id that is not a CUID2', () => 'not-a-calculator!'],
      ['an id with a NUL byte', () => '%00'],
    ])('404 for %s', async (_name, id) => {
      const ctx = await setup();
      await expectNothingWritten(ctx, async () => {
        expectNotFound(await ctx.api.post(`/calculators/${id()}/submissions`, { data: {} }));
      });
    });

    it('404 for a calculator of another workspace, whose counters stay unchanged', async () => {
      const ctx = await setup();
      const other = await setup();
      await expectNothingWritten(other, async () => {
        await expectNothingWritten(ctx, async () => {
          expectNotFound(await ctx.api.post(`/calculators/${other.calculator.id}/submissions`, { data: {} }));
        });
      });
    });

    it('401 without a key or with an unknown key', async () => {
      const ctx = await setup();
      await expectNothingWritten(ctx, async () => {
        const path = `${API}/calculators/${ctx.calculator.id}/submissions`;
        expectNotAuthenticated(await t.http().post(path).send({ data: {} }));
        expectNotAuthenticated(
          await t
            .http()
            .post(path)
            .set(API_KEY_HEADER, `${ctx.key.slice(0, -4)}xxxx`)
            .send({ data: {} }),
        );
      });
    });
  });

  // Submissions and deliveries do not key their workspace_id to workspaces:
  // removing a workspace must still remove them, through its calculators' and webhooks' cascades.
  it('a workspace deleted from the database takes its submissions and deliveries, test ones included', async () => {
    const ctx = await setup();
    const other = await setup();
    await submit(ctx.api, ctx.calculator.id);
    await submit(other.api, other.calculator.id);
    expect((await ctx.api.post(`/webhooks/${ctx.webhook.id}/test`)).status).toBe(202);
    expect(await countRows(t, 'submissions', ctx.workspace.id)).toBe(1);
    expect(await countRows(t, 'deliveries', ctx.workspace.id)).toBe(2);

    await t.dataSource.query('DELETE FROM workspaces WHERE id = $1', [ctx.workspace.id]);

    expect(await countRows(t, 'submissions', ctx.workspace.id)).toBe(0);
    expect(await countRows(t, 'deliveries', ctx.workspace.id)).toBe(0);
    expect(await countRows(t, 'submissions', other.workspace.id)).toBe(1);
    expect(await countRows(t, 'deliveries', other.workspace.id)).toBe(1);
  });
});
