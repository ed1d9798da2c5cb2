// Writes BENCHMARKS.md again from bench/results/latest.json (the last full run), e.g. after a change
// to how the report is laid out: `node bench/render.mjs`. The figures are the run's, unchanged.
// `node bench/render.mjs bench/results/partial-<id>.json ...` puts the engine phases (latency, filters) of
// those partial runs, the later file winning, in place of the full run's (search kept), and says so in
// the file: how the engine is measured after it changed, without a full run on a shared machine.
import { readFileSync, writeFileSync } from 'node:fs';
import { FILTER_PHASE_OF } from './lib/filter-phases.mjs';
import { evaluateTargets, loadBaseline, renderMarkdown } from './lib/report.mjs';

const read = (path) => JSON.parse(readFileSync(path, 'utf8'));
const results = read('bench/results/latest.json');
const partials = process.argv.slice(2).map((path) => ({ path, run: read(path) }));
// The full run's search phase reads through the api, whatever the engine: kept. Its other engine phases
// may have measured another engine, so they are not set beside the partial runs' figures.
const KEPT = ['search'];
if (partials.length > 0) {
  results.engine = Object.fromEntries(
    KEPT.filter((key) => results.engine?.[key]).map((key) => [key, results.engine[key]]),
  );
  results.enginePartials = partials.map(({ path, run }) => {
    const phases = Object.keys(run.engine ?? {}).filter((key) => key !== 'settings');
    Object.assign(results.engine, run.engine);
    if (run.filters) {
      results.filters = { ...results.filters, ...run.filters };
      phases.push(...Object.keys(run.filters).map((key) => FILTER_PHASE_OF[key]));
    }
    if (run.delivery?.latency) {
      results.delivery.latency = run.delivery.latency;
      phases.push('latency');
    }
    for (const key of phases) results.machine.busyBefore[key] = run.machine.busyBefore[key];
    const { startedAt, finishedAt, command, code, machine } = run;
    return { file: path.split('/').at(-1), startedAt, finishedAt, command, code, machine, phases };
  });
  results.targets = evaluateTargets(results);
}
writeFileSync('BENCHMARKS.md', renderMarkdown(results, loadBaseline()));
console.log(
  `BENCHMARKS.md written from bench/results/latest.json (run of ${results.finishedAt})${partials.length ? ` with the engine phases of ${partials.map((p) => p.path).join(', ')}` : ''}`,
);
