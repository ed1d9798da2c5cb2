// Summarises a V8 .cpuprofile (node --cpu-prof): top functions by self time, by inclusive time, and
// self time by package. Usage: node bench/profile-summary.mjs <file.cpuprofile> [--top 25] [--json]
// [--match <regex>] (inclusive time of every function whose name or file matches, e.g. 'dist/|pino')
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '25' },
    json: { type: 'boolean', default: false },
    match: { type: 'string' },
  },
});
if (positionals.length !== 1) {
  process.stderr.write(
    'Usage: node bench/profile-summary.mjs <file.cpuprofile> [--top 25] [--json] [--match <regex>]\n',
  );
  process.exit(64);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);

const shortUrl = (url) => {
  const path = url.replace(/^file:\/\//, '');
  const pkg = path.lastIndexOf('/node_modules/');
  if (pkg >= 0) return path.slice(pkg + 1);
  const ours = path.lastIndexOf('/dist/');
  return ours >= 0 ? path.slice(ours + 1) : path;
};
const keyOf = (frame) =>
  `${frame.functionName || '(anonymous)'} ${frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : ''}`.trim();

/** Where a frame's code lives: a package, our dist/ code, node internals, or V8's own buckets. */
function packageOf(frame) {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node: (core)';
  if (url.includes('/dist/')) return `ours: ${/\/dist\/([^/]+)/.exec(url)[1]}`;
  return shortUrl(url);
}

// Time per sample: timeDeltas[i] is the time before sample i.
const self = new Map();
const inclusive = new Map();
const packages = new Map();
let total = 0;
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
for (let i = 0; i < profile.samples.length; i += 1) {
  const us = profile.timeDeltas[i] ?? 0;
  total += us;
  const leaf = byId.get(profile.samples[i]);
  add(self, keyOf(leaf.callFrame), us);
  add(packages, packageOf(leaf.callFrame), us);
  const seen = new Set();
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) {
    const key = keyOf(byId.get(id).callFrame);
    if (!seen.has(key)) {
      seen.add(key);
      add(inclusive, key, us);
    }
  }
}

const idle = self.get('(idle)') ?? 0;
const busy = total - idle;
const matching = values.match ? new RegExp(values.match) : null;
const rank = (map, exclude = [], only = null) =>
  [...map]
    .filter(([key]) => !exclude.includes(key) && (!only || only.test(key)))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, us]) => ({ key, ms: Math.round(us / 1000), ofBusy: busy > 0 ? us / busy : 0 }));

const summary = {
  file: positionals[0],
  totalMs: Math.round(total / 1000),
  busyMs: Math.round(busy / 1000),
  idleMs: Math.round(idle / 1000),
  selfByFunction: rank(self, ['(idle)']),
  selfByPackage: rank(packages, ['(idle)']),
  inclusiveByFunction: rank(inclusive, ['(root)', '(idle)', '(program)']),
  ...(matching ? { inclusiveMatching: rank(inclusive, [], matching) } : {}),
};

if (values.json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  const table = (title, rows) => {
    process.stdout.write(`\n${title}\n`);
    for (const r of rows) {
      process.stdout.write(`  ${(r.ofBusy * 100).toFixed(1).padStart(5)}%  ${String(r.ms).padStart(7)} ms  ${r.key}\n`);
    }
  };
  process.stdout.write(
    `${summary.file}: ${summary.totalMs} ms sampled, ${summary.busyMs} ms busy, ${summary.idleMs} ms idle (percentages are of busy time)\n`,
  );
  table('Self time by package', summary.selfByPackage);
  table('Self time by function', summary.selfByFunction);
  table('Inclusive time by function', summary.inclusiveByFunction);
  if (matching) table(`Inclusive time of functions matching /${values.match}/`, summary.inclusiveMatching);
}
