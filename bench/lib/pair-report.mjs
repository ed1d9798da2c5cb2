// bench/pair.sh's last step: `node bench/lib/pair-report.mjs PHASES before=<json> now=<json> ...` (the
// partial results of each round, before first) -> bench/results/pair-latest.json, and a summary on stdout.
import { readFileSync, writeFileSync } from 'node:fs';
import process from 'node:process';
import { median } from './report.mjs';

const [phases, ...args] = process.argv.slice(2);

const load = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The figures of one partial run (`r`, read from `path`) that the pair compares. */
function figures(path, r) {
  const one = r.delivery?.oneWorker;
  const latency = r.delivery?.latency;
  return {
    file: path,
    startedAt: r.startedAt,
    commit: r.code?.commit,
    node: r.machine?.node,
    busyBefore: r.machine?.busyBefore,
    bullmqPerSec: r.ceilings?.bullmq?.jobsPerSec ?? null,
    deliveriesPerSec: one?.perSec ?? null,
    cpuMsPerDelivery: one?.cpuMsPerDelivery ?? null,
    receiptP50Ms: latency?.receiptMs?.p50 ?? null,
    receiptP99Ms: latency?.receiptMs?.p99 ?? null,
    responseP99Ms: latency?.responseMs?.p99 ?? null,
  };
}

const rounds = [];
let machine;
for (let i = 0; i < args.length; i += 2) {
  const [beforePath, nowPath] = [args[i].replace(/^before=/, ''), args[i + 1].replace(/^now=/, '')];
  const nowRun = load(nowPath);
  machine ??= nowRun.machine;
  const before = figures(beforePath, load(beforePath));
  const now = figures(nowPath, nowRun);
  const ratio = before.deliveriesPerSec && now.deliveriesPerSec ? now.deliveriesPerSec / before.deliveriesPerSec : null;
  const shareOfBullmq = now.bullmqPerSec && now.deliveriesPerSec ? now.deliveriesPerSec / now.bullmqPerSec : null;
  rounds.push({ before, now, ratio, shareOfBullmq });
}
const pick = (side, key) => median(rounds.map((r) => r[side][key]));
const result = {
  phases,
  machine,
  rounds,
  medians: {
    ratio: median(rounds.map((r) => r.ratio)),
    shareOfBullmq: median(rounds.map((r) => r.shareOfBullmq)),
    before: { deliveriesPerSec: pick('before', 'deliveriesPerSec'), receiptP99Ms: pick('before', 'receiptP99Ms') },
    now: { deliveriesPerSec: pick('now', 'deliveriesPerSec'), receiptP99Ms: pick('now', 'receiptP99Ms') },
  },
  finishedAt: new Date().toISOString(),
};
writeFileSync('bench/results/pair-latest.json', `${JSON.stringify(result, null, 1)}\n`);

const f = (n, d = 0) => (typeof n === 'number' ? n.toFixed(d) : '-');
for (const [i, r] of rounds.entries()) {
  console.log(
    `round ${i + 1}: one worker ${f(r.before.deliveriesPerSec)} -> ${f(r.now.deliveriesPerSec)}/s (${f(r.ratio, 2)}x, ` +
      `${f((r.shareOfBullmq ?? NaN) * 100, 1)}% of bare BullMQ); receipt p99 ${f(r.before.receiptP99Ms, 1)} -> ${f(r.now.receiptP99Ms, 1)} ms`,
  );
}
console.log(`median ratio ${f(result.medians.ratio, 2)}x; written to bench/results/pair-latest.json`);
