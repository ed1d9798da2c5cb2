import { ApiKeysService } from '../../src/auth/api-keys.service.js';
import { client, expectJson, expectTimestamp, keysOf, WORKSPACE_KEYS } from '../support/management-api.js';
import { createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('GET /me', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  async function me(key: string) {
    const res = await client(t, key).get('/me');
    expectJson(res, 200);
    return res.body as Record<string, unknown>;
  }

  it("returns the key's workspace unwrapped, with exactly id, name, createdAt and updatedAt", async () => {
    const { workspace, key } = await createWorkspace(t, 'Acme Calculators');
    const body = await me(key);
    expect(keysOf(body)).toEqual(WORKSPACE_KEYS);
    expect(body).toEqual({
      id: workspace.id,
      name: 'Acme Calculators',
      createdAt: workspace.createdAt.toISOString(),
      updatedAt: workspace.updatedAt.toISOString(),
    });
    expectTimestamp(body.createdAt);
    expectTimestamp(body.updatedAt);
  });

  it('answers each key with its own workspace', async () => {
    const a = await createWorkspace(t, 'A');
    const b = await createWorkspace(t, 'B');
    expect(await me(a.key)).toMatchObject({ id: a.workspace.id, name: 'A' });
    expect(await me(b.key)).toMatchObject({ id: b.workspace.id, name: 'B' });
  });

  it('answers every key of a workspace with that workspace', async () => {
    const { workspace, key } = await createWorkspace(t);
    const second = await t.app.get(ApiKeysService).issue(workspace.id);
    expect(second.key).not.toBe(key);
    expect(await me(second.key)).toEqual(await me(key));
  });
});
