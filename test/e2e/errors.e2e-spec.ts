import { createId } from '@paralleldrive/cuid2';
import type { Response } from 'supertest';
import { jest } from '@jest/globals';
import type { CalculatorEntity } from '../../src/calculators/calculator.entity.js';
import { CreateWebhookDto } from '../../src/webhooks/create-webhook.dto.js';
import { WebhooksService } from '../../src/webhooks/webhooks.service.js';
import {
  client,
  expectBadRequest,
  expectError,
  expectMethodNotAllowed,
  expectNoWebhook,
  expectNotFound,
  listWebhooks,
  registerWebhook,
  removeWebhook,
  webhookRowCount,
  type Client,
} from '../support/management-api.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const RECEIVER = 'https://receiver.example.com/hooks/calc';

/** A 400 (naming `field` when given) after which the workspace has exactly the webhooks it had. */
async function expectRejected(
  t: TestApp,
  api: Client,
  workspaceId: string,
  send: () => Promise<Response>,
  field?: string,
) {
  const listBefore = await listWebhooks(api);
  const rowsBefore = await webhookRowCount(t, workspaceId);
  const error = expectBadRequest(await send(), field);
  expect(await listWebhooks(api)).toEqual(listBefore);
  expect(await webhookRowCount(t, workspaceId)).toBe(rowsBefore);
  return error;
}

describe('errors', () => {
  let t: TestApp;
  let api: Client;
  let workspaceId: string;
  let key: string;
  let calc: CalculatorEntity;
  let foreignCalc: CalculatorEntity;

  beforeAll(async () => {
    t = await createTestApp();
    const own = await createWorkspace(t, 'Own');
    workspaceId = own.workspace.id;
    key = own.key;
    api = client(t, own.key);
    calc = await createCalculator(t, workspaceId, 'Own calculator');
    const other = await createWorkspace(t, 'Other');
    foreignCalc = await createCalculator(t, other.workspace.id, 'Foreign calculator');
    // One existing webhook, so "nothing was created" compares a non-empty list.
    await registerWebhook(api, { url: RECEIVER, calculators: [calc.id] });
  });
  afterAll(() => t.close());

  const valid = () => ({ url: RECEIVER, calculators: [calc.id] });

  const rejectsBody = (body: object, field: string) =>
    expectRejected(t, api, workspaceId, () => api.post('/webhooks', body), field);

  const rawPost = (contentType: string, body: string) =>
    api.post('/webhooks').set('content-type', contentType).send(body);

  describe('POST /webhooks: url', () => {
    it('rejects a missing url', async () => {
      await rejectsBody({ calculators: [calc.id] }, 'url');
    });

    it.each([
      ['a number', 42],
      ['null', null],
      ['an array', [RECEIVER]],
      ['an object', { href: RECEIVER }],
    ])('rejects a url that is %s', async (_label, url) => {
      await rejectsBody({ ...valid(), url }, 'url');
    });

    it.each([
      ['not a URL', 'not a url'],
      ['no scheme', 'receiver.example.com/hook'],
      ['a relative path', '/hooks/calc'],
      ['a scheme without //', 'http:receiver.example.com'],
      ['no host', 'https://'],
      ['a space in the host', 'https://receiver example.com/'],
      ['a NUL character', 'https://receiver.example.com/a\u0000b'],
      ['an empty string', ''],
    ])('rejects an invalid url: %s', async (_label, url) => {
      await rejectsBody({ ...valid(), url }, 'url');
    });

    it.each([
      'ftp://receiver.example.com/hook',
      'javascript:alert(1)',
      'file:///etc/passwd',
      'ws://receiver.example.com/hook',
      'data:text/plain,hello',
      'mailto:ops@example.com',
    ])('rejects the non-http scheme of %s', async (url) => {
      await rejectsBody({ ...valid(), url }, 'url');
    });

    it('rejects a url of 2049 characters', async () => {
      const url = `${RECEIVER}/${'a'.repeat(2049 - RECEIVER.length - 1)}`;
      expect(url).toHaveLength(2049);
      await rejectsBody({ ...valid(), url }, 'url');
    });
  });

  describe('POST /webhooks: calculators', () => {
    it('rejects missing calculators', async () => {
      await rejectsBody({ url: RECEIVER }, 'calculators');
    });

    it.each([
      ['empty', []],
      ['a string', 'abc'],
      ['null', null],
      ['an object', { id: 'abc' }],
    ])('rejects calculators that is %s', async (_label, calculators) => {
      await rejectsBody({ ...valid(), calculators }, 'calculators');
    });

    it.each([
      ['a number', 123],
      ['null', null],
      ['an empty string', ''],
      ['upper case', 'CLX1234567890ABCDEFGHIJK'],
      ['a dash', 'not-a-cuid'],
      ['a leading digit', '1abcdefghijklmnopqrstuvw'],
      ['too long', `a${'b'.repeat(40)}`],
    ])('rejects an entry that is not a CUID2: %s', async (_label, entry) => {
      await rejectsBody({ ...valid(), calculators: [calc.id, entry] }, 'calculators');
    });

    it('rejects an unknown calculator id, naming it and not the known one', async () => {
      const unknown = createId();
      const error = await rejectsBody({ ...valid(), calculators: [calc.id, unknown] }, 'calculators');
      expect(error.message).toContain(unknown);
      expect(error.message).not.toContain(calc.id);
    });

    it("rejects another workspace's calculator as unknown, naming it", async () => {
      const error = await rejectsBody({ ...valid(), calculators: [foreignCalc.id] }, 'calculators');
      expect(error.message).toContain(foreignCalc.id);
    });

    it('rejects a removed calculator as unknown', async () => {
      const removed = await createCalculator(t, workspaceId, 'Removed');
      await t.dataSource.query('UPDATE calculators SET removed_at = now() WHERE id = $1', [removed.id]);
      const error = await rejectsBody({ ...valid(), calculators: [removed.id] }, 'calculators');
      expect(error.message).toContain(removed.id);
    });

    it('rejects more than 100 calculators', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 101; i++) ids.push((await createCalculator(t, workspaceId, `Bulk ${i}`)).id);
      const error = await rejectsBody({ ...valid(), calculators: ids }, 'calculators');
      expect(error.message).toMatch(/100/);
    });
  });

  describe('POST /webhooks: triggers', () => {
    it.each([
      ['empty', []],
      ['an unknown type', ['newThing']],
      ['a known and an unknown type', ['newSubmission', 'submissionDeleted']],
      ['differently cased', ['NewSubmission']],
      ['a string, not an array', 'newSubmission'],
      ['null', null],
      ['a number entry', [42]],
    ])('rejects triggers that is %s', async (_label, triggers) => {
      await rejectsBody({ ...valid(), triggers }, 'triggers');
    });
  });

  describe('POST /webhooks: source', () => {
    it.each([
      ['an unknown value', 'ifttt'],
      ['a differently cased alias', 'Zapier'],
      ['an empty string', ''],
      ['a number', 1],
      ['null', null],
    ])('rejects a source that is %s', async (_label, source) => {
      await rejectsBody({ ...valid(), source }, 'source');
    });
  });

  describe('POST /webhooks: name', () => {
    it.each([
      ['256 characters long', 'n'.repeat(256)],
      ['null', null],
      ['a number', 42],
      ['an array', ['a']],
      ['a string with a NUL character', 'a\u0000b'],
    ])('rejects a name that is %s', async (_label, name) => {
      await rejectsBody({ ...valid(), name }, 'name');
    });
  });

  describe('POST /webhooks: body', () => {
    it.each(['secret', 'workspaceId', 'id', 'Url'])('rejects the unknown field %s, naming it', async (field) => {
      await rejectsBody({ ...valid(), [field]: 'x' }, field);
    });

    it('rejects malformed JSON', async () => {
      await expectRejected(t, api, workspaceId, () => rawPost('application/json', '{"url": "https://x.example.com",'));
    });

    it.each([
      ['an array', '[{"url":"https://receiver.example.com","calculators":[]}]'],
      ['an empty array', '[]'],
      ['null', 'null'],
      ['a string', '"https://receiver.example.com"'],
      ['a number', '42'],
    ])('rejects a JSON body that is %s', async (_label, body) => {
      await expectRejected(t, api, workspaceId, () => rawPost('application/json', body));
    });

    it('rejects an empty body, naming url and calculators', async () => {
      const error = await expectRejected(t, api, workspaceId, () => api.post('/webhooks'), 'url');
      expect(error.details!.map((d) => d.field)).toContain('calculators');
    });

    it.each([
      ['text/plain', () => JSON.stringify(valid())],
      ['application/x-www-form-urlencoded', () => `url=${encodeURIComponent(RECEIVER)}&calculators=${calc.id}`],
      ['application/xml', () => '<webhook/>'],
    ])('rejects a %s body, naming the content type', async (contentType, body) => {
      await expectRejected(t, api, workspaceId, () => rawPost(contentType, body()), 'content-type');
    });

    it('rejects a body over 1 MiB with 413', async () => {
      const rowsBefore = await webhookRowCount(t, workspaceId);
      const res = await api.post('/webhooks', { ...valid(), name: 'x'.repeat(1024 * 1024 + 1) });
      expectError(res, 413, 'payload_too_large');
      expect(await webhookRowCount(t, workspaceId)).toBe(rowsBefore);
    });
  });

  describe('400 on other operations', () => {
    it('is text/plain with an empty body on GET /webhooks', async () => {
      const res = await api.get('/webhooks').set('content-type', 'application/json').send('{bad');
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.text).toBe('');
    });

    it('is the JSON error body on GET /webhooks/{id} and GET /calculators', async () => {
      const [webhook] = await listWebhooks(api);
      expectBadRequest(await api.get(`/webhooks/${webhook.id}`).set('content-type', 'application/json').send('{bad'));
      expectBadRequest(await api.get('/calculators?limit=abc'), 'limit');
    });
  });

  describe('400 on list queries', () => {
    const NOT_INTEGER = 'must be a non-negative integer';
    const NOT_TIMESTAMP = 'must be an ISO 8601 timestamp with a time zone, e.g. 2024-01-15T10:30:00.000Z';
    const NOT_CURSOR = 'is not a cursor of this workspace: pass nextCursor of the previous page as it is';
    const NOT_STATUS = 'must be one of: pending, succeeded, failed, cancelled, skipped';
    const TOO_LARGE = 'must fit in a 32-bit integer';
    const LATE = '2024-01-16T00:00:00Z';
    const EARLY = '2024-01-15T00:00:00Z';

    // One detail, the first rule broken in the list's own order of fields, wherever it is in the query.
    it.each([
      ['/calculators', 'limit=abc', 'limit', NOT_INTEGER],
      ['/calculators', 'limit=0', 'limit', 'must be at least 1'],
      ['/calculators', 'limit=1&limit=2', 'limit', NOT_INTEGER],
      ['/calculators', 'offset=2147483648', 'offset', TOO_LARGE],
      ['/calculators', `offset=${'9'.repeat(400)}`, 'offset', TOO_LARGE],
      ['/calculators', 'offset=-1&limit=abc', 'limit', NOT_INTEGER],
      ['/webhooks/{w}/deliveries', 'limit=abc', 'limit', NOT_INTEGER],
      ['/webhooks/{w}/deliveries', 'status=bogus&offset=1.5', 'offset', NOT_INTEGER],
      ['/webhooks/{w}/deliveries', 'status=failed&status=skipped', 'status', NOT_STATUS],
      ['/webhooks/unknownwebhook/deliveries', 'limit=abc', 'limit', NOT_INTEGER],
      ['/deliveries', 'limit=abc', 'limit', NOT_INTEGER],
      ['/deliveries', 'limit=abc&status=bogus', 'status', NOT_STATUS],
      ['/deliveries', `status=bogus&until=${EARLY}&since=${LATE}`, 'since', 'must be before until'],
      ['/deliveries', `since=${LATE}&until=garbage`, 'until', NOT_TIMESTAMP],
      ['/deliveries', `since=${EARLY}&since=${EARLY}`, 'since', NOT_TIMESTAMP],
      ['/deliveries', 'limit=abc&webhookId=Abc', 'webhookId', 'must be an id (CUID2)'],
      ['/deliveries', 'calculatorId=a-b&cursor=garbage', 'calculatorId', 'must be an id (CUID2)'],
      ['/deliveries', 'cursor=garbage&limit=abc', 'limit', NOT_INTEGER],
      ['/deliveries', 'cursor=garbage&cursor=garbage', 'cursor', NOT_CURSOR],
    ])('GET %s?%s names %s', async (template, query, field, message) => {
      const [webhook] = await listWebhooks(api);
      const res = await api.get(`${template.replace('{w}', webhook.id)}?${query}`);
      expectBadRequest(res, field);
      expect(res.body).toEqual({
        error: { code: 'bad_request', message: `${field}: ${message}`, details: [{ field, message }] },
      });
    });
  });

  describe('404', () => {
    it.each([
      ['an unknown id', () => createId()],
      ['a malformed id', () => 'not-a-webhook-id'],
      ['an id with a NUL character', () => '%00'],
      ['an overlong id', () => 'a'.repeat(300)],
    ])('answers GET, DELETE and /secret of %s with 404', async (_label, makeId) => {
      const id = makeId();
      await expectNoWebhook(api, id);
    });

    it('answers GET, DELETE and /secret of a removed webhook with 404', async () => {
      const webhook = await registerWebhook(api, valid());
      await removeWebhook(api, webhook.id);
      await expectNoWebhook(api, webhook.id);
    });

    it.each(['/nope', '/webhooks/abc/nope', '/calculators/abc', '/me/nope'])(
      'answers the unknown path %s with 404',
      async (path) => {
        expectNotFound(await api.get(path));
      },
    );

    it.each(['/', '/webhooks', '/api/v2/webhooks', '/api/v1x/webhooks'])(
      'answers %s, outside /api/v1, with the JSON 404',
      async (path) => {
        expectNotFound(await t.http().get(path));
      },
    );

    it.each(['/healthz/x', '/readyz/x', '/metrics/x', '/HEALTHZ/x', '/Metrics/x/y', '/admin/queues', '/API/V2/ME'])(
      'answers %s, below or beside a route outside /api/v1, with the JSON 404',
      async (path) => {
        for (const method of ['get', 'post', 'delete'] as const) {
          expectNotFound(await t.http()[method](path).set('x-ac-api-key', 'any'));
        }
      },
    );

    it('treats a path in other letter case exactly like the route it matches', async () => {
      const upper = await t.http().get('/API/V1/WEBHOOKS').set('x-ac-api-key', key);
      expect(upper.status).toBe(200);
      expect(upper.body).toEqual({ data: await listWebhooks(api) });
      const bad = await t.http().get('/API/V1/WEBHOOKS').set('x-ac-api-key', key).type('json').send('{bad');
      expect([bad.status, bad.headers['content-type'], bad.text]).toEqual([400, 'text/plain; charset=utf-8', '']);
      expectMethodNotAllowed(await t.http().put('/API/V1/WEBHOOKS').set('x-ac-api-key', key), 'GET, HEAD, POST');
      expectMethodNotAllowed(await t.http().post('/HEALTHZ'), 'GET, HEAD');
      expectNotFound(await t.http().get('/API/V1/NOPE').set('x-ac-api-key', key));
    });
  });

  describe('text in bodies', () => {
    const raw = (body: string | Buffer, path = '/webhooks') =>
      api
        .post(path)
        .set('content-type', 'application/json')
        .serialize((bytes: Buffer) => bytes as unknown as string) // the bytes as they are
        .send(Buffer.isBuffer(body) ? body : Buffer.from(body));
    const onlyDetail = (res: Response, field: string) => {
      expect(expectBadRequest(res, field).details).toEqual([{ field, message: expect.any(String) }]);
    };

    it('refuses bytes that are not UTF-8 with 400 naming the field, or the body', async () => {
      const url = Buffer.concat([
        Buffer.from(`{"url":"${RECEIVER}/`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`","calculators":["${calc.id}"]}`),
      ]);
      await expectRejected(t, api, workspaceId, () => raw(url), 'url');
      const outside = Buffer.concat([Buffer.from(`{"url":"${RECEIVER}",`), Buffer.from([0xc3]), Buffer.from('}')]);
      onlyDetail(await raw(outside), 'body');
      const answers = Buffer.concat([
        Buffer.from('{"data":{"q":"'),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from('"}}'),
      ]);
      onlyDetail(await raw(answers, `/calculators/${calc.id}/submissions`), 'data');
    });

    it.each([
      ['a lone high surrogate in name', '{"name":"a\\ud800","url":"URL","calculators":["CALC"]}', 'name'],
      ['a lone low surrogate in url', '{"url":"URL/\\udc00","calculators":["CALC"]}', 'url'],
      ['NUL in name', '{"name":"a\\u0000b","url":"URL","calculators":["CALC"]}', 'name'],
    ])('refuses %s with 400 naming it', async (_label, template, field) => {
      const body = template.replace('URL', RECEIVER).replace('CALC', calc.id);
      await expectRejected(t, api, workspaceId, () => raw(body), field);
      onlyDetail(await raw(body), field);
    });

    it('refuses a lone surrogate or NUL anywhere in submission answers, naming the field', async () => {
      const path = `/calculators/${calc.id}/submissions`;
      onlyDetail(await raw('{"data":{"a":{"b":"x\\udfffy"}}}', path), 'data');
      onlyDetail(await raw('{"data":{"k\\u0000":1}}', path), 'data');
      onlyDetail(await raw('{"data":{},"meta":{"m":"\\u0000"}}', path), 'meta');
    });

    it('names a missing calculators once', async () => {
      onlyDetail(await api.post('/webhooks', { url: RECEIVER }), 'calculators');
    });
  });

  describe('validated bodies', () => {
    it('reach the handler as instances of their DTO, as validated', async () => {
      const create = jest.spyOn(t.app.get(WebhooksService), 'create');
      try {
        await registerWebhook(api, { ...valid(), name: 'dto' });
        const dto = create.mock.calls.at(-1)![1];
        expect(dto).toBeInstanceOf(CreateWebhookDto);
        expect({ ...dto }).toEqual({ ...valid(), name: 'dto' });
      } finally {
        create.mockRestore();
      }
    });
  });

  describe('405', () => {
    it('refuses PUT on a webhook (it is not replaced; PATCH changes its settings) and leaves it unchanged', async () => {
      const webhook = await registerWebhook(api, valid());
      const res = await api.request('put', `/webhooks/${webhook.id}`).send({ name: 'changed' });
      expectMethodNotAllowed(res, 'DELETE, GET, HEAD, PATCH');
      const list = await listWebhooks(api);
      expect(list.find((w) => w.id === webhook.id)?.name).toBe('');
    });

    it.each([
      ['delete', '/webhooks', 'GET, HEAD, POST'],
      ['put', '/webhooks', 'GET, HEAD, POST'],
      ['patch', '/webhooks', 'GET, HEAD, POST'],
      ['post', '/webhooks/WEBHOOK', 'DELETE, GET, HEAD, PATCH'],
      ['post', '/webhooks/WEBHOOK/secret', 'GET, HEAD'],
      ['delete', '/webhooks/WEBHOOK/secret', 'GET, HEAD'],
      ['post', '/calculators', 'GET, HEAD'],
      ['delete', '/calculators', 'GET, HEAD'],
      ['post', '/me', 'GET, HEAD'],
      ['delete', '/me', 'GET, HEAD'],
    ] as const)('refuses %s %s with an Allow header of %s', async (method, path, allow) => {
      const [webhook] = await listWebhooks(api);
      expectMethodNotAllowed(await api.request(method, path.replace('WEBHOOK', webhook.id)), allow);
    });
  });
});

describe('active webhook cap (MAX_WEBHOOKS_PER_WORKSPACE=3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ MAX_WEBHOOKS_PER_WORKSPACE: '3' });
  });
  afterAll(() => t.close());

  async function tenant() {
    const { workspace, key } = await createWorkspace(t);
    const calc = await createCalculator(t, workspace.id);
    return { api: client(t, key), workspaceId: workspace.id, body: { url: RECEIVER, calculators: [calc.id] } };
  }

  it('rejects a fourth active webhook with 400, and a removal frees a slot', async () => {
    const { api, workspaceId, body } = await tenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await registerWebhook(api, body)).id);
    const error = await expectRejected(t, api, workspaceId, () => api.post('/webhooks', body));
    expect(error.message).toMatch(/3/);
    await removeWebhook(api, ids[0]);
    const fourth = await registerWebhook(api, body);
    expect((await listWebhooks(api)).map((w) => w.id)).toEqual([ids[1], ids[2], fourth.id]);
    await expectRejected(t, api, workspaceId, () => api.post('/webhooks', body));
  });

  it('counts each workspace on its own', async () => {
    const full = await tenant();
    for (let i = 0; i < 3; i++) await registerWebhook(full.api, full.body);
    const other = await tenant();
    for (let i = 0; i < 3; i++) await registerWebhook(other.api, other.body);
    expect(await listWebhooks(other.api)).toHaveLength(3);
  });

  it('holds under concurrent registrations', async () => {
    const { api, body } = await tenant();
    const responses = await Promise.all(Array.from({ length: 10 }, () => api.post('/webhooks', body)));
    const statuses = responses.map((r) => r.status).sort((x, y) => x - y);
    expect(statuses).toEqual([200, 200, 200, 400, 400, 400, 400, 400, 400, 400]);
    for (const res of responses.filter((r) => r.status === 400)) expectBadRequest(res);
    expect(await listWebhooks(api)).toHaveLength(3);
  });
});
