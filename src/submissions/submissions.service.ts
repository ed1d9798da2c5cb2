import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { queryPrepared } from '../core/database/prepared.js';
import { ApiError } from '../core/http/api-error.js';
import { encodeCursor, type LogPosition } from '../core/http/log-cursor.js';
import { isCuid2, newId } from '../core/ids.js';
import { HostWakes } from '../delivery/host-wakes.js';
import { currentTraceCarrier, inSpan } from '../core/tracing/tracing.js';
import { maxAttemptsFor } from '../delivery/retry-schedule.js';
import { DeliveryStore } from '../delivery/store/delivery-store.js';
import type { SubmissionEntity } from './submission.entity.js';
import { assertFilter } from './submission-filter.js';
import { SUBMISSION_GET, SUBMISSIONS_PAGE } from './submission.statements.js';
import { FILTERED_PAGE_SCAN, type ListSubmissionsQuery } from './list-submissions.query.js';

/** A submission as the API shows it (no workspace: the caller's). */
type StoredSubmission = Omit<SubmissionEntity, 'workspaceId'>;

/** A row of SUBMISSIONS_PAGE: a matching submission (id null when none did) and how far the scan went. */
interface PageRow extends Omit<StoredSubmission, 'id'> {
  id: string | null;
  scanned: number;
  last_at: Date | null;
  last_id: string | null;
}

/** What the list reads: the query with its cursor decoded. */
type SubmissionsPageQuery = Omit<ListSubmissionsQuery, 'cursor'> & { after?: LogPosition };

export interface NewSubmission {
  data: Record<string, unknown>;
  finished?: boolean;
  meta?: Record<string, unknown>;
}

// jsonb refuses \u0000 and unpaired surrogates: the caller's mistake, so a 400 rather than a failed INSERT.
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const storableText = (text: string): boolean => !text.includes('\0') && !UNPAIRED_SURROGATE.test(text);

function storableAsJsonb(value: unknown): boolean {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.every(storableAsJsonb);
  if (value === null || typeof value !== 'object') return true;
  return Object.entries(value).every(([key, v]) => storableText(key) && storableAsJsonb(v));
}

function assertStorable(input: NewSubmission): void {
  for (const field of ['data', 'meta'] as const) {
    if (!storableAsJsonb(input[field])) {
      throw ApiError.invalidField(field, 'must not contain NUL characters (\\u0000) or unpaired surrogates');
    }
  }
}

/**
 * Where a page starts, newest first: after the cursor's position, and before `until` as (until, ''), which
 * comes before every submission created at `until` (no id is empty); the earlier of the two.
 */
function upperBound(after?: LogPosition, until?: Date): { createdAt: Date | 'infinity'; id: string } {
  if (until && (!after || until.getTime() <= after.createdAt.getTime())) return { createdAt: until, id: '' };
  return after ?? { createdAt: 'infinity', id: '' };
}

/** Where a page that found too few matches stopped looking, when it stopped for its scan limit. */
function lastLookedAt({ scanned, last_at, last_id }: PageRow, scan: number): LogPosition | undefined {
  if (scanned < scan || !last_at || !last_id) return undefined;
  return { createdAt: last_at, id: last_id };
}

// Calculators whose webhook count is remembered; past this the hints start over.
const BOUND_HINTS = 10_000;

@Injectable()
export class SubmissionsService {
  /**
   * The webhooks each calculator had at its last submission here: as many delivery ids are made for the
   * next one, so that it takes one round trip (making a CUID2 is not free, so ids are not made in excess).
   */
  private readonly boundHint = new Map<string, number>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly store: DeliveryStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly wakes: HostWakes,
  ) {}

  /** Records a submission and its deliveries atomically (one statement), then wakes their hosts. */
  async create(workspaceId: string, calculatorId: string, input: NewSubmission): Promise<SubmissionEntity> {
    // Only a CUID2 can be a calculator id; anything else (a NUL byte would make Postgres fail) is unknown.
    if (!isCuid2(calculatorId)) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    assertStorable(input);
    const now = new Date();
    const submission: SubmissionEntity = {
      id: newId(),
      workspaceId,
      calculatorId,
      finished: input.finished ?? true,
      data: input.data,
      meta: input.meta ?? {},
      createdAt: now,
      updatedAt: now,
    };
    // The span that writes the deliveries is where each of their attempts joins the request's trace: its
    // context is kept with them (the wake carries none).
    const result = await inSpan('delivery.outbox', { 'calculator.id': calculatorId }, async () => {
      const trace = currentTraceCarrier();
      const write = (deliveryIds: string[]) =>
        this.store.createForSubmission({
          submissionId: submission.id,
          calculatorId,
          workspaceId,
          at: now,
          finished: submission.finished,
          data: submission.data,
          meta: submission.meta,
          deliveryIds,
          trace,
          maxAttempts: {
            standard: maxAttemptsFor(this.config.retryScheduleMs),
            short: maxAttemptsFor(this.config.shortRetryScheduleMs),
          },
        });
      let ids = this.deliveryIds(this.boundHint.get(calculatorId) ?? 1);
      let written = await write(ids);
      while (written.bound > ids.length) {
        // Webhooks were bound since the last submission: again, with an id for each (nothing was written).
        ids = ids.concat(this.deliveryIds(written.bound - ids.length));
        written = await write(ids);
      }
      return written;
    });
    if (result.created === 0) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    // Only once the calculator proved the workspace's: another workspace's 404 must not reset its hint.
    this.remember(calculatorId, result.bound);
    await this.wakes.wake(result.hosts.map((host) => ({ host })));
    return submission;
  }

  /**
   * A page of the calculator's submissions, newest first (DESIGN 11). With a filter, the page is the
   * matching ones among the next FILTERED_PAGE_SCAN submissions, and the cursor resumes after the last one
   * looked at, so a filter that rarely matches never reads a whole calculator in one request.
   */
  async list(
    workspaceId: string,
    calculatorId: string,
    { since, until, filter, limit, after }: SubmissionsPageQuery,
  ): Promise<{ submissions: StoredSubmission[]; nextCursor: string | null }> {
    if (!isCuid2(calculatorId)) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    if (filter !== undefined) await assertFilter(this.dataSource, 'filter', filter);
    const scan = filter === undefined ? limit + 1 : FILTERED_PAGE_SCAN;
    const upper = upperBound(after, until);
    const rows = await queryPrepared<PageRow>(this.dataSource, SUBMISSIONS_PAGE, [
      calculatorId,
      workspaceId,
      upper.createdAt,
      upper.id,
      since ?? '-infinity',
      filter ?? null,
      scan,
      limit + 1,
    ]);
    if (rows.length === 0) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    const matched = rows.filter((r): r is PageRow & { id: string } => r.id !== null);
    const submissions = matched.slice(0, limit).map(({ scanned: _s, last_at: _a, last_id: _i, ...s }) => s);
    const position = matched.length > limit ? submissions.at(-1) : lastLookedAt(rows[0], scan);
    return { submissions, nextCursor: position ? encodeCursor(workspaceId, position) : null };
  }

  /** One submission of the workspace; another workspace's, or an unknown id: 404. */
  async get(workspaceId: string, id: string): Promise<StoredSubmission> {
    const [row] = isCuid2(id)
      ? await queryPrepared<StoredSubmission>(this.dataSource, SUBMISSION_GET, [id, workspaceId])
      : [];
    if (!row) throw ApiError.notFound(`Submission ${id} not found`);
    return row;
  }

  private deliveryIds(count: number): string[] {
    return Array.from({ length: count }, () => newId());
  }

  /** How many webhooks the calculator had at its last submission (a cache bounded in size, a hint only). */
  private remember(calculatorId: string, bound: number): void {
    if (this.boundHint.get(calculatorId) === bound) return;
    if (this.boundHint.size >= BOUND_HINTS) this.boundHint.clear();
    this.boundHint.set(calculatorId, bound);
  }
}
