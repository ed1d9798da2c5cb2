import { createId } from '@paralleldrive/cuid2';
import fc from 'fast-check';
import { OPERATIONAL_EVENT_TYPES } from '../../src/operational-webhooks/operational-event.js';
import { ACCEPTED_SOURCES } from '../../src/webhooks/webhook-sources.js';
import { client, registerWebhook, WEBHOOK_KEYS } from '../support/management-api.js';
import {
  closeAgent,
  contractViolation,
  expectPrototypesUntouched,
  jsonText,
  jsonValue,
  listen,
  oddString,
  POLLUTION_KEYS,
  rawRequest,
  snapshotDatabase,
  type RawRequest,
} from '../support/hostile-input.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// FUZZ_RUNS=2000 for a longer hunt; the default keeps the file well under a minute.
const NUM_RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const WEBHOOK_FIELDS = ['url', 'calculators', 'triggers', 'name', 'source'];
const SUBMISSION_FIELDS = ['data', 'finished', 'meta'];

/** A JSON object written member by member, so `__proto__` and duplicate keys survive as sent. */
const objectText = (entries: [string, unknown][]) =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`;

/** Mostly a valid body (`validValue` per field) with some members replaced, dropped, added or repeated. */
const mutatedBody = (fields: string[], validValue: Record<string, () => fc.Arbitrary<unknown>>) =>
  fc
    .tuple(
      fc.record(Object.fromEntries(fields.map((f) => [f, fc.option(validValue[f](), { freq: 5 })]))),
      fc.array(fc.tuple(fc.oneof(fc.constantFrom(...POLLUTION_KEYS, ...fields), oddString(3)), jsonValue()), {
        maxLength: 3,
      }),
    )
    .map(([base, extra]) => {
      const entries = Object.entries(base).filter(([, v]) => v !== null) as [string, unknown][];
      return objectText([...entries, ...extra]);
    });

/** Receiver urls: a plain one, odd paths, odd hosts. */
const receiverUrl = () =>
  fc.oneof(
    fc.constant('https://receiver.example.com/hook'),
    oddString().map((s) => `https://receiver.example.com/${s}`),
    oddString().map((s) => `http://${s}`),
  );

describe('fuzz: request bodies', () => {
  let t: TestApp;
  let port: number;
  let key: string;
  let calculatorId: string;
  let foreignCalculatorId: string;
  let webhookId: string;

  beforeAll(async () => {
    // Rate limiting off and a high webhook cap, so every run reaches validation.
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '0', MAX_WEBHOOKS_PER_WORKSPACE: '100000' });
    port = await listen(t);
    const own = await createWorkspace(t, 'Own');
    key = own.key;
    calculatorId = (await createCalculator(t, own.workspace.id)).id;
    const other = await createWorkspace(t, 'Other');
    foreignCalculatorId = (await createCalculator(t, other.workspace.id)).id;
    // Bound webhooks, so an accepted submission also writes deliveries.
    const webhook = await registerWebhook(client(t, key), {
      url: 'https://receiver.example.com/own',
      calculators: [calculatorId],
    });
    webhookId = webhook.id;
  });
  afterAll(async () => {
    closeAgent();
    await t.close();
  });

  /** Sends one request; a 2xx is checked by `accepted`, anything else must be documented and change nothing. */
  async function expectHandled(req: RawRequest, accepted: (body: unknown) => void): Promise<void> {
    const before = await snapshotDatabase(t);
    const res = await rawRequest(port, req);
    expect({ violation: contractViolation(req, res), body: req.body?.slice(0, 300) }).toEqual({
      violation: null,
      body: req.body?.slice(0, 300),
    });
    if (res.status < 300) accepted(JSON.parse(res.text));
    else expect(await snapshotDatabase(t)).toEqual(before);
    expectPrototypesUntouched();
  }

  const post = (path: string, body: string, contentType = 'application/json'): RawRequest => ({
    method: 'POST',
    path,
    headers: { 'x-ac-api-key': key, 'content-type': contentType },
    body,
  });

  describe('POST /webhooks', () => {
    const validValue: Record<string, () => fc.Arbitrary<unknown>> = {
      url: receiverUrl,
      calculators: () =>
        fc.oneof(
          fc.constant([calculatorId]),
          fc.constant([foreignCalculatorId]),
          fc.constant([calculatorId, foreignCalculatorId]),
          fc.array(fc.oneof(fc.constant(createId()), oddString()), { maxLength: 3 }),
        ),
      triggers: () => fc.constantFrom(['newSubmission'], ['newSubmission', 'newSubmission'], [], ['other']),
      name: () => oddString(),
      source: () => fc.oneof(fc.constantFrom(...ACCEPTED_SOURCES), oddString(3)),
    };

    it('answers any body with a webhook or a documented 4xx, and a 4xx changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(mutatedBody(WEBHOOK_FIELDS, validValue), jsonText(WEBHOOK_FIELDS)), async (body) => {
          await expectHandled(post('/api/v1/webhooks', body), (res) => {
            const { data } = res as { data: Record<string, unknown> };
            expect(Object.keys(data).sort()).toEqual(WEBHOOK_KEYS);
          });
        }),
        { numRuns: NUM_RUNS },
      );
    });

    it('never lets a __proto__, constructor or prototype member through, nor pollutes a prototype', async () => {
      const valid = { url: 'https://receiver.example.com/p', calculators: [calculatorId] };
      for (const pollution of POLLUTION_KEYS) {
        for (const value of [{ polluted: true, isAdmin: true }, 'x', null, [1]]) {
          const body = objectText([...Object.entries(valid), [pollution, value]]);
          await expectHandled(post('/api/v1/webhooks', body), () => {
            throw new Error(`accepted ${body}`);
          });
        }
      }
    });
  });

  describe('POST /operational-webhooks', () => {
    const fields = ['url', 'events'];
    const validValue: Record<string, () => fc.Arbitrary<unknown>> = {
      url: receiverUrl,
      events: () =>
        fc.oneof(fc.subarray([...OPERATIONAL_EVENT_TYPES]), fc.array(fc.oneof(fc.constant('x'), oddString(3)))),
    };

    // Past the cap of 10 a valid body is a 400 too, which must change nothing either.
    it('answers any body with an operational webhook or a documented 4xx, and a 4xx changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(mutatedBody(fields, validValue), jsonText(fields)), async (body) => {
          await expectHandled(post('/api/v1/operational-webhooks', body), (res) => {
            const { data } = res as { data: Record<string, unknown> };
            expect(data.url).toEqual(expect.any(String));
            expect(data.secret).toMatch(/^whsec_/);
          });
        }),
        { numRuns: NUM_RUNS },
      );
    });
  });

  describe('POST /calculators/{id}/submissions', () => {
    const submissionBody = fc.oneof(
      fc
        .record({
          data: fc.option(jsonValue(['a', 'b']), { freq: 5 }),
          finished: fc.option(fc.oneof(fc.boolean(), jsonValue()), { freq: 2 }),
          meta: fc.option(jsonValue(['source']), { freq: 2 }),
          extra: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...POLLUTION_KEYS), oddString(3)), jsonValue()), {
            maxLength: 2,
          }),
        })
        .map(({ extra, ...fields }) =>
          objectText([...(Object.entries(fields).filter(([, v]) => v !== null) as [string, unknown][]), ...extra]),
        ),
      jsonText(SUBMISSION_FIELDS),
      // Answers made of hostile keys and values, the body a real integration forwards.
      fc
        .dictionary(fc.oneof(fc.constantFrom(...POLLUTION_KEYS), oddString(4)), jsonValue(), { maxKeys: 8 })
        .map((data) => objectText([['data', data]])),
    );

    it('answers any body with a submission or a documented 4xx, and a 4xx writes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(submissionBody, async (body) => {
          await expectHandled(post(`/api/v1/calculators/${calculatorId}/submissions`, body), (res) => {
            const { data } = res as { data: { calculatorId: string } };
            expect(data.calculatorId).toBe(calculatorId);
          });
        }),
        { numRuns: NUM_RUNS },
      );
    });

    it("writes nothing for another workspace's calculator, whatever the body", async () => {
      await fc.assert(
        fc.asyncProperty(submissionBody, async (body) => {
          await expectHandled(post(`/api/v1/calculators/${foreignCalculatorId}/submissions`, body), () => {
            throw new Error('accepted a submission to a foreign calculator');
          });
        }),
        { numRuns: 40 },
      );
    });

    it('keeps answers named __proto__, constructor, prototype or toString as plain data, without polluting', async () => {
      const answers =
        '{"__proto__":{"polluted":true},"constructor":{"prototype":{"isAdmin":true}},"prototype":1,"toString":"x","a":1}';
      const body = `{"data":${answers},"meta":{"valueOf":{"hasOwnProperty":2}}}`;
      await expectHandled(post(`/api/v1/calculators/${calculatorId}/submissions`, body), (res) => {
        const { data } = res as { data: { id: string; data: object; meta: object } };
        expect(JSON.stringify(data.data)).toBe(answers);
        expect(JSON.stringify(data.meta)).toBe('{"valueOf":{"hasOwnProperty":2}}');
      });
      const [row] = await t.dataSource.query(
        `SELECT data::text AS data FROM submissions ORDER BY created_at DESC, id DESC LIMIT 1`,
      );
      expect(Object.keys(JSON.parse(row.data)).sort()).toEqual([
        '__proto__',
        'a',
        'constructor',
        'prototype',
        'toString',
      ]);
    });
  });
  describe('POST /webhooks/{id}/recover', () => {
    let recoverWebhookId: string;
    beforeAll(async () => {
      const api = client(t, key);
      recoverWebhookId = (
        await registerWebhook(api, { url: 'https://receiver.example.com/r', calculators: [calculatorId] })
      ).id;
    });

    const timestamp = fc.oneof(
      fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString()),
      fc.integer({ min: -40 * 86_400_000, max: 86_400_000 }).map((ago) => new Date(Date.now() + ago).toISOString()),
      oddString(),
      jsonValue(),
    );
    const recoverBody = fc.oneof(
      fc
        .record({
          since: fc.option(timestamp, { freq: 6 }),
          until: fc.option(timestamp, { freq: 2 }),
          dryRun: fc.option(fc.oneof(fc.boolean(), jsonValue()), { freq: 2 }),
          extra: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...POLLUTION_KEYS), oddString(3)), jsonValue()), {
            maxLength: 1,
          }),
        })
        .map(({ extra, ...fields }) =>
          objectText([...(Object.entries(fields).filter(([, v]) => v !== null) as [string, unknown][]), ...extra]),
        ),
      jsonText(['since', 'until', 'dryRun']),
    );

    it('answers any body with a count, a running recovery or a documented 4xx, and a 4xx writes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(recoverBody, async (body) => {
          await expectHandled(post(`/api/v1/webhooks/${recoverWebhookId}/recover`, body), (res) => {
            const { data } = res as { data: { matched: number; status?: string } };
            expect(data.matched).toBe(0);
            if (data.status !== undefined) expect(data.status).toBe('running');
          });
        }),
        { numRuns: NUM_RUNS },
      );
    });
  });

  describe('POST /webhooks/{id}/secret/rotate, /disable, /enable, /test (DESIGN 7)', () => {
    const rotateBody = fc.oneof(
      fc
        .record({
          overlapSeconds: fc.option(fc.oneof(fc.integer({ min: -10, max: 700_000 }), fc.double(), jsonValue()), {
            freq: 3,
          }),
          extra: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...POLLUTION_KEYS), oddString(3)), jsonValue()), {
            maxLength: 2,
          }),
        })
        .map(({ overlapSeconds, extra }) =>
          objectText([
            ...(overlapSeconds === null ? [] : [['overlapSeconds', overlapSeconds] as [string, unknown]]),
            ...extra,
          ]),
        ),
      jsonText(['overlapSeconds']),
    );

    it('answers any rotate body with a new key or a documented 4xx, and a 4xx changes nothing', async () => {
      await fc.assert(
        fc.asyncProperty(rotateBody, async (body) => {
          await expectHandled(post(`/api/v1/webhooks/${webhookId}/secret/rotate`, body), (res) => {
            const { data } = res as { data: object };
            expect(Object.keys(data).sort()).toEqual(['key', 'previousKeyExpiresAt']);
          });
        }),
        { numRuns: NUM_RUNS },
      );
    });

    it('refuses any member in the body of the operations that take none', async () => {
      const members = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...POLLUTION_KEYS), oddString(3)), jsonValue()), {
        minLength: 1,
        maxLength: 3,
      });
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('disable', 'enable', 'test'), members, async (action, entries) => {
          await expectHandled(post(`/api/v1/webhooks/${webhookId}/${action}`, objectText(entries)), () => {
            throw new Error(`accepted a body on ${action}`);
          });
        }),
        { numRuns: 60 },
      );
    });
  });
});
