import { appendFileSync, mkdirSync } from 'node:fs';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { Received } from './fault-receiver.js';
import { sleep } from './ports.js';
import type { Scenario, Webhook } from './scenario.js';
import type { SubmissionResult } from './submission-stream.js';
import { whereStuck } from './stuck.js';

export const SUMMARY_FILE = 'test-results/faults/summaries.jsonl';

interface DeliveryRow {
  id: string;
  webhook_id: string;
  submission_id: string;
  n: number | null;
  calculator_id: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: number;
  max_attempts: number;
  last_status_code: number | null;
  attempts: number;
  answered_attempts: number;
  timed_out_attempts: number;
}

export interface EndState {
  submissions: { sent: number; accepted: number; rejected: Record<string, number>; committedButNotAccepted: number };
  deliveries: { total: number; succeeded: number; failed: number; cancelled: number; pending: number };
  attempts: number;
  maxAttempts: number;
  receipts: number;
  /** Requests for a delivery the receiver had already accepted with a 2xx: what it must de-duplicate. */
  duplicates: number;
  /** Requests the receiver got whose attempt left no record: each one fails the scenario. */
  unrecordedSends: number;
  /** Per webhook: deliveries succeeded/failed/cancelled, and requests its receiver got. */
  byReceiver: Record<string, string>;
  failures: string[];
}

/** Waits until no delivery is pending (the stream must be over), or the time is up. */
export async function waitForSettled(s: Scenario, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let pending = -1;
  while (Date.now() < deadline) {
    try {
      const { rows } = await s.db.query(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'pending'`);
      pending = rows[0].n as number;
      if (pending === 0) return 0;
    } catch {
      // the private Postgres may be down a moment longer
    }
    await sleep(250);
  }
  return pending;
}

const isBinding = (w: Webhook, calculatorId: string) => w.calculatorIds.includes(calculatorId);

/**
 * The end state in Postgres and at the receivers, against the promises of DESIGN 5: every delivery
 * ended; `succeeded` ones reached their receiver; `failed` ones only when the receiver accepted no
 * attempt of the schedule; `cancelled` ones only for a removed webhook; nothing after a DELETE.
 */
export async function checkEndState(s: Scenario, results: SubmissionResult[]): Promise<EndState> {
  const failures: string[] = [];
  const fail = (message: string) => failures.length < 200 && failures.push(message);

  const { rows: deliveries } = await s.db.query<DeliveryRow>(`
    SELECT d.id, d.webhook_id, d.submission_id, (s.data->>'n')::int AS n, s.calculator_id, d.status,
           d.attempt_count, d.max_attempts, d.last_status_code,
           (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts,
           (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.status_code IS NOT NULL)
             AS answered_attempts,
           (SELECT count(*)::int FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.error LIKE 'Timed out%')
             AS timed_out_attempts
    FROM deliveries d JOIN submissions s ON s.id = d.submission_id`);
  const { rows: submissions } = await s.db.query<{ id: string; n: number; calculator_id: string }>(
    `SELECT id, (data->>'n')::int AS n, calculator_id FROM submissions`,
  );

  const byN = new Map(results.map((r) => [r.n, r]));
  const accepted = results.filter((r) => r.submissionId);
  const stored = new Set(submissions.map((r) => r.id));
  for (const r of accepted) {
    if (!stored.has(r.submissionId!)) fail(`accepted submission ${r.submissionId} (n=${r.n}) is not in Postgres`);
  }
  const acceptedIds = new Set(accepted.map((r) => r.submissionId));
  const committedButNotAccepted = submissions.filter((r) => !acceptedIds.has(r.id)).length;

  // Outbox: one delivery per submission and webhook bound to its calculator (a removed one: by timing).
  const deliveriesOf = new Map<string, DeliveryRow[]>();
  for (const d of deliveries) deliveriesOf.set(d.submission_id, [...(deliveriesOf.get(d.submission_id) ?? []), d]);
  const removedAt = new Map(s.removals.map((r) => [r.webhookId, r]));
  for (const sub of submissions) {
    const own = deliveriesOf.get(sub.id) ?? [];
    const record = byN.get(sub.n);
    for (const w of s.webhooks.filter((w) => isBinding(w, sub.calculator_id))) {
      const count = own.filter((d) => d.webhook_id === w.id).length;
      const removal = removedAt.get(w.id);
      if (count > 1) fail(`submission ${sub.id} has ${count} deliveries to webhook ${w.name}`);
      // A webhook registered mid-stream gets the submissions sent after it was registered.
      if (record && record.startedAt < w.registeredAt) {
        if (record.endedAt < w.registeringAt && count !== 0)
          fail(`n=${sub.n}, sent before ${w.name} existed, has a delivery`);
        continue;
      }
      if (!removal && count !== 1) fail(`submission ${sub.id} (n=${sub.n}) has no delivery to webhook ${w.name}`);
      if (removal && record && record.endedAt < removal.startedAt && count !== 1) {
        fail(`submission n=${sub.n}, accepted before DELETE of ${w.name}, has no delivery to it`);
      }
      if (removal && record && record.startedAt > removal.returnedAt && count !== 0) {
        fail(`submission n=${sub.n}, sent after DELETE of ${w.name} returned, has a delivery to it`);
      }
    }
  }

  // Receipts: signed, the payload the delivery names, one webhook-id per (webhook, submission).
  const webhookById = new Map(s.webhooks.map((w) => [w.id, w]));
  const deliveryById = new Map(deliveries.map((d) => [d.id, d]));
  const receiptsOf = new Map<string, Received[]>();
  let receipts = 0;
  for (const w of s.webhooks) {
    if (!w.receiver) continue;
    const verifier = new StandardWebhook(w.secret);
    const idsBySubmission = new Map<string, Set<string>>();
    for (const r of w.receiver.received) {
      receipts += 1;
      receiptsOf.set(r.webhookId, [...(receiptsOf.get(r.webhookId) ?? []), r]);
      const d = deliveryById.get(r.webhookId);
      let payload: { webhookId?: string; data?: { id?: string } };
      try {
        payload = verifier.verify(r.body, r.headers as Record<string, string>) as typeof payload;
      } catch (error) {
        fail(`${w.name}: request with webhook-id ${r.webhookId} fails signature check: ${(error as Error).message}`);
        continue;
      }
      if (!d || d.webhook_id !== w.id) {
        fail(`${w.name} got webhook-id ${r.webhookId}, which is no delivery of this webhook`);
        continue;
      }
      if (payload.webhookId !== w.id || payload.data?.id !== d.submission_id) {
        fail(`${w.name}: payload of ${r.webhookId} names webhook ${payload.webhookId}, submission ${payload.data?.id}`);
      }
      const ids = idsBySubmission.get(d.submission_id) ?? new Set<string>();
      idsBySubmission.set(d.submission_id, ids.add(r.webhookId));
    }
    for (const [submissionId, ids] of idsBySubmission) {
      if (ids.size > 1) fail(`${w.name} got submission ${submissionId} under ${ids.size} webhook-ids`);
    }
    const removal = removedAt.get(w.id);
    const late = removal ? w.receiver.received.filter((r) => r.at > removal.returnedAt) : [];
    if (late.length > 0) {
      fail(
        `${w.name} got ${late.length} requests after its DELETE returned (first ${late[0].at - removal!.returnedAt} ms after)`,
      );
    }
  }

  // Outcomes: nothing pending; succeeded means received; failed means the receiver never accepted it.
  let duplicates = 0;
  let unrecordedSends = 0;
  let maxAttempts = 0;
  let attempts = 0;
  const counts = { total: deliveries.length, succeeded: 0, failed: 0, cancelled: 0, pending: 0 };
  for (const d of deliveries) {
    counts[d.status] += 1;
    attempts += d.attempts;
    maxAttempts = Math.max(maxAttempts, d.attempt_count);
    const w = webhookById.get(d.webhook_id);
    const got = receiptsOf.get(d.id) ?? [];
    const firstOk = got.findIndex((r) => r.ok);
    if (firstOk >= 0) duplicates += got.length - firstOk - 1;
    unrecordedSends += Math.max(0, got.length - d.attempts);
    const label = `delivery ${d.id} (${w?.name}, n=${d.n})`;
    if (d.attempts !== d.attempt_count)
      fail(`${label}: attempt_count ${d.attempt_count} but ${d.attempts} attempt rows`);
    if (d.attempt_count > d.max_attempts) fail(`${label}: ${d.attempt_count} attempts, more than ${d.max_attempts}`);
    // Every request a receiver got is an attempt in the log (DESIGN 5), at worst logged late with its
    // outcome unknown, once the lease of a sender that died ran out.
    if (w?.receiver && got.length > d.attempts) {
      fail(`${label}: its receiver got ${got.length} requests, ${d.attempts} attempts recorded`);
    }
    if (w?.receiver && got.length < d.answered_attempts) {
      fail(`${label}: ${d.answered_attempts} answered attempts recorded, receiver saw ${got.length}`);
    }
    if (d.status === 'pending') fail(`${label} is still pending after ${d.attempt_count} attempts`);
    if (d.status === 'cancelled' && !removedAt.has(d.webhook_id)) fail(`${label} cancelled, webhook not removed`);
    if (d.status === 'succeeded' && w?.receiver && firstOk < 0) {
      fail(`${label} succeeded, yet its receiver never answered it with a 2xx`);
    }
    if (d.status === 'failed') {
      // A 2xx written after the sender had given up (its timeout) is no success; any other is.
      const oks = got.filter((r) => r.ok).length;
      if (oks > d.timed_out_attempts) {
        fail(
          `${label} failed, yet its receiver answered ${oks} attempts with a 2xx (${d.timed_out_attempts} timed out)`,
        );
      }
      if (d.attempt_count < d.max_attempts && d.last_status_code !== 410) {
        fail(
          `${label} failed after ${d.attempt_count} of ${d.max_attempts} attempts, last status ${d.last_status_code}`,
        );
      }
    }
  }
  for (const w of s.webhooks) {
    if (w.receiver && !removedAt.has(w.id) && !deliveries.some((d) => d.webhook_id === w.id)) {
      fail(`${w.name} has no deliveries at all`);
    }
  }

  const byReceiver: Record<string, string> = {};
  for (const w of s.webhooks) {
    const own = deliveries.filter((d) => d.webhook_id === w.id);
    const n = (status: string) => own.filter((d) => d.status === status).length;
    byReceiver[w.name] =
      `${n('succeeded')}/${n('failed')}/${n('cancelled')}, ${w.receiver?.received.length ?? 0} requests`;
  }
  const rejected: Record<string, number> = {};
  for (const r of results.filter((r) => !r.submissionId)) rejected[r.outcome] = (rejected[r.outcome] ?? 0) + 1;
  return {
    submissions: { sent: results.length, accepted: accepted.length, rejected, committedButNotAccepted },
    deliveries: counts,
    attempts,
    maxAttempts,
    receipts,
    duplicates,
    unrecordedSends,
    byReceiver,
    failures,
  };
}

/** Deliveries of healthy webhooks from submission sent to first receipt, in ms, for the given submissions. */
export function receiptLatencies(s: Scenario, results: SubmissionResult[], webhooks: Webhook[]): number[] {
  const sentAt = new Map(results.filter((r) => r.submissionId).map((r) => [r.submissionId!, r.startedAt]));
  const latencies: number[] = [];
  for (const w of webhooks) {
    const first = new Map<string, number>();
    for (const r of w.receiver!.received) {
      const submissionId = (JSON.parse(r.body) as { data: { id: string } }).data.id;
      if (!first.has(submissionId)) first.set(submissionId, r.at);
    }
    for (const [submissionId, at] of first) {
      const sent = sentAt.get(submissionId);
      if (sent !== undefined) latencies.push(at - sent);
    }
  }
  return latencies.sort((a, b) => a - b);
}

export const percentile = (sorted: number[], p: number): number =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

export interface Summary {
  scenario: string;
  injected: string;
  command: string;
  passed: boolean;
  durationMs: number;
  [key: string]: unknown;
}

/** Prints the scenario's one-line JSON summary and keeps it for RELIABILITY.md. */
export function report(summary: Summary): void {
  const line = JSON.stringify(summary);
  process.stdout.write(`FAULTS-SUMMARY ${line}\n`);
  mkdirSync('test-results/faults', { recursive: true });
  appendFileSync(SUMMARY_FILE, `${line}\n`);
}

export interface Finish {
  scenario: string;
  file: string;
  injected: string;
  results: SubmissionResult[];
  settleTimeoutMs?: number;
  /** Broken promises the scenario found itself (e.g. a probe that got a 500). */
  extraFailures?: string[];
  extra?: Record<string, unknown>;
}

function describeStream(results: SubmissionResult[]): string {
  const starts = results.map((r) => r.startedAt);
  const seconds = (Math.max(...starts) - Math.min(...starts)) / 1000;
  return `${results.length} submissions over ${Math.round(seconds)} s (${Math.round(results.length / Math.max(seconds, 1))}/s)`;
}

/** Waits for every delivery to end, checks the end state, prints the summary; throws on any broken promise. */
export async function settleCheckAndReport(s: Scenario, f: Finish): Promise<EndState> {
  const pending = await waitForSettled(s, f.settleTimeoutMs ?? 90_000);
  await sleep(500); // a stray duplicate of an attempt that was in flight arrives now or never
  const state = await checkEndState(s, f.results);
  state.failures.unshift(...(f.extraFailures ?? []));
  // The client of a submission the api did not accept saw an error: 503 (retry later) or no answer
  // within its timeout (an overloaded machine). Anything else, a 500 above all, is a defect.
  const wrongly = f.results.filter((r) => !r.submissionId && r.outcome !== 503 && r.outcome !== 'timeout');
  if (wrongly.length > 0) {
    const first = wrongly[0];
    state.failures.unshift(
      `${wrongly.length} submissions answered neither 200 nor 503 nor timed out, e.g. n=${first.n}: ${first.outcome} after ${first.endedAt - first.startedAt} ms ${first.detail ?? ''}`,
    );
  }
  // The scenario must have exercised the delivery path with most of its stream.
  const accepted = f.results.filter((r) => r.submissionId).length;
  if (accepted < f.results.length / 2) {
    state.failures.unshift(`only ${accepted} of ${f.results.length} submissions accepted`);
  }
  if (pending > 0) {
    // Why the first ones wait (their hosts' wakes), right after the count: the summary shows the first three failures.
    state.failures.unshift(...(await whereStuck(s, 2)));
    state.failures.unshift(`${pending} deliveries still pending after ${f.settleTimeoutMs ?? 90_000} ms`);
  }
  const summary = {
    scenario: f.scenario,
    injected: f.injected,
    command: `npm run test:faults -- ${f.file}`,
    passed: state.failures.length === 0,
    durationMs: Date.now() - s.startedAt,
    stream: describeStream(f.results),
    submissions: state.submissions,
    deliveries: state.deliveries,
    attempts: state.attempts,
    maxAttempts: state.maxAttempts,
    receipts: state.receipts,
    duplicates: state.duplicates,
    unrecordedSends: state.unrecordedSends,
    ...f.extra,
    byReceiver: state.byReceiver,
    ...(state.failures.length > 0
      ? { failures: state.failures.length, firstFailures: state.failures.slice(0, 3) }
      : {}),
  };
  report(summary);
  if (state.failures.length > 0) {
    throw new Error(
      `${f.scenario}: ${state.failures.length} broken promises:\n  ${state.failures.slice(0, 30).join('\n  ')}\n${s.processOutput()}`,
    );
  }
  return state;
}

/** The deliveries of these webhooks that waited longest for their first attempt, with their attempt log. */
export async function slowestDeliveries(s: Scenario, webhooks: Webhook[], count = 5): Promise<string[]> {
  const { rows } = await s.db.query<{ id: string; wait_ms: number; attempts: string }>(
    `SELECT d.id, (EXTRACT(EPOCH FROM (min(a.started_at) - d.created_at)) * 1000)::int AS wait_ms,
            string_agg(a.attempt_number || ':' || (EXTRACT(EPOCH FROM (a.started_at - d.created_at)) * 1000)::int || 'ms:'
                       || coalesce(a.status_code::text, a.error), ' ' ORDER BY a.attempt_number) AS attempts
     FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id
     WHERE d.webhook_id = ANY($1)
     GROUP BY d.id, d.created_at ORDER BY wait_ms DESC LIMIT $2`,
    [webhooks.map((w) => w.id), count],
  );
  return rows.map((r) => `${r.id} first attempt after ${r.wait_ms} ms [${r.attempts}]`);
}
