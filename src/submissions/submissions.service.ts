import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { prepared, queryPrepared } from '../core/database/prepared.js';
import { ApiError } from '../core/http/api-error.js';
import { isCuid2, newId } from '../core/ids.js';
import { DeliveryQueue } from '../delivery/delivery-queue.js';
import { maxAttemptsFor } from '../delivery/retry-schedule.js';
import type { SubmissionEntity } from './submission.entity.js';

export interface NewSubmission {
  data: Record<string, unknown>;
  finished?: boolean;
  meta?: Record<string, unknown>;
}

// One statement, so one atomic write: bump the calculator's counters, insert the submission, and
// insert the outbox rows for webhooks still active at commit time. Nothing is written when the
// calculator is not the workspace's.
const INSERT_SUBMISSION_WITH_OUTBOX = prepared(
  'submission_insert_with_outbox',
  `
  WITH calc AS (
    UPDATE calculators SET submissions_count = submissions_count + 1, last_submission_at = $4
    WHERE id = $2 AND workspace_id = $3 AND removed_at IS NULL
    RETURNING id
  ), sub AS (
    INSERT INTO submissions (id, workspace_id, calculator_id, finished, data, meta, created_at, updated_at)
    SELECT $1, $3, calc.id, $5, $6, $7, $4, $4 FROM calc
    RETURNING id
  ), outbox AS (
    INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, status, max_attempts, next_attempt_at,
                            created_at, updated_at)
    SELECT d.id, $3, d.webhook_id, sub.id, 'pending', $10, $4, $4, $4
    FROM sub CROSS JOIN unnest($8::varchar[], $9::varchar[]) AS d(id, webhook_id)
    JOIN webhooks w ON w.id = d.webhook_id AND w.removed_at IS NULL
    RETURNING id
  )
  SELECT (SELECT count(*) FROM sub)::int AS created, ARRAY(SELECT id FROM outbox) AS delivery_ids`,
);

const BOUND_WEBHOOKS = prepared(
  'submission_bound_webhooks',
  `SELECT w.id, w.url FROM webhook_calculators wc
   JOIN webhooks w ON w.id = wc.webhook_id AND w.removed_at IS NULL AND w.workspace_id = $2
   JOIN webhook_triggers t ON t.webhook_id = w.id AND t.type = 'newSubmission'
   WHERE wc.calculator_id = $1`,
);

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

@Injectable()
export class SubmissionsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: DeliveryQueue,
  ) {}

  /** Records a submission and its deliveries atomically, then enqueues the deliveries. */
  async create(workspaceId: string, calculatorId: string, input: NewSubmission): Promise<SubmissionEntity> {
    // Only a CUID2 can be a calculator id; anything else (a NUL byte would make Postgres fail) is unknown.
    if (!isCuid2(calculatorId)) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    assertStorable(input);
    const webhooks = await queryPrepared<{ id: string; url: string }>(this.dataSource, BOUND_WEBHOOKS, [
      calculatorId,
      workspaceId,
    ]);
    const outbox = webhooks.map((w) => ({ deliveryId: newId(), url: w.url, workspaceId }));
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
    const [result] = await queryPrepared<{ created: number; delivery_ids: string[] }>(
      this.dataSource,
      INSERT_SUBMISSION_WITH_OUTBOX,
      [
        submission.id,
        calculatorId,
        workspaceId,
        now,
        submission.finished,
        JSON.stringify(submission.data),
        JSON.stringify(submission.meta),
        outbox.map((d) => d.deliveryId),
        webhooks.map((w) => w.id),
        maxAttemptsFor(this.config.retryScheduleMs),
      ],
    );
    if (result.created === 0) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    const committed = new Set(result.delivery_ids);
    await this.queue.enqueue(outbox.filter((d) => committed.has(d.deliveryId)));
    return submission;
  }
}
