import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import request, { type Response } from 'supertest';
import { API_KEY_HEADER } from '../../src/auth/api-key.js';
import { IdempotencyKeysService } from '../../src/idempotency/idempotency-keys.service.js';
import { WAIT_FOR_FIRST_MS } from '../../src/idempotency/idempotency.interceptor.js';
import { countRows, expectNoFurtherRequests, FAST_DELIVERY } from '../support/delivery.js';
import { API, client, expectBadRequest, expectError, expectJson, listWebhooks } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import {
  createCalculator,
  createReplica,
  createTestApp,
  createWorkspace,
  databaseSession,
  type TestApp,
} from '../support/test-app.js';

const HEADER = 'Idempotency-Key';
const REPLAYED = 'idempotent-replayed';

describe('Idempotency-Key on POST (DESIGN 7.6)', () => {
  let t: TestApp;
  let replica: INestApplication;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp(FAST_DELIVERY);
    replica = await createReplica(t);
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
    await replica?.close();
    await t?.close();
  });

  /** A workspace with one calculator, and a POST helper that sends the key. */
  async function setup() {
    const { workspace, key } = await createWorkspace(t);
    const api = client(t, key);
    const calculator = await createCalculator(t, workspace.id);
    const post = (path: string, body: object | undefined, idempotencyKey: string, app?: INestApplication) => {
      const req = (
        app
          ? request(app.getHttpServer())
              .post(API + path)
              .set(API_KEY_HEADER, key)
          : api.request('post', path)
      ).set(HEADER, idempotencyKey);
      return body === undefined ? req : req.send(body);
    };
    return { workspace, key, api, calculator, post };
  }

  const expectReplayOf = (replay: Response, first: Response) => {
    expect(replay.headers[REPLAYED]).toBe('true');
    expect({ status: replay.status, body: replay.body }).toEqual({ status: first.status, body: first.body });
  };

  const keyRow = async (workspaceId: string, key: string) => {
    const rows = await t.dataSource.query<{ status_code: number | null }[]>(
      'SELECT status_code FROM idempotency_keys WHERE workspace_id = $1 AND key = $2',
      [workspaceId, key],
    );
    return rows[0] ?? null;
  };

  describe('a repeat with the same key, method, path and body', () => {
    it('gets the first answer again, with idempotent-replayed, and registers one webhook', async () => {
      const { api, calculator, post } = await setup();
      const body = { url: receiver.url, calculators: [calculator.id], name: 'once' };

      const first = await post('/webhooks', body, 'create-webhook-1');
      expectJson(first, 200);
      expect(first.headers[REPLAYED]).toBeUndefined();
      const replay = await post('/webhooks', body, 'create-webhook-1');

      expectReplayOf(replay, first);
      expect((await listWebhooks(api)).map((w) => w.id)).toEqual([first.body.data.id]);
    });

    it('compares the parsed body: other key order and spacing is the same request', async () => {
      const { api, calculator, post } = await setup();
      const first = await post('/webhooks', { url: receiver.url, calculators: [calculator.id] }, 'order');
      const reordered = await api
        .request('post', '/webhooks')
        .set(HEADER, 'order')
        .set('content-type', 'application/json')
        .send(`{ "calculators" : [ "${calculator.id}" ],\n "url": "${receiver.url}" }`);

      expectReplayOf(reordered, first);
      expect(await listWebhooks(api)).toHaveLength(1);
    });

    it('records one submission, one delivery and sends one webhook request', async () => {
      const { workspace, api, calculator, post } = await setup();
      const hook = await Receiver.start();
      try {
        await api.post('/webhooks', { url: hook.url, calculators: [calculator.id] }).expect(200);
        const path = `/calculators/${calculator.id}/submissions`;
        const first = await post(path, { data: { answer: 42 } }, 'submit-1');
        expectJson(first, 200);
        const replay = await post(path, { data: { answer: 42 } }, 'submit-1', replica);

        expectReplayOf(replay, first);
        await waitFor(() => hook.requests.length === 1, 5000, 'the delivery');
        await expectNoFurtherRequests(hook); // time for a second delivery, if there were one
        expect(hook.requests).toHaveLength(1);
        expect(await countRows(t, 'submissions', workspace.id)).toBe(1);
        expect(await countRows(t, 'deliveries', workspace.id)).toBe(1);
      } finally {
        await hook.close();
      }
    });

    it('keeps a 4xx answer and replays it, with the same error body', async () => {
      const { post } = await setup();
      const first = await post('/webhooks', { url: 'not a url', calculators: [] }, 'bad-body');
      expectBadRequest(first, 'url');
      const replay = await post('/webhooks', { url: 'not a url', calculators: [] }, 'bad-body');

      expectReplayOf(replay, first);
      const missing = await post('/calculators/nosuchcalculator000000000/submissions', { data: {} }, 'missing');
      expectError(missing, 404, 'not_found');
      expectReplayOf(
        await post('/calculators/nosuchcalculator000000000/submissions', { data: {} }, 'missing'),
        missing,
      );
    });
  });

  describe('the same key for another request', () => {
    it('is a 400 idempotency_key_reused for another body, path or method, and changes nothing', async () => {
      const { api, calculator, post } = await setup();
      const body = { url: receiver.url, calculators: [calculator.id] };
      await post('/webhooks', body, 'reused').expect(200);

      const otherBody = await post('/webhooks', { ...body, name: 'other' }, 'reused');
      const otherPath = await post(`/calculators/${calculator.id}/submissions`, { data: {} }, 'reused');
      for (const res of [otherBody, otherPath]) {
        const error = expectError(res, 400, 'idempotency_key_reused');
        expect(error.details).toEqual([{ field: HEADER, message: expect.any(String) }]);
        expect(res.headers[REPLAYED]).toBeUndefined();
      }
      expect(await listWebhooks(api)).toHaveLength(1);
      expect(await countRows(t, 'submissions', calculator.workspaceId)).toBe(0);
    });

    it('is independent per workspace: another workspace using the key gets its own answer', async () => {
      const a = await setup();
      const b = await setup();
      const first = await a.post('/webhooks', { url: receiver.url, calculators: [a.calculator.id] }, 'shared');
      const other = await b.post('/webhooks', { url: receiver.url, calculators: [b.calculator.id] }, 'shared');

      expectJson(other, 200);
      expect(other.headers[REPLAYED]).toBeUndefined();
      expect(other.body.data.id).not.toBe(first.body.data.id);
      expect(other.body.data.workspaceId).toBe(b.workspace.id);
    });
  });

  describe('the header', () => {
    it.each([
      ['empty', ''],
      ['longer than 255 characters', 'k'.repeat(256)],
      ['with a control character', 'key\twith tab'],
      ['not ASCII', 'cl\u00e9'],
    ])('is a 400 naming Idempotency-Key when %s, and nothing is created', async (_case, value) => {
      const { api, calculator, post } = await setup();
      const res = await post('/webhooks', { url: receiver.url, calculators: [calculator.id] }, value);

      expectBadRequest(res, HEADER);
      expect(await listWebhooks(api)).toEqual([]);
    });

    it('takes 255 printable ASCII characters', async () => {
      const { calculator, post } = await setup();
      const key = ' ~!"#$%&\'()*+,-./09:;<=>?@AZ[\\]^_`az{|}'.padEnd(255, 'x');
      const first = await post('/webhooks', { url: receiver.url, calculators: [calculator.id] }, key);
      expectJson(first, 200);
      expectReplayOf(await post('/webhooks', { url: receiver.url, calculators: [calculator.id] }, key), first);
    });

    it('is ignored on GET', async () => {
      const { api } = await setup();
      const res = await api.get('/webhooks').set(HEADER, '');
      expectJson(res, 200);
    });
  });

  describe('concurrent repeats', () => {
    /** Holds the calculator's row locked, so a submission to it waits inside its transaction. */
    async function lockCalculator(calculatorId: string) {
      const db = await databaseSession(t);
      await db.query('BEGIN');
      await db.query('SELECT id FROM calculators WHERE id = $1 FOR UPDATE', [calculatorId]);
      return async () => {
        await db.query('COMMIT');
        await db.end();
      };
    }

    const waitingOnLocks = async () =>
      Number(
        (
          await t.dataSource.query(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        )[0].n,
      );

    it('wait for the first, on either replica, then all get its answer: one submission', async () => {
      const { workspace, calculator, post } = await setup();
      const path = `/calculators/${calculator.id}/submissions`;
      const unlock = await lockCalculator(calculator.id);
      const servers = [t.app.getHttpServer(), replica.getHttpServer()] as Server[];
      let arrived = 0;
      const onRequest = () => void arrived++;
      for (const server of servers) server.on('request', onRequest);
      let responses: Response[];
      try {
        const answers = Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            post(path, { data: { n: 1 } }, 'concurrent', i % 2 === 0 ? undefined : replica),
          ),
        );
        try {
          // Every request has arrived and is waiting (the first on the lock, the others on it).
          await waitFor(
            async () => arrived === 12 && (await waitingOnLocks()) > 0,
            10_000,
            'the 12 requests to arrive and the first to wait on the lock',
          );
        } finally {
          await unlock();
        }
        responses = await answers;
      } finally {
        for (const server of servers) server.off('request', onRequest);
      }

      for (const res of responses) expectJson(res, 200);
      expect(new Set(responses.map((res) => JSON.stringify(res.body))).size).toBe(1);
      expect(responses.filter((res) => res.headers[REPLAYED] === undefined)).toHaveLength(1);
      expect(await countRows(t, 'submissions', workspace.id)).toBe(1);
    });

    it('does not keep a 503 (database lock timeout): the retry runs the request', async () => {
      const { workspace, calculator, post } = await setup();
      const path = `/calculators/${calculator.id}/submissions`;
      const unlock = await lockCalculator(calculator.id);
      let timedOut: Response;
      try {
        timedOut = await post(path, { data: {} }, 'after-503');
      } finally {
        await unlock();
      }

      expectError(timedOut, 503, 'unavailable');
      expect(await keyRow(workspace.id, 'after-503')).toBeNull();
      const retry = await post(path, { data: {} }, 'after-503');
      expectJson(retry, 200);
      expect(retry.headers[REPLAYED]).toBeUndefined();
      expect(await countRows(t, 'submissions', workspace.id)).toBe(1);
    });

    it('a repeat of a request whose process died waits a bounded time (409), and takes the key over later', async () => {
      const { workspace, calculator, post } = await setup();
      const path = `${API}/calculators/${calculator.id}/submissions`;
      const body = { data: { crashed: true } };
      // What a process that died after claiming the key leaves behind: a claim with no answer.
      const first = await post(path.slice(API.length), body, 'died');
      expectJson(first, 200);
      await t.dataSource.query(
        `UPDATE idempotency_keys SET status_code = NULL, response_body = NULL, completed_at = NULL, created_at = now()
         WHERE workspace_id = $1 AND key = 'died'`,
        [workspace.id],
      );
      const startedAt = Date.now();
      const waited = await post(path.slice(API.length), body, 'died');

      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(WAIT_FOR_FIRST_MS - 100);
      expectError(waited, 409, 'idempotency_key_in_progress');
      expect(waited.headers['retry-after']).toBe('1');
      await t.dataSource.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '61 seconds' WHERE workspace_id = $1 AND key = 'died'`,
        [workspace.id],
      );
      const takenOver = await post(path.slice(API.length), body, 'died');
      expectJson(takenOver, 200);
      expect(takenOver.headers[REPLAYED]).toBeUndefined();
      expect(takenOver.body.data.id).not.toBe(first.body.data.id);
      expect((await keyRow(workspace.id, 'died'))?.status_code).toBe(200);
    }, 30_000);
  });

  describe('expiry', () => {
    it('an expired key is a new one: the request runs again', async () => {
      const { workspace, api, calculator, post } = await setup();
      await post('/webhooks', { url: receiver.url, calculators: [calculator.id] }, 'old').expect(200);
      await t.dataSource.query(
        `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE workspace_id = $1`,
        [workspace.id],
      );
      const again = await post('/webhooks', { url: receiver.url, calculators: [calculator.id], name: 'new' }, 'old');

      expectJson(again, 200);
      expect(again.body.data.name).toBe('new');
      expect(await listWebhooks(api)).toHaveLength(2);
    });

    it('expired keys are deleted in batches, unexpired ones kept', async () => {
      const { workspace, calculator, post } = await setup();
      await post('/webhooks', { url: receiver.url, calculators: [calculator.id] }, 'kept').expect(200);
      await t.dataSource.query(
        `INSERT INTO idempotency_keys (workspace_id, key, method, path, body_hash, status_code, expires_at)
         SELECT $1, 'expired-' || n, 'POST', '/api/v1/webhooks', repeat('0', 64), 200, now() - interval '1 hour'
         FROM generate_series(1, 1200) AS n`,
        [workspace.id],
      );
      const purged = await t.app.get(IdempotencyKeysService).purgeExpired();

      expect(purged).toBeGreaterThanOrEqual(1200);
      const [{ n }] = await t.dataSource.query<{ n: number }[]>(
        'SELECT count(*)::int AS n FROM idempotency_keys WHERE expires_at <= now()',
      );
      expect(n).toBe(0);
      expect(await keyRow(workspace.id, 'kept')).not.toBeNull();
    });
  });
});
