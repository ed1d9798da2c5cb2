import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { queryPrepared } from '../core/database/prepared.js';
import { SUBMISSION_BOUND_WEBHOOKS, SUBMISSION_WITH_OUTBOX } from '../core/database/statements.js';
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
    const webhooks = await queryPrepared<{ id: string; url: string }>(this.dataSource, SUBMISSION_BOUND_WEBHOOKS, [
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
      SUBMISSION_WITH_OUTBOX,
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
