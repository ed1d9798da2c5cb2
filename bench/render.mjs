// Writes BENCHMARKS.md again from bench/results/latest.json (the last full run), e.g. after a change
// to how the report is laid out: `node bench/render.mjs`. The figures are the run's, unchanged.
import { readFileSync, writeFileSync } from 'node:fs';
import { loadBaseline, renderMarkdown } from './lib/report.mjs';

const results = JSON.parse(readFileSync('bench/results/latest.json', 'utf8'));
writeFileSync('BENCHMARKS.md', renderMarkdown(results, loadBaseline()));
console.log(`BENCHMARKS.md written from bench/results/latest.json (run of ${results.finishedAt})`);
