import { API_KEY_HEADER } from '../../src/auth/api-key.js';
import { getDelivery, listDeliveries } from '../support/delivery.js';
import { API, client, expectBadRequest, expectJson, listWebhooks, type Client } from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// JSON with a key twice is valid JSON (RFC 8259 leaves its meaning open): the API takes the last one, as
// JSON.parse does, and the value validated is the value stored, answered, listed and delivered.
describe('a JSON body with a key twice: the last one wins', () => {
  let t: TestApp;
  let key: string;
  let api: Client;
  let calculatorId: string;

  beforeAll(async () => {
    t = await createTestApp();
    const created = await createWorkspace(t);
    key = created.key;
    api = client(t, key);
    calculatorId = (await createCalculator(t, created.workspace.id)).id;
  });
  afterAll(() => t.close());

  const postRaw = (path: string, json: string) =>
    t.http().post(`${API}${path}`).set(API_KEY_HEADER, key).set('content-type', 'application/json').send(json);

  it('registers a webhook with the last of two names, and shows that one everywhere', async () => {
    const res = await postRaw(
      '/webhooks',
      `{"url":"https://example.com/first","name":"first","calculators":["${calculatorId}"],` +
        `"name":"second","url":"https://example.com/second"}`,
    );
    expectJson(res, 200);
    expect(res.body.data).toMatchObject({ name: 'second', url: 'https://example.com/second' });
    const id = res.body.data.id as string;

    const got = await api.get(`/webhooks/${id}`);
    expectJson(got, 200);
    expect(got.body.data).toMatchObject({ name: 'second', url: 'https://example.com/second' });
    expect((await listWebhooks(api)).find((w) => w.id === id)).toMatchObject({ name: 'second' });
    const [row] = await t.dataSource.query('SELECT name, url FROM webhooks WHERE id = $1', [id]);
    expect(row).toEqual({ name: 'second', url: 'https://example.com/second' });
  });

  it('validates the last value: a valid first url does not let an invalid last one through', async () => {
    const res = await postRaw(
      '/webhooks',
      `{"url":"https://example.com/ok","calculators":["${calculatorId}"],"url":"ftp://example.com/bad"}`,
    );
    expectBadRequest(res, 'url');
  });

  it('stores and delivers the last value of a key repeated in a submission', async () => {
    const hook = await api.post('/webhooks', { url: 'https://example.com/hook', calculators: [calculatorId] });
    expectJson(hook, 200);
    const webhookId = hook.body.data.id as string;

    const res = await postRaw(
      `/calculators/${calculatorId}/submissions`,
      '{"data":{"rate":1,"rate":2,"nested":{"a":"x","a":"y"}},"finished":false,"finished":true}',
    );
    expectJson(res, 200);
    expect(res.body.data).toMatchObject({ data: { rate: 2, nested: { a: 'y' } }, finished: true });

    const [delivery] = await listDeliveries(api, webhookId);
    const detail = await getDelivery(api, webhookId, delivery.id);
    expect(detail.payload).toMatchObject({
      data: { id: res.body.data.id, data: { rate: 2, nested: { a: 'y' } }, finished: true },
    });
  });
});
