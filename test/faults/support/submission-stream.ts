import { Agent, request } from 'undici';

export interface SubmissionResult {
  n: number;
  calculatorId: string;
  startedAt: number;
  endedAt: number;
  /** HTTP status, or `timeout` (no answer within the client timeout) or `error` (connection failed). */
  outcome: number | 'timeout' | 'error';
  /** The submission id when the api accepted it (200). */
  submissionId?: string;
  detail?: string;
}

export interface StreamOptions {
  apiUrl: string;
  apiKey: string;
  calculatorIds: string[];
  count: number;
  perSecond: number;
  /** A request without an answer after this long counts as a hang. */
  clientTimeoutMs: number;
  /** First submission number, so two streams of one scenario number their submissions apart. */
  firstN?: number;
}

/**
 * A steady stream of submissions at a fixed rate (not closed-loop: a slow api does not slow the
 * stream down), spread over the calculators in turn. Every answer is recorded.
 */
export class SubmissionStream {
  readonly results: SubmissionResult[] = [];
  readonly done: Promise<SubmissionResult[]>;
  private readonly agent = new Agent({ connections: 128, keepAliveTimeout: 10_000 });
  private readonly waiters: { n: number; resolve: () => void }[] = [];
  private sent = 0;

  constructor(private readonly options: StreamOptions) {
    this.done = this.run();
  }

  /** Resolves once `n` submissions have been sent (answered or not). */
  reached(n: number): Promise<void> {
    if (this.sent >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  private async run(): Promise<SubmissionResult[]> {
    const { count, perSecond } = this.options;
    const start = Date.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const due = start + (i * 1000) / perSecond;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(this.submit(i));
      this.sent = i + 1;
      for (const w of this.waiters.filter((w) => w.n <= this.sent)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve();
      }
    }
    await Promise.all(pending);
    await this.agent.close();
    return this.results.sort((a, b) => a.n - b.n);
  }

  private async submit(i: number): Promise<void> {
    const { apiUrl, apiKey, calculatorIds, clientTimeoutMs } = this.options;
    const n = (this.options.firstN ?? 0) + i;
    const calculatorId = calculatorIds[i % calculatorIds.length];
    const startedAt = Date.now();
    const result: SubmissionResult = { n, calculatorId, startedAt, endedAt: 0, outcome: 'error' };
    try {
      const res = await request(`${apiUrl}/api/v1/calculators/${calculatorId}/submissions`, {
        dispatcher: this.agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ac-api-key': apiKey },
        body: JSON.stringify({ data: { n, answer: n * 7 }, meta: { stream: 'faults' } }),
        signal: AbortSignal.timeout(clientTimeoutMs),
      });
      const text = await res.body.text();
      result.outcome = res.statusCode;
      if (res.statusCode === 200) result.submissionId = (JSON.parse(text) as { data: { id: string } }).data.id;
      else result.detail = text.slice(0, 300);
    } catch (error) {
      const e = error as Error;
      result.outcome = e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timeout' : 'error';
      result.detail = `${e.name}: ${e.message}`;
    }
    result.endedAt = Date.now();
    this.results.push(result);
  }
}
