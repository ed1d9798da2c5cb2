import type { WebhookResponse } from '../../src/webhooks/webhook.serializer.js';
import {
  client,
  expectBadRequest,
  expectJson,
  expectNoWebhook,
  getWebhook,
  listWebhooks,
  registerWebhook,
  signingSecret,
  type Client,
} from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

interface Tenant {
  api: Client;
  workspaceId: string;
  calculatorIds: string[];
  webhook: WebhookResponse;
}

describe('isolation between workspaces', () => {
  let t: TestApp;
  let a: Tenant;
  let b: Tenant;

  async function tenant(name: string): Promise<Tenant> {
    const { workspace, key } = await createWorkspace(t, name);
    const api = client(t, key);
    const calculatorIds = [
      (await createCalculator(t, workspace.id, `${name} one`)).id,
      (await createCalculator(t, workspace.id, `${name} two`)).id,
    ];
    const webhook = await registerWebhook(api, {
      url: `https://${name.toLowerCase()}.example.com/hook`,
      calculators: calculatorIds,
      name,
    });
    return { api, workspaceId: workspace.id, calculatorIds, webhook };
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await tenant('A');
    b = await tenant('B');
  });
  afterAll(() => t.close());

  it('GET /webhooks lists only the own workspace, with only its calculators', async () => {
    for (const [own, other] of [
      [a, b],
      [b, a],
    ]) {
      const list = await listWebhooks(own.api);
      expect(list.map((w) => w.id)).toEqual([own.webhook.id]);
      expect(list[0].workspaceId).toBe(own.workspaceId);
      expect(list[0].calculators.map((c) => c.id).sort()).toEqual([...own.calculatorIds].sort());
      expect(JSON.stringify(list)).not.toContain(other.workspaceId);
    }
  });

  it('GET /calculators lists only the own workspace', async () => {
    for (const own of [a, b]) {
      const res = await own.api.get('/calculators');
      expectJson(res, 200);
      const calcs = res.body.data as { id: string; workspaceId: string }[];
      expect(calcs.map((c) => c.id).sort()).toEqual([...own.calculatorIds].sort());
      for (const c of calcs) expect(c.workspaceId).toBe(own.workspaceId);
    }
  });

  it('GET /me shows the own workspace', async () => {
    for (const own of [a, b]) {
      const res = await own.api.get('/me');
      expectJson(res, 200);
      expect(res.body.id).toBe(own.workspaceId);
    }
  });

  it("answers GET, DELETE and /secret of the other workspace's webhook with 404 and leaves it intact", async () => {
    const secret = await signingSecret(b.api, b.webhook.id);
    await expectNoWebhook(a.api, b.webhook.id);
    expect(await getWebhook(b.api, b.webhook.id)).toEqual(b.webhook);
    expect(await signingSecret(b.api, b.webhook.id)).toBe(secret);
    expect((await listWebhooks(b.api)).map((w) => w.id)).toEqual([b.webhook.id]);
  });

  it("refuses to bind the other workspace's calculators, alone or beside an own one", async () => {
    for (const calculators of [[b.calculatorIds[0]], [a.calculatorIds[0], b.calculatorIds[1]]]) {
      const res = await a.api.post('/webhooks', { url: 'https://a.example.com/x', calculators });
      const error = expectBadRequest(res, 'calculators');
      expect(error.message).toContain(calculators[calculators.length - 1]);
    }
    expect((await listWebhooks(a.api)).map((w) => w.id)).toEqual([a.webhook.id]);
  });

  it('registers a webhook in the workspace of the key, whatever the calculators of others', async () => {
    const webhook = await registerWebhook(b.api, {
      url: 'https://b.example.com/second',
      calculators: [b.calculatorIds[1]],
    });
    expect(webhook.workspaceId).toBe(b.workspaceId);
    expect((await listWebhooks(a.api)).map((w) => w.id)).toEqual([a.webhook.id]);
    await expectNoWebhook(a.api, webhook.id);
  });
});
