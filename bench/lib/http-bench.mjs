// autocannon runs: a discarded warm-up, then the measured run, summarised to the figures the report uses.
import autocannon from 'autocannon';
import { Pool, request } from 'undici';

const round = (n, digits = 1) => (n === null || n === undefined ? null : Number(n.toFixed(digits)));

/** The measured figures of one autocannon result; req/s counts every completed response. */
export function summarise(result) {
  return {
    requestsPerSec: round(result.requests.total / result.duration),
    requests: result.requests.total,
    bytesPerResponse: result.requests.total > 0 ? Math.round(result.throughput.total / result.requests.total) : null,
    durationSec: round(result.duration, 2),
    latencyMs: {
      mean: round(result.latency.mean, 2),
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count]),
    ),
  };
}

/**
 * `options` are autocannon's (url, requests, headers, ...). The warm-up run uses the same options,
 * so JIT, connection pools and Postgres caches are warm when measuring starts. With `cpu` (a
 * CpuProbe), the CPU time per request of the server's processes in the measured run is reported
 * too: unlike req/s, it barely depends on what else the machine is doing.
 */
export async function measure(options, { connections, warmupSec, durationSec }, cpu = null) {
  const base = { connections, timeout: 10, ...options };
  if (warmupSec > 0) await autocannon({ ...base, duration: warmupSec });
  const before = cpu ? await cpu.snapshot() : null;
  const summary = summarise(await autocannon({ ...base, duration: durationSec }));
  if (!cpu) return summary;
  const used = cpu.since(before, await cpu.snapshot());
  const perRequest = Object.fromEntries(
    Object.entries(used).map(([name, ms]) => [name, summary.requests > 0 ? round(ms / summary.requests, 3) : null]),
  );
  return { ...summary, cpuMsPerRequest: perRequest };
}

/** One call of the API with a workspace's key; the parsed JSON answer, or throws on a non-2xx. */
export async function apiRequest(baseUrl, apiKey, method, path, body) {
  const response = await request(`${baseUrl}${path}`, {
    method,
    headers: { 'x-ac-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.body.text();
  if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text}`);
  return text ? JSON.parse(text) : null;
}

/**
 * POSTs `count` submissions (`body` each), `concurrency` at a time over one keep-alive pool, the i-th
 * to `calculatorOf(i)`; throws on the first answer that is not 200.
 */
export async function postSubmissions(baseUrl, apiKey, { count, concurrency, calculatorOf, body }) {
  const pool = new Pool(baseUrl, { connections: concurrency });
  let next = 0;
  const one = async () => {
    while (next < count) {
      const i = next++;
      const response = await pool.request({
        method: 'POST',
        path: `/api/v1/calculators/${calculatorOf(i)}/submissions`,
        headers: { 'x-ac-api-key': apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`submission ${i}: ${response.statusCode} ${text}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, one));
  } finally {
    await pool.close();
  }
}
