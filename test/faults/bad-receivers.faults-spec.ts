import { settleCheckAndReport } from './support/end-state.js';
import type { AttemptInfo } from './support/fault-receiver.js';
import { freePort } from './support/ports.js';
import { FAST_ENV, LOAD, Scenario } from './support/scenario.js';

const SCENARIO = 'misbehaving receivers: timeouts, 500/200 flapping, 429 with Retry-After, connection resets, one down';
const TIMEOUT_MS = 500;

// About one delivery in four is unlucky at the timing-out receiver, always the same ones.
const unlucky = (webhookId: string) => [...webhookId].reduce((sum, c) => sum + c.charCodeAt(0), 0) % 4 === 0;

describe(`fault: ${SCENARIO}`, () => {
  let s: Scenario | undefined;
  afterAll(() => s?.cleanup());

  it('retries each until it succeeds, honours Retry-After, and fails only what never succeeds', async () => {
    s = await Scenario.create({
      name: 'bad-receivers',
      env: { ...FAST_ENV, DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS) },
    });
    await s.startApi();
    await s.createWorkspace(3);
    const [calcA, calcB, calcC] = s.calculatorIds;
    // Unlucky deliveries get no answer before the timeout on their first two attempts.
    const timesOut = ({ webhookId, attempt }: AttemptInfo) =>
      unlucky(webhookId) && attempt <= 2 ? { status: 200, delayMs: TIMEOUT_MS * 2 } : { status: 200 };
    // 500 for 300 ms, then 200 for 300 ms, and so on, whatever the delivery.
    const flaps = ({ now }: AttemptInfo) => ({ status: Math.floor(now / 300) % 2 === 0 ? 500 : 200 });
    const throttles = ({ attempt }: AttemptInfo) =>
      attempt === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
    const resets = ({ attempt }: AttemptInfo) => (attempt % 2 === 1 ? { reset: true } : { status: 200 });
    await s.registerWebhook('timeout', await s.startReceiver('timeout', timesOut), [calcA]);
    await s.registerWebhook('flapping', await s.startReceiver('flapping', flaps), [calcA, calcC]);
    const limited = await s.registerWebhook('429', await s.startReceiver('429', throttles), [calcB]);
    await s.registerWebhook('reset', await s.startReceiver('reset', resets), [calcB]);
    await s.registerWebhook('down', `http://127.0.0.1:${await freePort()}/hooks/down`, [calcC]);
    await s.startWorker();
    await s.startWorker();

    const results = await s.stream(LOAD.submissions).done;

    // Retry-After: 1 is longer than the schedule's first delay (100 ms), so it wins.
    const first = new Map<string, number>();
    let retryAfterGapMinMs = Infinity;
    for (const r of limited.receiver!.received) {
      if (r.attempt === 1) first.set(r.webhookId, r.at);
      if (r.attempt === 2) retryAfterGapMinMs = Math.min(retryAfterGapMinMs, r.at - first.get(r.webhookId)!);
    }
    await settleCheckAndReport(s, {
      scenario: SCENARIO,
      file: 'test/faults/bad-receivers.faults-spec.ts',
      injected: `receivers that time out (a quarter of the deliveries get no answer within the ${TIMEOUT_MS} ms timeout on their first two attempts), flap between 500 and 200 every 300 ms, answer 429 with Retry-After: 1 to every first attempt, reset the connection on every odd attempt, and one that is down (connection refused); two workers`,
      results,
      extraFailures:
        retryAfterGapMinMs >= 1000 ? [] : [`a retry came ${retryAfterGapMinMs} ms after a 429 with Retry-After: 1`],
      extra: { retryAfterGapMinMs },
    });
  });
});
