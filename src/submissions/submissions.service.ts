import { Inject, Injectable } from '@nestjs/common';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { ApiError } from '../core/http/api-error.js';
import { isCuid2, newId } from '../core/ids.js';
import { HostWakes } from '../delivery/host-wakes.js';
import { currentTraceCarrier } from '../core/tracing/tracing.js';
import { maxAttemptsFor } from '../delivery/retry-schedule.js';
import { DeliveryStore } from '../delivery/store/delivery-store.js';
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
    let result = await write(ids);
    while (result.bound > ids.length) {
      // Webhooks were bound since the last submission: again, with an id for each (nothing was written).
      ids = ids.concat(this.deliveryIds(result.bound - ids.length));
      result = await write(ids);
    }
    if (result.created === 0) throw ApiError.notFound(`Calculator ${calculatorId} not found`);
    // Only once the calculator proved the workspace's: another workspace's 404 must not reset its hint.
    this.remember(calculatorId, result.bound);
    await this.wakes.wake(result.hosts.map((host) => ({ host })));
    return submission;
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
