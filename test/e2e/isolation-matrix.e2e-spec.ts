import type { Response } from 'supertest';
import { destinationOf, drainJobId, HostWakes } from '../../src/delivery/host-wakes.js';
import { snapshotDatabase } from '../support/hostile-input.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNotFound,
  registerWebhook,
  type Client,
} from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

interface Tenant {
  name: string;
  api: Client;
  workspaceId: string;
  calculatorId: string;
  webhookId: string;
  /** Ended, so a retry by its own workspace would be accepted. */
  deliveryId: string;
  /** Running (no worker in this app). */
  recoveryId: string;
  operationalWebhookId: string;
}

const RECOVER_BODY = () => ({ since: new Date(Date.now() - 3_600_000).toISOString() });

/** Each operation, with the ids it names taken from the other workspace (and, where it names two, mixed). */
const FOREIGN_OPERATIONS: [string, (own: Tenant, other: Tenant) => Promise<Response>][] = [
  ['GET /webhooks/{id}', (own, other) => own.api.get(`/webhooks/${other.webhookId}`)],
  ['DELETE /webhooks/{id}', (own, other) => own.api.delete(`/webhooks/${other.webhookId}`)],
  ['GET /webhooks/{id}/secret', (own, other) => own.api.get(`/webhooks/${other.webhookId}/secret`)],
  [
    'PATCH /webhooks/{id}',
    (own, other) => own.api.patch(`/webhooks/${other.webhookId}`, { name: 'taken', headers: { 'x-a': 'b' } }),
  ],
  ['GET /webhooks/{id}/settings', (own, other) => own.api.get(`/webhooks/${other.webhookId}/settings`)],
  ['GET /webhooks/{id}/deliveries', (own, other) => own.api.get(`/webhooks/${other.webhookId}/deliveries`)],
  [
    'GET /webhooks/{id}/deliveries/{id}',
    (own, other) => own.api.get(`/webhooks/${other.webhookId}/deliveries/${other.deliveryId}`),
  ],
  [
    'GET /webhooks/{own id}/deliveries/{foreign id}',
    (own, other) => own.api.get(`/webhooks/${own.webhookId}/deliveries/${other.deliveryId}`),
  ],
  [
    'GET /webhooks/{foreign id}/deliveries/{own id}',
    (own, other) => own.api.get(`/webhooks/${other.webhookId}/deliveries/${own.deliveryId}`),
  ],
  [
    'POST /webhooks/{id}/deliveries/{id}/retry',
    (own, other) => own.api.post(`/webhooks/${other.webhookId}/deliveries/${other.deliveryId}/retry`),
  ],
  [
    'POST /webhooks/{own id}/deliveries/{foreign id}/retry',
    (own, other) => own.api.post(`/webhooks/${own.webhookId}/deliveries/${other.deliveryId}/retry`),
  ],
  ['GET /deliveries/{id}', (own, other) => own.api.get(`/deliveries/${other.deliveryId}`)],
  ['POST /webhooks/{id}/recover', (own, other) => own.api.post(`/webhooks/${other.webhookId}/recover`, RECOVER_BODY())],
  [
    'POST /webhooks/{id}/recover (dry run)',
    (own, other) => own.api.post(`/webhooks/${other.webhookId}/recover`, { ...RECOVER_BODY(), dryRun: true }),
  ],
  [
    'GET /webhooks/{id}/recoveries/{id}',
    (own, other) => own.api.get(`/webhooks/${other.webhookId}/recoveries/${other.recoveryId}`),
  ],
  [
    'GET /webhooks/{own id}/recoveries/{foreign id}',
    (own, other) => own.api.get(`/webhooks/${own.webhookId}/recoveries/${other.recoveryId}`),
  ],
  ['GET /webhooks/{id}/health', (own, other) => own.api.get(`/webhooks/${other.webhookId}/health`)],
  ['POST /webhooks/{id}/disable', (own, other) => own.api.post(`/webhooks/${other.webhookId}/disable`)],
  ['POST /webhooks/{id}/enable', (own, other) => own.api.post(`/webhooks/${other.webhookId}/enable`)],
  ['POST /webhooks/{id}/test', (own, other) => own.api.post(`/webhooks/${other.webhookId}/test`)],
  [
    'POST /webhooks/{id}/secret/rotate',
    (own, other) => own.api.post(`/webhooks/${other.webhookId}/secret/rotate`, { overlapSeconds: 60 }),
  ],
  [
    'POST /calculators/{id}/submissions',
    (own, other) => own.api.post(`/calculators/${other.calculatorId}/submissions`, { data: { a: 1 } }),
  ],
  [
    'GET /operational-webhooks/{id}',
    (own, other) => own.api.get(`/operational-webhooks/${other.operationalWebhookId}`),
  ],
  [
    'DELETE /operational-webhooks/{id}',
    (own, other) => own.api.delete(`/operational-webhooks/${other.operationalWebhookId}`),
  ],
];

describe('isolation matrix: two workspaces, every endpoint', () => {
  let t: TestApp;
  let a: Tenant;
  let b: Tenant;

  async function tenant(name: string): Promise<Tenant> {
    const { workspace, key } = await createWorkspace(t, name);
    const api = client(t, key);
    const calculatorId = (await createCalculator(t, workspace.id, `${name} calculator`)).id;
    const { id: webhookId } = await registerWebhook(api, {
      url: `https://${name.toLowerCase()}.example.com/hook`,
      calculators: [calculatorId],
    });
    expectJson(await api.post(`/calculators/${calculatorId}/submissions`, { data: { from: name } }), 200);
    const [[{ id: deliveryId }]] = await t.dataSource.query(
      `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, completed_at = now()
       WHERE webhook_id = $1 RETURNING id`,
      [webhookId],
    );
    const recovery = await api.post(`/webhooks/${webhookId}/recover`, RECOVER_BODY());
    expectJson(recovery, 202);
    const operational = await api.post('/operational-webhooks', {
      url: `https://${name.toLowerCase()}.example.com/operations`,
      events: ['webhook.disabled', 'delivery.failed'],
    });
    expectJson(operational, 200);
    return {
      name,
      api,
      workspaceId: workspace.id,
      calculatorId,
      webhookId,
      deliveryId,
      recoveryId: recovery.body.data.id,
      operationalWebhookId: operational.body.data.id,
    };
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await tenant('A');
    b = await tenant('B');
  });
  afterAll(() => t.close());

  const directions = () =>
    [
      ['A', 'B', a, b],
      ['B', 'A', b, a],
    ] as const;

  describe.each(['A', 'B'])("with %s's key", (ownName) => {
    const pair = () => directions().find(([name]) => name === ownName)!;

    it.each(FOREIGN_OPERATIONS)(
      "%s naming the other workspace's ids is a 404, and changes nothing",
      async (_, send) => {
        const [, , own, other] = pair();
        const before = await snapshotDatabase(t);
        const res = await send(own, other);
        expectNotFound(res);
        expect(res.text).not.toContain(other.workspaceId);
        expect(await snapshotDatabase(t)).toEqual(before);
      },
    );

    it("POST /webhooks binding the other workspace's calculator, alone or beside an own one, is a 400", async () => {
      const [, , own, other] = pair();
      const before = await snapshotDatabase(t);
      for (const calculators of [[other.calculatorId], [own.calculatorId, other.calculatorId]]) {
        const res = await own.api.post('/webhooks', { url: 'https://x.example.com/h', calculators });
        expect(expectBadRequest(res, 'calculators').message).toContain(other.calculatorId);
      }
      expect(await snapshotDatabase(t)).toEqual(before);
    });

    it('every list and lookup shows only the own workspace', async () => {
      const [, , own, other] = pair();
      const lists = await Promise.all(
        ['/webhooks', '/calculators', `/webhooks/${own.webhookId}/deliveries`, '/me', '/operational-webhooks'].map(
          (p) => own.api.get(p),
        ),
      );
      for (const res of lists) {
        expectJson(res, 200);
        for (const id of [
          other.workspaceId,
          other.webhookId,
          other.calculatorId,
          other.deliveryId,
          other.operationalWebhookId,
        ]) {
          expect(res.text).not.toContain(id);
        }
      }
      const [webhooks, calculators, deliveries, me, operational] = lists.map((r) => r.body);
      expect(operational.data.map((w: { id: string }) => w.id)).toEqual([own.operationalWebhookId]);
      expect(webhooks.data.map((w: { id: string }) => w.id)).toEqual([own.webhookId]);
      expect(calculators.data.map((c: { id: string }) => c.id)).toEqual([own.calculatorId]);
      expect(deliveries.data.map((d: { id: string }) => d.id)).toEqual([own.deliveryId]);
      expect(me.id).toBe(own.workspaceId);
    });
  });

  it("GET /deliveries lists only the own workspace's deliveries", async () => {
    for (const [, , own, other] of directions()) {
      const res = await own.api.get('/deliveries');
      expectJson(res, 200);
      expect(res.body.data.map((d: { id: string }) => d.id)).toEqual([own.deliveryId]);
      expect(res.text).not.toContain(other.webhookId);
    }
  });

  it("leaves each workspace's own operations working afterwards", async () => {
    const wakes = t.app.get(HostWakes);
    const [queue] = wakes.queues; // one shard here
    const nextDue = async (host: string) =>
      ((await t.dataSource.query('SELECT host_next_due($1) AS at', [host])) as { at: Date | null }[])[0].at;
    for (const own of [a, b]) {
      expectJson(await own.api.get(`/operational-webhooks/${own.operationalWebhookId}`), 200);
      expectJson(await own.api.get(`/webhooks/${own.webhookId}/secret`), 200);
      expectJson(await own.api.get(`/webhooks/${own.webhookId}/deliveries/${own.deliveryId}`), 200);
      const retried = await own.api.post(`/webhooks/${own.webhookId}/deliveries/${own.deliveryId}/retry`);
      expect(retried.status).toBe(202);
      // Pending again at its webhook's host, which has its one wake (no worker runs here); no job names it.
      const host = destinationOf(`https://${own.name.toLowerCase()}.example.com/hook`);
      const [row] = await t.dataSource.query('SELECT status, host FROM deliveries WHERE id = $1', [own.deliveryId]);
      expect(row).toEqual({ status: 'pending', host });
      expect(await nextDue(host)).not.toBeNull();
      expect((await queue.getJob(drainJobId(host)))?.data).toEqual({ host });
      const jobs = await queue.getJobs();
      expect(jobs.filter((job) => JSON.stringify(job.data).includes(own.deliveryId))).toEqual([]);
      expectJson(await own.api.delete(`/webhooks/${own.webhookId}`), 200);
      // The removal cancels the delivery the retry made pending again: its host's next drain finds nothing.
      const [{ status }] = await t.dataSource.query('SELECT status FROM deliveries WHERE id = $1', [own.deliveryId]);
      expect(status).toBe('cancelled');
      expect(await nextDue(host)).toBeNull();
    }
  });
});
