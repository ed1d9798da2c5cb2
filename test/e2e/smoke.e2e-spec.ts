import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('registers, lists, gets and removes a webhook', async () => {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    const me = await t.http().get('/api/v1/me').set('x-ac-api-key', key).expect(200);
    expect(me.body.id).toBe(workspace.id);
    const created = await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .send({ url: 'https://example.com/hook', calculators: [calc.id], source: 'zapier' })
      .expect(200);
    expect(created.body.data.source).toBe('automation_platform_1');
    const list = await t.http().get('/api/v1/webhooks').set('x-ac-api-key', key).expect(200);
    expect(list.body.data[0].calculators).toEqual([{ id: calc.id, name: calc.name }]);
    const calcs = await t.http().get('/api/v1/calculators').set('x-ac-api-key', key).expect(200);
    expect(Object.keys(calcs.body.data[0])).toHaveLength(21);
    await t.http().delete(`/api/v1/webhooks/${created.body.data.id}`).set('x-ac-api-key', key).expect(200);
    await t.http().get(`/api/v1/webhooks/${created.body.data.id}`).set('x-ac-api-key', key).expect(404);
    const put = await t.http().put(`/api/v1/webhooks/${created.body.data.id}`).set('x-ac-api-key', key).expect(405);
    expect(put.headers.allow).toBe('DELETE, GET, HEAD');
    await t.http().get('/api/v1/nope').expect(404);
    await t.http().get('/api/v1/me').expect(401);
    const bad = await t
      .http()
      .post('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .set('content-type', 'application/json')
      .send('{bad')
      .expect(400);
    expect(bad.body.error.code).toBe('bad_request');
    const g = await t
      .http()
      .get('/api/v1/webhooks')
      .set('x-ac-api-key', key)
      .set('content-type', 'application/json')
      .send('{bad')
      .expect(400);
    expect(g.text).toBe('');
    expect(g.headers['content-type']).toMatch(/text\/plain/);
  });
});
