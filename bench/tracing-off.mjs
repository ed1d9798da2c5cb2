// What tracing costs a delivery when it is off: the tracing calls of one delivery (the enqueue's span and
// trace carrier, the attempt's span and its connect, claim, send and record spans) on the
// @opentelemetry/api no-op tracer, against the same awaits without them. CPU time of this process only,
// so another load on the machine hardly moves it. Rounds alternate.
// Usage: `node bench/tracing-off.mjs [ROUNDS] [DELIVERIES]` (3, 200000), after a build (dist/).
import process from 'node:process';
import { currentTraceCarrier, inSpan } from '../dist/core/tracing/tracing.js';

const rounds = Number(process.argv[2] ?? 3);
const deliveries = Number(process.argv[3] ?? 200_000);
const STEPS = ['delivery.connect', 'delivery.claim', 'delivery.send', 'delivery.record'];

async function traced() {
  await inSpan('delivery.enqueue', { 'messaging.batch.message_count': 1 }, async () => currentTraceCarrier());
  await inSpan(
    'delivery.attempt',
    { 'delivery.id': 'd', 'webhook.id': 'w' },
    async () => {
      for (const step of STEPS) await inSpan(step, {}, async () => 1);
    },
    { parent: {} },
  );
}

async function plain() {
  await (async () => undefined)();
  await (async () => {
    for (let i = 0; i < STEPS.length; i++) await (async () => 1)();
  })();
}

const cpuUsPerDelivery = async (fn) => {
  const start = process.cpuUsage();
  for (let i = 0; i < deliveries; i++) await fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / deliveries;
};

for (let round = 1; round <= rounds; round++) {
  const off = await cpuUsPerDelivery(traced);
  const bare = await cpuUsPerDelivery(plain);
  console.log(
    `round ${round}: no-op tracer ${off.toFixed(2)} µs CPU per delivery, same awaits alone ${bare.toFixed(2)} µs: ` +
      `tracing off adds ${(off - bare).toFixed(2)} µs`,
  );
}
