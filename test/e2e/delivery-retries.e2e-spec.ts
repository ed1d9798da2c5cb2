import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_RESPONSE_BYTES, RESPONSE_EXCERPT_BYTES } from '../../src/delivery/engine/webhook-sender.js';
import {
  ATTEMPT_KEYS,
  expectNoFurtherRequests,
  FAST_MAX_ATTEMPTS,
  setupWebhook,
  submit,
  useFastDeliveryApp,
  verifySignature,
  waitForEndedDelivery,
} from '../support/delivery.js';
import { expectTimestamp, keysOf } from '../support/management-api.js';
import { waitFor, type Receiver } from '../support/receiver.js';
import type { TestApp } from '../support/test-app.js';

describe('webhook delivery: failures and retries', () => {
  const env = useFastDeliveryApp();
  const { startReceiver } = env;
  let t: TestApp;
  beforeAll(() => {
    t = env.t;
  });

  /** A webhook on `receiver`, one submission, and the delivery once it has ended. */
  const deliverTo = async (receiver: Receiver, timeoutMs = 10_000) => {
    const setup = await setupWebhook(t, receiver.url);
    await submit(setup.api, setup.calculator.id);
    const delivery = await waitForEndedDelivery(setup.api, setup.webhook.id, timeoutMs);
    return { ...setup, delivery };
  };

  it('retries a 500 and ends succeeded on the 200 that follows, with the same webhook-id', async () => {
    const receiver = await startReceiver((_req, i) => (i === 0 ? { status: 500, body: 'busy' } : { status: 200 }));
    const { delivery, secret, webhook } = await deliverTo(receiver);

    expect(delivery).toMatchObject({
      status: 'succeeded',
      attemptCount: 2,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expectTimestamp(delivery.completedAt);
    expect(delivery.attempts).toEqual([
      expect.objectContaining({ attemptNumber: 1, statusCode: 500, succeeded: false, responseBody: 'busy' }),
      expect.objectContaining({ attemptNumber: 2, statusCode: 200, succeeded: true, error: null }),
    ]);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([delivery.id, delivery.id]);
    for (const request of receiver.requests) {
      expect(verifySignature(secret, request)).toMatchObject({ webhookId: webhook.id });
    }
    expect(receiver.requests[0].body).toBe(receiver.requests[1].body);
    await expectNoFurtherRequests(receiver);
    expect(receiver.requests).toHaveLength(2);
  });

  it('gives up after the whole schedule and logs every attempt', async () => {
    const receiver = await startReceiver(() => ({ status: 500, body: 'still broken' }));
    const { delivery } = await deliverTo(receiver);

    expect(delivery).toMatchObject({
      status: 'failed',
      attemptCount: FAST_MAX_ATTEMPTS,
      maxAttempts: FAST_MAX_ATTEMPTS,
      lastStatusCode: 500,
      nextAttemptAt: null,
    });
    expectTimestamp(delivery.completedAt);
    expect(delivery.attempts).toHaveLength(FAST_MAX_ATTEMPTS);
    delivery.attempts.forEach((attempt, i) => {
      expect(keysOf(attempt)).toEqual(ATTEMPT_KEYS);
      expect(attempt).toMatchObject({
        attemptNumber: i + 1,
        trigger: 'scheduled',
        statusCode: 500,
        succeeded: false,
        responseBody: 'still broken',
      });
      expectTimestamp(attempt.startedAt);
      expect(Number.isInteger(attempt.durationMs) && attempt.durationMs >= 0).toBe(true);
    });
    // The schedule's delays (100 ms, 200 ms, +-20%) lie between the attempts.
    const gaps = receiver.requests.slice(1).map((r, i) => r.receivedAt - receiver.requests[i].receivedAt);
    expect(gaps[0]).toBeGreaterThanOrEqual(70);
    expect(gaps[1]).toBeGreaterThanOrEqual(150);
    await expectNoFurtherRequests(receiver);
    expect(receiver.requests).toHaveLength(FAST_MAX_ATTEMPTS);
  });

  it('counts a receiver slower than DELIVERY_TIMEOUT_MS as a failed attempt', async () => {
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 3000 }));
    const { delivery } = await deliverTo(receiver, 15_000);

    expect(delivery).toMatchObject({ status: 'failed', attemptCount: FAST_MAX_ATTEMPTS, lastStatusCode: null });
    expect(delivery.lastError).toMatch(/timed out/i);
    for (const attempt of delivery.attempts) {
      expect(attempt).toMatchObject({ statusCode: null, succeeded: false, responseBody: null });
      expect(attempt.error).toMatch(/timed out after 1000 ms/i);
      expect(attempt.durationMs).toBeGreaterThanOrEqual(900);
      expect(attempt.durationMs).toBeLessThan(2900);
    }
    expect(receiver.requests).toHaveLength(FAST_MAX_ATTEMPTS);
  });

  it('honours Retry-After on a 429 when it is longer than the schedule', async () => {
    const receiver = await startReceiver((_req, i) =>
      i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 },
    );
    const { delivery } = await deliverTo(receiver);

    expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    expect(delivery.attempts.map((a) => a.statusCode)).toEqual([429, 200]);
    const [first, second] = receiver.requests;
    expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(950);
    expect(second.receivedAt - first.receivedAt).toBeLessThan(5000);
  });

  it('ignores Retry-After on a 500 and keeps to the schedule', async () => {
    const receiver = await startReceiver((_req, i) =>
      i === 0 ? { status: 500, headers: { 'retry-after': '30' } } : { status: 200 },
    );
    const { delivery } = await deliverTo(receiver);

    expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    const [first, second] = receiver.requests;
    expect(second.receivedAt - first.receivedAt).toBeLessThan(5000);
  });

  it('ends the delivery failed at once on 410 Gone', async () => {
    const receiver = await startReceiver(() => ({ status: 410, body: 'gone for good' }));
    const { delivery } = await deliverTo(receiver);

    expect(delivery).toMatchObject({ status: 'failed', attemptCount: 1, lastStatusCode: 410, nextAttemptAt: null });
    expect(delivery.attempts).toEqual([
      expect.objectContaining({ attemptNumber: 1, statusCode: 410, succeeded: false, responseBody: 'gone for good' }),
    ]);
    await expectNoFurtherRequests(receiver);
    expect(receiver.requests).toHaveLength(1);
  });

  it('counts a redirect as a failure and does not follow it', async () => {
    const target = await startReceiver();
    const receiver = await startReceiver(() => ({ status: 302, headers: { location: target.url } }));
    const { delivery } = await deliverTo(receiver);

    expect(delivery).toMatchObject({ status: 'failed', attemptCount: FAST_MAX_ATTEMPTS, lastStatusCode: 302 });
    expect(delivery.attempts.every((a) => a.statusCode === 302 && !a.succeeded)).toBe(true);
    expect(receiver.requests).toHaveLength(FAST_MAX_ATTEMPTS);
    expect(target.requests).toHaveLength(0);
  });

  it('retries after the connection is reset', async () => {
    const receiver = await startReceiver((_req, i) => (i === 0 ? { reset: true } : { status: 204 }));
    const { delivery } = await deliverTo(receiver);

    expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2, lastStatusCode: 204 });
    expect(delivery.attempts[0]).toMatchObject({ statusCode: null, succeeded: false, responseBody: null });
    expect(delivery.attempts[0].error).toEqual(expect.any(String));
    expect(delivery.attempts[0].error!.length).toBeGreaterThan(0);
    expect(delivery.attempts[1]).toMatchObject({ statusCode: 204, succeeded: true });
  });

  it('retries a refused connection and gives up with the error logged', async () => {
    const receiver = await startReceiver();
    const url = receiver.url;
    await receiver.close();
    const { api, calculator, webhook } = await setupWebhook(t, url);
    await submit(api, calculator.id);
    const delivery = await waitForEndedDelivery(api, webhook.id);

    expect(delivery).toMatchObject({ status: 'failed', attemptCount: FAST_MAX_ATTEMPTS, lastStatusCode: null });
    expect(delivery.attempts.every((a) => /ECONNREFUSED/.test(a.error ?? ''))).toBe(true);
  });

  describe('response bodies', () => {
    it('keeps the first 2 KiB of a body, and fails a 2xx whose body is over 64 KiB', async () => {
      const long = 'abcdefghij'.repeat(1000);
      const receiver = await startReceiver(
        (_req, i) =>
          [
            { status: 500, body: long },
            { status: 200, body: 'x'.repeat(MAX_RESPONSE_BYTES + 1024) },
            { status: 200, body: 'thanks' },
          ][Math.min(i, 2)],
      );
      const { delivery } = await deliverTo(receiver);

      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 3 });
      const [big, tooBig, ok] = delivery.attempts;
      expect(big).toMatchObject({
        statusCode: 500,
        succeeded: false,
        responseBody: long.slice(0, RESPONSE_EXCERPT_BYTES),
      });
      expect(tooBig).toMatchObject({ statusCode: 200, succeeded: false });
      expect(tooBig.error).toMatch(/exceeds/);
      expect(ok).toMatchObject({ statusCode: 200, succeeded: true, responseBody: 'thanks' });
    });

    it('keeps the first 2 KiB of a 2xx body too large to accept, on every attempt', async () => {
      // A proxy's error page served as 200 looks like this: the excerpt is how its owner finds out.
      const receiver = await startReceiver(() => ({ status: 200, body: 'START-' + 'a'.repeat(100_000) }));
      const { delivery } = await deliverTo(receiver);

      expect(delivery).toMatchObject({ status: 'failed', attemptCount: FAST_MAX_ATTEMPTS, lastStatusCode: 200 });
      for (const attempt of delivery.attempts) {
        expect(attempt).toMatchObject({
          statusCode: 200,
          succeeded: false,
          error: `Response body exceeds ${MAX_RESPONSE_BYTES} bytes`,
        });
        expect(attempt.responseBody!.startsWith('START-')).toBe(true);
        expect(attempt.responseBody).toHaveLength(RESPONSE_EXCERPT_BYTES);
        expect(Buffer.byteLength(attempt.responseBody!, 'utf8')).toBe(RESPONSE_EXCERPT_BYTES);
      }
    });

    it('keeps what it read of a body that stalls until the attempt times out', async () => {
      const stalling = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
          res.write('first bytes, then nothing');
        });
      });
      await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(stalling.address() as AddressInfo).port}/hook`;
        const { api, calculator, webhook } = await setupWebhook(t, url);
        await submit(api, calculator.id);
        const delivery = await waitForEndedDelivery(api, webhook.id, 15_000);

        expect(delivery).toMatchObject({ status: 'failed', attemptCount: FAST_MAX_ATTEMPTS });
        for (const attempt of delivery.attempts) {
          expect(attempt).toMatchObject({
            statusCode: 200,
            succeeded: false,
            responseBody: 'first bytes, then nothing',
            error: `Timed out after ${t.config.deliveryTimeoutMs} ms`,
          });
        }
      } finally {
        stalling.closeAllConnections();
        await new Promise((resolve) => stalling.close(resolve));
      }
    }, 20_000);

    it('stores at most 2 KiB even when the cut falls inside a character', async () => {
      const receiver = await startReceiver(() => ({ status: 200, body: 'a' + '€'.repeat(1000) }));
      const { delivery } = await deliverTo(receiver);

      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1 });
      const body = delivery.attempts[0].responseBody!;
      expect(Buffer.byteLength(body, 'utf8')).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES);
      expect(body).toMatch(/^a€+$/);
    });

    it('records an attempt whose response body holds a NUL byte, and does not send again', async () => {
      const receiver = await startReceiver(() => ({ status: 200, body: 'ok\u0000ok' }));
      const { delivery } = await deliverTo(receiver);

      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1 });
      expect(delivery.attempts[0].responseBody).toBe('ok\uFFFDok');
      await expectNoFurtherRequests(receiver);
      expect(receiver.requests).toHaveLength(1);
    });
  });

  it('keeps one receiver failing from holding up another', async () => {
    const slow = await startReceiver(() => ({ hang: true }));
    const fast = await startReceiver();
    const slowSetup = await setupWebhook(t, slow.url);
    const fastSetup = await setupWebhook(t, fast.url);
    await Promise.all(Array.from({ length: 5 }, () => submit(slowSetup.api, slowSetup.calculator.id)));
    await submit(fastSetup.api, fastSetup.calculator.id);

    await waitFor(() => fast.requests.length === 1, 900, 'the healthy receiver while the other hangs');
    await waitFor(() => slow.requests.length >= 1, 5000, 'the hanging receiver');
  });
});
